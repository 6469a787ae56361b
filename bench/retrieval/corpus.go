package main

// The bench's texts, generated deterministically from a seed: made-up names
// from syllables, sentences from word lists. Nothing here is real-world
// data; bench/README.md says so where the numbers are.

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

var syllables = strings.Fields(`ba bel cor da dre el fa gor ha ix ja ka lo mar nu ob pa qui ra sel
	tor ul va wen xa yo za brin cal dun fen gal hul ish jor kev lum mor nal ost pim quor rud sav
	tam ulv vin wyn zor eth ira ova uma`)

// names returns n distinct capitalised made-up names of two or three
// syllables.
func names(r *rand.Rand, n int) []string {
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		k := 2 + r.IntN(2)
		var b strings.Builder
		for range k {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		s := b.String()
		if seen[s] || len(s) < 5 {
			continue
		}
		seen[s] = true
		out = append(out, strings.ToUpper(s[:1])+s[1:])
	}
	return out
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// Word lists for the latency corpus and the ingestion documents.
var (
	nouns = strings.Fields(`engine harbour lantern bridge river orchard ledger compass violin
		tower garden market ship anchor furnace kettle mirror window ladder wagon barrel clock
		cellar forge mill quarry meadow canal archive telescope loom bakery chapel fountain
		vineyard glacier canyon lagoon beacon rope sail map coin scroll manuscript tapestry
		statue mosaic pottery harvest festival storm drought flood tide comet eclipse orbit
		railway tunnel station ferry lighthouse monastery observatory library mine shipyard
		warehouse tavern school hospital garrison fortress citadel harness saddle plough sickle
		hammer anvil chisel needle thread dye ink parchment candle wick lamp oil coal timber`)
	verbs = strings.Fields(`repaired painted sold bought carried measured buried discovered
		rebuilt guarded mapped recorded sealed opened polished weighed traded counted inspected
		restored borrowed returned stole hid carved forged planted harvested launched anchored
		lit extinguished climbed crossed flooded drained surveyed catalogued translated copied`)
	adjs = strings.Fields(`old new broken golden silver copper wooden iron stone crimson
		purple green frozen burning hidden ancient narrow wide heavy light quiet noisy bright
		dark hollow sunken floating northern southern eastern western tiny enormous rusty
		polished crooked sacred forgotten famous secret`)
	preps = strings.Fields(`near beside behind under above across beyond inside outside past`)
)

// sentence is one short generated sentence (about 20 tokens for MiniLM).
func sentence(r *rand.Rand, people, towns []string) string {
	s := fmt.Sprintf("%s of %s %s the %s %s %s the %s in %d.", pick(r, people), pick(r, towns),
		pick(r, verbs), pick(r, adjs), pick(r, nouns), pick(r, preps), pick(r, nouns), 1500+r.IntN(500))
	return s
}

// longSentence is a sentence of prose for the ingestion documents.
func longSentence(r *rand.Rand, people, towns []string) string {
	return fmt.Sprintf("In %d, %s of %s %s the %s %s %s the %s, and the %s %s %s it for the %s %s of %s.",
		1500+r.IntN(500), pick(r, people), pick(r, towns), pick(r, verbs), pick(r, adjs), pick(r, nouns),
		pick(r, preps), pick(r, nouns), pick(r, nouns), pick(r, people), pick(r, verbs), pick(r, adjs),
		pick(r, nouns), pick(r, towns))
}

// query is a latency-set query: a short question or a few keywords, as
// users type them; some carry common words ("the", "of"), which keyword
// search must then match in nearly every chunk.
func query(r *rand.Rand, people, towns []string) string {
	switch r.IntN(5) {
	case 0:
		return fmt.Sprintf("What did %s %s near the %s?", pick(r, people), pick(r, verbs), pick(r, nouns))
	case 1:
		return fmt.Sprintf("%s %s in %s", pick(r, adjs), pick(r, nouns), pick(r, towns))
	case 2:
		return fmt.Sprintf("who %s the %s %s in %d", pick(r, verbs), pick(r, adjs), pick(r, nouns), 1500+r.IntN(500))
	case 3:
		return fmt.Sprintf("%s %s", pick(r, people), pick(r, nouns))
	default:
		return fmt.Sprintf("the history of the %s of %s", pick(r, nouns), pick(r, towns))
	}
}

// latencyDoc is a document of n lines, each a sentence; the latency corpus
// splits it one chunk per line.
func latencyDoc(r *rand.Rand, n int, people, towns []string) string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = sentence(r, people, towns)
	}
	return strings.Join(lines, "\n")
}

// proseDoc is a document of paragraphs of prose of about size bytes, for
// the ingestion measurement with the server's own chunker.
func proseDoc(r *rand.Rand, size int, people, towns []string) string {
	var b strings.Builder
	for b.Len() < size {
		for range 3 + r.IntN(4) {
			b.WriteString(longSentence(r, people, towns))
			b.WriteByte(' ')
		}
		b.WriteString("\n\n")
	}
	return strings.TrimSpace(b.String())
}

// The labelled quality set. Every document describes one made-up place
// with the same template: a kind, a town, a founder and year, and four
// attributes. Each kind and attribute has a document wording and a
// paraphrase that shares (almost) no content word with it, so that a query
// in paraphrase can only be matched by meaning.
type phrase struct{ doc, para string }

var (
	kinds = []phrase{
		{"lighthouse", "beacon tower on the coast"},
		{"bridge", "crossing over the water"},
		{"observatory", "place for watching the stars"},
		{"bakery", "shop that sells bread"},
		{"monastery", "home of monks"},
		{"library", "building full of books"},
		{"mine", "underground dig site"},
		{"shipyard", "dock where boats are built"},
		{"railway station", "stop for trains"},
		{"market hall", "covered bazaar"},
	}
	energy = []phrase{
		{"Its lamps burn whale oil", "is lit with blubber fuel from sea mammals"},
		{"Its machines run on steam from a coal boiler", "has machinery driven by vapour from a furnace"},
		{"A water wheel in the river turns its machines", "is driven by a paddle mechanism in a stream"},
		{"Solar panels on the roof supply its electricity", "harvests sunlight with plates up top"},
		{"It uses no power at all; everything is done by hand", "is entirely manual with no energy source"},
		{"A windmill beside it drives the machines", "has equipment driven by sails turning in the breeze"},
		{"Candles made of beeswax provide its light", "is illuminated by wax tapers from hives"},
		{"A geothermal vent under the floor heats it", "is warmed by volcanic heat from below ground"},
	}
	animals = []phrase{
		{"A grey cat sleeps on the front steps", "has a feline dozing at its entrance"},
		{"Goats graze on its roof every summer", "has horned livestock feeding on top during the warm months"},
		{"Owls nest in its tower", "houses nocturnal birds of prey up high"},
		{"A tame fox guards the gate", "is watched over by a domesticated vixen"},
		{"Bees keep hives inside its walls", "has honey insects living in the masonry"},
		{"A parrot greets every visitor by name", "has a talking bird that welcomes guests"},
		{"Swans swim in the moat around it", "is ringed by a ditch with long-necked white waterfowl"},
		{"A donkey carries supplies up to the door", "relies on a small mule hauling provisions"},
	}
	looks = []phrase{
		{"The walls are painted bright yellow", "has a facade coloured like a lemon"},
		{"It is built entirely of black basalt", "is constructed from dark volcanic rock"},
		{"Its roof is covered in copper that has turned green", "has verdigris metal roofing"},
		{"The building is made of pink sandstone", "is made of rosy sedimentary stone"},
		{"Every window is made of blue glass", "has azure panes"},
		{"The doors are carved from ancient oak", "has entrances of old hardwood timber"},
		{"Its floors are tiled with white marble", "has pale polished stone flooring"},
		{"The outer walls are covered in ivy", "is clad with climbing vines"},
	}
	customs = []phrase{
		{"Every winter the townspeople hold a lantern parade there", "sees residents march carrying lights during the cold season"},
		{"A bell rings exactly thirteen times at noon", "chimes 13 at midday"},
		{"Visitors must remove their shoes before entering", "asks guests to go barefoot inside"},
		{"Once a year it hosts a chess tournament", "holds an annual board game competition with kings and pawns"},
		{"Musicians play the violin on its steps every Sunday", "has weekly string performances on the stairs"},
		{"A free soup is served to travellers at dusk", "gives complimentary broth to wanderers in the evening"},
		{"Children plant a tree beside it each spring", "has youngsters setting saplings in the ground when blossoms come"},
		{"Its clock runs five minutes fast on purpose", "keeps a timepiece deliberately ahead"},
	}
	attrLists = [][]phrase{energy, animals, looks, customs}
)

// qdoc is a quality-set document.
type qdoc struct {
	title, text         string
	name, town, founder string
	year                int
	kind                int
	attrs               [4]int // index into each of attrLists
	docID               string // filled at ingestion
}

// qquery is a labelled query: its class and the index of its one
// relevant document.
type qquery struct {
	text, class string
	doc         int
}

// Query classes of the quality set.
const (
	classParaphrase = "paraphrase" // meaning only: vector search should win
	classKeyword    = "keyword"    // a rare made-up name: keyword search should win
	classMixed      = "mixed"      // a town (shared by a few documents) plus a paraphrase: needs both
)

// qualitySet builds ndocs documents and nq queries (a third of each
// class), each query with exactly one document that answers it.
func qualitySet(seed uint64, ndocs, nq int) ([]qdoc, []qquery) {
	r := rand.New(rand.NewPCG(seed, 0x9a11))
	placeNames := names(r, ndocs)
	founders := names(r, max(ndocs/3, 1))
	towns := names(r, max(ndocs/8, 1))
	docs := make([]qdoc, ndocs)
	seen := map[string]bool{}
	for i := range docs {
		d := qdoc{name: placeNames[i], town: pick(r, towns), founder: pick(r, founders) + " " + pick(r, founders),
			year: 1600 + r.IntN(400), kind: r.IntN(len(kinds))}
		for {
			for a := range d.attrs {
				d.attrs[a] = r.IntN(len(attrLists[a]))
			}
			key := fmt.Sprint(d.kind, d.attrs)
			if !seen[key] {
				seen[key] = true
				break
			}
		}
		d.title = d.name
		d.text = fmt.Sprintf("%s is a %s in the town of %s. It was founded in %d by %s. %s. %s. %s. %s.",
			d.name, kinds[d.kind].doc, d.town, d.year, d.founder,
			energy[d.attrs[0]].doc, animals[d.attrs[1]].doc, looks[d.attrs[2]].doc, customs[d.attrs[3]].doc)
		docs[i] = d
	}
	// unique reports whether only document i has these attribute values
	// (and kind, and town, when asked).
	unique := func(i int, byTown bool, as ...int) bool {
		for j, o := range docs {
			if j == i || o.kind != docs[i].kind || byTown && o.town != docs[i].town {
				continue
			}
			same := true
			for _, a := range as {
				same = same && o.attrs[a] == docs[i].attrs[a]
			}
			if same {
				return false
			}
		}
		return true
	}
	var qs []qquery
	order := r.Perm(ndocs)
	classes := []string{classParaphrase, classKeyword, classMixed}
	for _, i := range order {
		if len(qs) >= nq {
			break
		}
		d := docs[i]
		class := classes[len(qs)%3]
		switch class {
		case classParaphrase:
			a, b := r.IntN(4), r.IntN(4)
			for b == a {
				b = r.IntN(4)
			}
			if !unique(i, false, a, b) {
				continue
			}
			qs = append(qs, qquery{class: class, doc: i, text: fmt.Sprintf("Which %s %s and %s?",
				kinds[d.kind].para, attrLists[a][d.attrs[a]].para, attrLists[b][d.attrs[b]].para)})
		case classKeyword:
			var t string
			switch r.IntN(3) {
			case 0:
				t = fmt.Sprintf("When was %s founded by %s?", d.name, d.founder)
			case 1:
				t = fmt.Sprintf("%s %s founder", d.name, d.town)
			default:
				t = fmt.Sprintf("%s %s", d.founder, d.name)
			}
			qs = append(qs, qquery{class: class, doc: i, text: t})
		case classMixed:
			a := r.IntN(4)
			if !unique(i, true, a) {
				continue
			}
			qs = append(qs, qquery{class: class, doc: i, text: fmt.Sprintf("the %s in %s that %s",
				kinds[d.kind].para, d.town, attrLists[a][d.attrs[a]].para)})
		}
	}
	return docs, qs
}
