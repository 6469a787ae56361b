// Command answers is the answers-with-sources benchmark: is an answer with
// sources worth having? It asks a labelled set of questions about
// fictional documents (bench/answers/testdata) of two pipelines, side by
// side, with the same model:
//
//   - sovereign: POST /v1/completions with messages and "citations": true
//     over the team's "default" collection, as docs/sources.md shows;
//   - baseline: llama.cpp's llama-server with the same GGUF, given the same
//     chunks (Sovereign's POST /v1/collections/{id}/search with the same
//     query and top_k) in the classic prompt that asks for [n] after each
//     sentence, its markers parsed into citations.
//
// It starts both servers itself (Sovereign on a fresh SQLite data dir),
// uploads the documents one per request, asks every question of both
// (one at a time, alternating which pipeline goes first), scores both the
// same way (score.go), prints a Markdown table (also -out/answers.md) and
// writes every answer to -out/answers-detail.jsonl. bench/answers/run.sh
// builds llama-server and runs it; bench/README.md explains each figure.
// The exit status is 1 when a target is missed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sovereign-ai/sovereign/internal/openai"
)

// topK is how many chunks an answer draws on: answers.DefaultTopK, what
// POST /v1/completions with citations searches for when the request names
// no sources.
const topK = 5

// baselinePrompt is the classic instruction the baseline gets, before its
// numbered sources.
const baselinePrompt = "Answer the question using the sources below. After each sentence that uses a source, write its number in square brackets, like [1]. If the sources do not contain the answer, say you don't know."

type config struct {
	bin, modelsDir, model, gguf, llamaServer, data, out, label string
	threads, slots, ctx, limit, maxTokens                      int
	only                                                       string
	readyTimeout, answerTimeout                                time.Duration
}

func main() {
	repo := repoRoot()
	c := &config{}
	flag.StringVar(&c.bin, "bin", filepath.Join(repo, "bin", "sovereign"), "Sovereign binary")
	flag.StringVar(&c.modelsDir, "models-dir", filepath.Join(repo, "data", "models"), "model store (<dir>/<id>/model.gguf): the chat model and all-minilm-l6-v2")
	flag.StringVar(&c.model, "model", "default", "chat model id or alias on Sovereign (also llama-server's alias)")
	flag.StringVar(&c.gguf, "gguf", "", "GGUF for llama-server (default: the model's, or the aliased model's, in -models-dir)")
	flag.StringVar(&c.llamaServer, "llama-server", "", "llama-server binary for the baseline (empty: Sovereign alone)")
	flag.StringVar(&c.data, "data", filepath.Join(repo, "bench", "answers", "testdata"), "the labelled set (documents.json, questions.json)")
	flag.StringVar(&c.out, "out", filepath.Join(repo, "bench", "out"), "where answers.md, answers-detail.jsonl and the server logs go")
	flag.StringVar(&c.label, "label", "", "what was measured, for the report (e.g. the commit)")
	flag.IntVar(&c.threads, "threads", runtime.NumCPU(), "CPU threads of each server")
	flag.IntVar(&c.slots, "slots", 4, "parallel sequences of each server")
	flag.IntVar(&c.ctx, "ctx", 4096, "context tokens per sequence, each server")
	flag.IntVar(&c.limit, "limit", 0, "ask only this many questions, spread evenly over the set (0: all)")
	flag.StringVar(&c.only, "only", "", "ask only these questions or kinds, comma-separated (q62,q63 or two-doc)")
	flag.IntVar(&c.maxTokens, "max-tokens", 512, "max_tokens of every request, both pipelines: ends a loop early (it still counts as one); 0: not sent, as in docs/sources.md")
	flag.DurationVar(&c.readyTimeout, "ready-timeout", 3*time.Minute, "how long a server may take to start")
	flag.DurationVar(&c.answerTimeout, "answer-timeout", 10*time.Minute, "how long one answer may take")
	rescoreFile := flag.String("rescore", "", "score the answers of an earlier run's answers-detail.jsonl again (no servers), e.g. after a scoring change")
	flag.Parse()
	if *rescoreFile != "" {
		md, pass, err := rescore(c, *rescoreFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "answers:", err)
			os.Exit(2)
		}
		fmt.Print(md)
		if !pass {
			os.Exit(1)
		}
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pass, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "answers:", err)
		os.Exit(2)
	}
	if !pass {
		os.Exit(1)
	}
}

func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "answers: "+format+"\n", a...)
}

// hit is one retrieved chunk.
type hit struct {
	ChunkID    string  `json:"chunk_id"`
	DocumentID string  `json:"document_id"`
	Title      string  `json:"title"`
	Text       string  `json:"text"`
	Score      float64 `json:"score"`
}

// citation is one cited span of an answer and the documents it names.
type citation struct {
	Text    string   `json:"text"`
	Numbers []int    `json:"numbers"`
	Docs    []string `json:"docs"` // the set's document ids
}

// result is one pipeline's answer to one question, with its scores.
type result struct {
	Pipeline    string     `json:"pipeline"`
	QID         string     `json:"qid"`
	Kind        string     `json:"kind"`
	Question    string     `json:"question"`
	GoldDocs    []string   `json:"gold_docs"`
	GoldAnswers []string   `json:"gold_answers"`
	Retrieved   []string   `json:"retrieved"` // the set's ids of the top_k chunks' documents, best first
	Answer      string     `json:"answer"`
	Finish      string     `json:"finish_reason"`
	Citations   []citation `json:"citations"`
	// InvalidMarkers counts marker numbers that name no source (the
	// baseline's; Sovereign removes them before the client sees them).
	InvalidMarkers   int        `json:"invalid_markers,omitempty"`
	Unsupported      []string   `json:"unsupported,omitempty"`
	Sentences        []sentence `json:"sentences"`
	PromptTokens     int        `json:"prompt_tokens"`
	CompletionTokens int        `json:"completion_tokens"`
	Seconds          float64    `json:"seconds"`
	SearchSeconds    float64    `json:"search_seconds,omitempty"` // the baseline's retrieval, part of Seconds
	Error            string     `json:"error,omitempty"`

	Correct         bool `json:"correct"`
	Cited           bool `json:"cited"`
	CitedSources    int  `json:"cited_sources"`
	RightSources    int  `json:"right_sources"`
	SentenceCount   int  `json:"sentence_count"`
	MarkedSentences int  `json:"marked_sentences"`
	Abstained       bool `json:"abstained"`
	Loop            bool `json:"loop"`
	// LeadingMarker: the answer starts with a marker ("[1] 1872"), which
	// follows no sentence and so cites nothing; reported, not scored.
	LeadingMarker bool `json:"leading_marker,omitempty"`
}

// bench holds a run's servers and the set's documents on Sovereign.
type bench struct {
	c        *config
	sov      *client
	base     *client
	colID    string
	docOf    map[string]string // Sovereign's document id -> the set's id
	sovModel string
}

func run(ctx context.Context, c *config) (bool, error) {
	docs, qs, err := loadSet(c.data)
	if err != nil {
		return false, err
	}
	qs = subset(only(qs, c.only), c.limit)
	if len(qs) == 0 {
		return false, fmt.Errorf("-only %q names no question of the set", c.only)
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return false, err
	}
	for _, p := range []*string{&c.bin, &c.modelsDir, &c.out, &c.llamaServer, &c.gguf} {
		if *p != "" {
			*p, _ = filepath.Abs(*p)
		}
	}
	baseline := c.llamaServer != ""
	if c.label == "" {
		c.label = sovereignVersion(c.bin)
	}
	if baseline && c.gguf == "" {
		if c.gguf, err = resolveGGUF(c.modelsDir, c.model); err != nil {
			return false, err
		}
	}

	dataDir, err := os.MkdirTemp("", "sovereign-answers-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dataDir)
	key := randomKey()
	logf("starting %s serve (models %s, data %s)", c.bin, c.modelsDir, dataDir)
	sov, err := startSovereign(ctx, c, dataDir, key)
	if err != nil {
		return false, err
	}
	defer sov.stop()
	b := &bench{c: c, sov: &client{base: sov.url, key: key, http: &http.Client{Timeout: c.answerTimeout}}, docOf: map[string]string{}, sovModel: c.model}
	if err := b.ingest(ctx, docs); err != nil {
		return false, err
	}
	if baseline {
		logf("starting llama-server %s (model %s)", c.llamaServer, c.gguf)
		ls, err := startLlamaServer(ctx, c)
		if err != nil {
			return false, err
		}
		defer ls.stop()
		b.base = &client{base: ls.url, http: &http.Client{Timeout: c.answerTimeout}}
	}

	// Warm-up, not scored: the chat model is loaded on first use.
	logf("warming up")
	warm := question{ID: "warm-up", Kind: kindUnanswerable, Question: "Which towns lie on the Kessarin Reach?"}
	hits, _, err := b.search(ctx, warm.Question)
	if err != nil {
		return false, err
	}
	if r := b.askSovereign(ctx, warm, hits); r.Error != "" {
		return false, errors.New("warm-up on Sovereign: " + r.Error)
	}
	if baseline {
		if r := b.askBaseline(ctx, warm, hits, 0); r.Error != "" {
			return false, errors.New("warm-up on llama-server: " + r.Error)
		}
	}

	t0 := time.Now()
	var sovRes, baseRes []result
	for i, q := range qs {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		hits, searchDur, err := b.search(ctx, q.Question)
		if err != nil {
			return false, fmt.Errorf("%s: search: %w", q.ID, err)
		}
		var rs, rb result
		// Alternate which pipeline goes first, so that neither always
		// runs right after the other.
		if i%2 == 0 {
			rs = b.askSovereign(ctx, q, hits)
			if baseline {
				rb = b.askBaseline(ctx, q, hits, searchDur)
			}
		} else {
			if baseline {
				rb = b.askBaseline(ctx, q, hits, searchDur)
			}
			rs = b.askSovereign(ctx, q, hits)
		}
		sovRes = append(sovRes, rs)
		line := fmt.Sprintf("question %d of %d (%s, %s): sovereign %s", i+1, len(qs), q.ID, q.Kind, brief(rs))
		if baseline {
			baseRes = append(baseRes, rb)
			line += "; baseline " + brief(rb)
		}
		logf("%s", line)
	}
	elapsed := time.Since(t0)

	if err := writeDetail(filepath.Join(c.out, "answers-detail.jsonl"), sovRes, baseRes); err != nil {
		return false, err
	}
	md, pass := report(c, len(qs), sovRes, baseRes, elapsed)
	fmt.Print(md)
	if err := os.WriteFile(filepath.Join(c.out, "answers.md"), []byte(md), 0o644); err != nil {
		return false, err
	}
	return pass, nil
}

func brief(r result) string {
	if r.Error != "" {
		return "ERROR " + truncate(r.Error, 80)
	}
	var tags []string
	switch {
	case r.Kind == kindUnanswerable && r.Abstained:
		tags = append(tags, "abstained")
	case r.Kind == kindUnanswerable:
		tags = append(tags, "answered")
	case r.Correct:
		tags = append(tags, "correct")
	default:
		tags = append(tags, "wrong")
	}
	tags = append(tags, fmt.Sprintf("%d/%d cited right", r.RightSources, r.CitedSources))
	if r.Loop {
		tags = append(tags, "LOOP")
	}
	return fmt.Sprintf("%.1fs %s", r.Seconds, strings.Join(tags, ", "))
}

// ingest creates the default collection and uploads every document, one
// per request, then waits until all are ready.
func (b *bench) ingest(ctx context.Context, docs []document) error {
	var col struct {
		ID string `json:"id"`
	}
	if err := b.sov.do(ctx, "POST", "/v1/collections", map[string]any{"name": "default"}, &col); err != nil {
		return fmt.Errorf("creating the default collection: %w", err)
	}
	b.colID = col.ID
	t0 := time.Now()
	ids := map[string]string{} // the set's id -> Sovereign's
	for _, d := range docs {
		var doc struct {
			ID string `json:"id"`
		}
		err := b.sov.do(ctx, "POST", "/v1/collections/"+col.ID+"/documents",
			map[string]any{"title": d.Title, "text": d.Text, "metadata": map[string]string{"bench_id": d.ID}}, &doc)
		if err != nil {
			return fmt.Errorf("uploading %s: %w", d.ID, err)
		}
		ids[d.ID] = doc.ID
		b.docOf[doc.ID] = d.ID
	}
	for _, d := range docs {
		for {
			var st struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			if err := b.sov.do(ctx, "GET", "/v1/collections/"+col.ID+"/documents/"+ids[d.ID], nil, &st); err != nil {
				return err
			}
			if st.Status == "ready" {
				break
			}
			if st.Status == "failed" {
				return fmt.Errorf("document %s failed: %s", d.ID, st.Error)
			}
			if time.Since(t0) > 10*time.Minute {
				return fmt.Errorf("document %s still %s after 10 minutes", d.ID, st.Status)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	logf("%d documents uploaded and ready in %.1fs", len(docs), time.Since(t0).Seconds())
	return nil
}

// search asks Sovereign's search route for the chunks an answer to q
// draws on: the same query, top_k and (default, hybrid) mode as
// POST /v1/completions with citations.
func (b *bench) search(ctx context.Context, q string) ([]hit, time.Duration, error) {
	var resp struct {
		Data []hit `json:"data"`
	}
	t0 := time.Now()
	err := b.sov.do(ctx, "POST", "/v1/collections/"+b.colID+"/search", map[string]any{"query": q, "top_k": topK}, &resp)
	return resp.Data, time.Since(t0), err
}

func (b *bench) retrieved(hits []hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, b.docOf[h.DocumentID])
	}
	return out
}

func newResult(pipeline string, q question, retrieved []string) result {
	return result{Pipeline: pipeline, QID: q.ID, Kind: q.Kind, Question: q.Question, GoldDocs: q.GoldDocs, GoldAnswers: q.Answers, Retrieved: retrieved}
}

// chatReply is a chat completion as both pipelines get it (the server's
// own response type).
type chatReply struct{ openai.ChatCompletion }

// read puts the reply's answer, finish reason and usage into r, or the
// request's error (also a reply without choices), which it returns.
func (c *chatReply) read(r *result, err error) error {
	if err == nil && len(c.Choices) == 0 {
		err = errors.New("no choices in the response")
	}
	if err != nil {
		r.Error = err.Error()
		return err
	}
	r.Answer = c.Choices[0].Message.Content
	r.Finish = c.Choices[0].FinishReason
	if c.Usage != nil {
		r.PromptTokens, r.CompletionTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	return nil
}

// askSovereign asks q through POST /v1/completions with citations, the
// request docs/sources.md shows.
func (b *bench) askSovereign(ctx context.Context, q question, hits []hit) result {
	r := newResult("sovereign", q, b.retrieved(hits))
	body := map[string]any{"model": b.sovModel, "messages": []map[string]string{{"role": "user", "content": q.Question}},
		"citations": true, "temperature": 0}
	if b.c.maxTokens > 0 {
		body["max_tokens"] = b.c.maxTokens
	}
	var resp struct {
		chatReply
		Citations []struct {
			Text    string `json:"text"`
			Sources []struct {
				DocumentID string `json:"document_id"`
				Number     int    `json:"number"`
			} `json:"sources"`
		} `json:"citations"`
		Unsupported []struct {
			Text string `json:"text"`
		} `json:"unsupported"`
	}
	t0 := time.Now()
	err := b.sov.do(ctx, "POST", "/v1/completions", body, &resp)
	r.Seconds = time.Since(t0).Seconds()
	if err = resp.read(&r, err); err != nil {
		score(&r, len(hits), q)
		return r
	}
	for _, ci := range resp.Citations {
		cc := citation{Text: ci.Text}
		for _, s := range ci.Sources {
			cc.Numbers = append(cc.Numbers, s.Number)
			id := b.docOf[s.DocumentID]
			if id == "" {
				id = s.DocumentID
			}
			cc.Docs = append(cc.Docs, id)
		}
		r.Citations = append(r.Citations, cc)
	}
	for _, u := range resp.Unsupported {
		r.Unsupported = append(r.Unsupported, u.Text)
	}
	score(&r, len(hits), q)
	return r
}

// baselineMessages is the classic prompt: the instruction and the numbered
// sources ("[n] Title\ntext") as the system message, the question as the
// user message.
func baselineMessages(q string, hits []hit) []map[string]string {
	var sb strings.Builder
	sb.WriteString(baselinePrompt)
	for i, h := range hits {
		fmt.Fprintf(&sb, "\n\n[%d] %s\n%s", i+1, h.Title, strings.TrimSpace(h.Text))
	}
	return []map[string]string{{"role": "system", "content": sb.String()}, {"role": "user", "content": q}}
}

// askBaseline asks llama-server with the classic prompt over the chunks
// Sovereign's search found, and reads its [n] markers as citations. Its
// time includes that search.
func (b *bench) askBaseline(ctx context.Context, q question, hits []hit, searchDur time.Duration) result {
	r := newResult("baseline", q, b.retrieved(hits))
	body := map[string]any{"model": b.c.model, "messages": baselineMessages(q.Question, hits), "temperature": 0}
	if b.c.maxTokens > 0 {
		body["max_tokens"] = b.c.maxTokens
	}
	var resp chatReply
	t0 := time.Now()
	err := b.base.do(ctx, "POST", "/v1/chat/completions", body, &resp)
	r.Seconds = (time.Since(t0) + searchDur).Seconds()
	r.SearchSeconds = searchDur.Seconds()
	if err = resp.read(&r, err); err != nil {
		score(&r, len(hits), q)
		return r
	}
	r.Citations, r.InvalidMarkers = markerCitations(splitSentences(r.Answer), r.Retrieved)
	score(&r, len(hits), q)
	return r
}

// markerCitations reads an answer's markers as citations: a marker cites
// the sentence it follows, and source n is the document of the n-th chunk
// retrieved; a number that names no source is dropped (as Sovereign drops
// it) and counted.
func markerCitations(sents []sentence, retrieved []string) (cits []citation, invalid int) {
	for _, s := range sents {
		for _, m := range s.Markers {
			cc := citation{Text: s.Text}
			for _, n := range m {
				if n < 1 || n > len(retrieved) {
					invalid++
					continue
				}
				if slices.Contains(cc.Numbers, n) {
					continue
				}
				cc.Numbers = append(cc.Numbers, n)
				cc.Docs = append(cc.Docs, retrieved[n-1])
			}
			if len(cc.Numbers) > 0 {
				cits = append(cits, cc)
			}
		}
	}
	return cits, invalid
}

// score applies the rules of score.go to one answer; nSources is how many
// sources it was given (a marker's number must name one).
func score(r *result, nSources int, q question) { scoreWith(r, nSources, q, splitSentences) }

func scoreWith(r *result, nSources int, q question, split func(string) []sentence) {
	r.Sentences = split(r.Answer)
	r.SentenceCount, r.MarkedSentences, r.CitedSources, r.RightSources = 0, 0, 0, 0
	for _, s := range r.Sentences {
		r.SentenceCount++
		marked := false
		for _, m := range s.Markers {
			for _, n := range m {
				if n >= 1 && n <= nSources {
					marked = true
				}
			}
		}
		if marked {
			r.MarkedSentences++
		}
	}
	r.Cited = len(r.Citations) > 0
	for _, c := range r.Citations {
		for _, d := range c.Docs {
			r.CitedSources++
			if slices.Contains(q.GoldDocs, d) {
				r.RightSources++
			}
		}
	}
	r.Correct = q.answerable() && containsGold(r.Answer, q.Answers)
	r.Abstained = abstains(r.Answer) && !r.Cited
	r.Loop = loops(r.Answer, r.Finish)
	loc := markerRe.FindStringIndex(strings.TrimSpace(r.Answer))
	r.LeadingMarker = loc != nil && loc[0] == 0
}

func writeDetail(path string, lists ...[]result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range lists {
		for _, r := range l {
			if err := enc.Encode(r); err != nil {
				f.Close()
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// figures are one pipeline's aggregate scores.
type figures struct {
	answerable, unanswerable, one, two                     int
	correct, cited, cites, right, sents, marked, abstained int
	oneCorrect, twoCorrect, loops, errors, overAbstained   int
	completionTokens, leading                              int
	p50, p95                                               float64
	n                                                      int
}

func aggregate(rs []result) figures {
	var f figures
	var secs []float64
	for _, r := range rs {
		f.n++
		secs = append(secs, r.Seconds)
		f.completionTokens += r.CompletionTokens
		if r.Error != "" {
			f.errors++
		}
		if r.Loop {
			f.loops++
		}
		if r.LeadingMarker {
			f.leading++
		}
		if r.Kind == kindUnanswerable {
			f.unanswerable++
			if r.Abstained {
				f.abstained++
			}
			continue
		}
		f.answerable++
		if r.Correct {
			f.correct++
		}
		if r.Cited {
			f.cited++
		}
		if r.Abstained {
			f.overAbstained++
		}
		f.cites += r.CitedSources
		f.right += r.RightSources
		f.sents += r.SentenceCount
		f.marked += r.MarkedSentences
		switch r.Kind {
		case kindOne:
			f.one++
			if r.Correct {
				f.oneCorrect++
			}
		case kindTwo:
			f.two++
			if r.Correct {
				f.twoCorrect++
			}
		}
	}
	f.p50, f.p95 = percentile(secs, 50), percentile(secs, 95)
	return f
}

// percentile is the nearest-rank percentile.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func (f figures) rates() (correct, cited, precision, recall, abstention float64) {
	return ratio(f.correct, f.answerable), ratio(f.cited, f.answerable), ratio(f.right, f.cites), ratio(f.marked, f.sents), ratio(f.abstained, f.unanswerable)
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

func times(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// report renders the tables and checks the targets.
func report(c *config, nq int, sov, base []result, elapsed time.Duration) (string, bool) {
	var b strings.Builder
	fs := aggregate(sov)
	var fb figures
	baseline := len(base) > 0
	if baseline {
		fb = aggregate(base)
	}
	fmt.Fprintf(&b, "## Answers with sources: %s", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	if c.label != "" {
		fmt.Fprintf(&b, ", %s", c.label)
	}
	fmt.Fprintf(&b, "\n\nModel `%s`", c.model)
	if baseline && c.gguf != "" {
		fmt.Fprintf(&b, " (baseline: llama-server on `%s`)", c.gguf)
	}
	fmt.Fprintf(&b, "; %d questions (%d one-doc, %d two-doc, %d unanswerable); top_k %d; max_tokens %d",
		nq, fs.one, fs.two, fs.unanswerable, topK, c.maxTokens)
	if elapsed > 0 {
		fmt.Fprintf(&b, "; %d threads, %d slots, %d tokens of context per slot; %s for the questions", c.threads, c.slots, c.ctx, elapsed.Round(time.Second))
	}
	b.WriteString(".\n\n")

	b.WriteString("| pipeline | correct | cited | citation precision | citation recall | abstention | loops | p50 s | p95 s | one-doc correct | two-doc correct | abstained on answerable | output tokens/answer | errors |\n")
	b.WriteString("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n")
	row := func(name string, f figures) {
		co, ci, pr, re, ab := f.rates()
		fmt.Fprintf(&b, "| %s | %s | %s | %s (%d/%d) | %s (%d/%d) | %s | %d | %.2f | %.2f | %s | %s | %d | %.0f | %d |\n",
			name, num(co), num(ci), num(pr), f.right, f.cites, num(re), f.marked, f.sents, num(ab), f.loops, f.p50, f.p95,
			num(ratio(f.oneCorrect, f.one)), num(ratio(f.twoCorrect, f.two)), f.overAbstained, float64(f.completionTokens)/math.Max(1, float64(f.n)), f.errors)
	}
	row("sovereign", fs)
	if baseline {
		row("baseline (llama-server, classic prompt)", fb)
		co, ci, pr, re, ab := fs.rates()
		bco, bci, bpr, bre, bab := fb.rates()
		fmt.Fprintf(&b, "| sovereign / baseline | %s | %s | %s | %s | %s | %d vs %d | %s | %s | %s | %s | | | |\n",
			times(co, bco), times(ci, bci), times(pr, bpr), times(re, bre), times(ab, bab), fs.loops, fb.loops,
			times(fs.p50, fb.p50), times(fs.p95, fb.p95),
			times(ratio(fs.oneCorrect, fs.one), ratio(fb.oneCorrect, fb.one)), times(ratio(fs.twoCorrect, fs.two), ratio(fb.twoCorrect, fb.two)))
	}

	// Retrieval is the same for both: how often the gold documents are
	// among the chunks an answer was given.
	var all, some, ans int
	for _, r := range sov {
		if r.Kind == kindUnanswerable {
			continue
		}
		ans++
		n := 0
		for _, g := range r.GoldDocs {
			if slices.Contains(r.Retrieved, g) {
				n++
			}
		}
		if n == len(r.GoldDocs) {
			all++
		}
		if n > 0 {
			some++
		}
	}
	fmt.Fprintf(&b, "\nRetrieval, the same for both: every gold document among the top %d chunks for %d of %d answerable questions, at least one for %d.\n", topK, all, ans, some)
	fmt.Fprintf(&b, "Answers that start with a marker (\"[1] 1872\": it follows no sentence, so it cites nothing): sovereign %d", fs.leading)
	if baseline {
		fmt.Fprintf(&b, ", baseline %d", fb.leading)
	}
	b.WriteString(".\n")

	// The same answers read leniently, for the reader to judge how much
	// of a gap is where the markers stand.
	b.WriteString("\nRead leniently (not the score): a marker before the answer's first word cites its first sentence.\n\n")
	b.WriteString("| pipeline | cited | citation precision | citation recall | abstention |\n| --- | --: | --: | --: | --: |\n")
	lrow := func(name string, rs []result) {
		f := aggregate(lenient(rs))
		_, ci, pr, re, ab := f.rates()
		fmt.Fprintf(&b, "| %s | %s | %s (%d/%d) | %s (%d/%d) | %s |\n", name, num(ci), num(pr), f.right, f.cites, num(re), f.marked, f.sents, num(ab))
	}
	lrow("sovereign", sov)
	if baseline {
		lrow("baseline", base)
	}

	// Targets.
	type target struct {
		name, bar, got string
		ok             bool
	}
	co, ci, pr, re, ab := fs.rates()
	ts := []target{
		{"correct", "≥ 0.90", num(co), co >= 0.90},
		{"citation precision", "≥ 0.95", num(pr), pr >= 0.95},
		{"citation recall", "≥ 0.90", num(re), re >= 0.90},
		{"abstention", "≥ 0.75", num(ab), ab >= 0.75},
		{"loops", "0", fmt.Sprint(fs.loops), fs.loops == 0},
	}
	if baseline {
		bco, bci, bpr, bre, bab := fb.rates()
		better := func(a, b float64) bool { return a > b || (a == 1 && b == 1) }
		ts = append(ts,
			target{"correct, against the baseline", "higher", num(co) + " vs " + num(bco), better(co, bco)},
			target{"cited, against the baseline", "higher", num(ci) + " vs " + num(bci), better(ci, bci)},
			target{"citation precision, against the baseline", "higher", num(pr) + " vs " + num(bpr), better(pr, bpr)},
			target{"citation recall, against the baseline", "higher", num(re) + " vs " + num(bre), better(re, bre)},
			target{"abstention, against the baseline", "higher", num(ab) + " vs " + num(bab), better(ab, bab)},
			target{"loops, against the baseline", "fewer", fmt.Sprintf("%d vs %d", fs.loops, fb.loops), fs.loops < fb.loops || fs.loops == 0 && fb.loops == 0},
			target{"p50 time per answer / the baseline's", "≤ 1.2×", times(fs.p50, fb.p50), fs.p50 <= 1.2*fb.p50},
		)
	}
	b.WriteString("\n| target | bar | sovereign | |\n| --- | --- | --: | --- |\n")
	pass := true
	for _, t := range ts {
		status := "PASS"
		if !t.ok {
			status, pass = "FAIL", false
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.name, t.bar, t.got, status)
	}
	if fs.errors > 0 || fb.errors > 0 {
		pass = false
	}
	if pass {
		b.WriteString("\nRESULT: PASS\n")
	} else {
		b.WriteString("\nRESULT: FAIL\n")
	}
	return b.String(), pass
}

// sovereignVersion is what `sovereign version` prints, for the report.
func sovereignVersion(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// questionOf rebuilds a result's question from what the result keeps.
func questionOf(r result) question {
	return question{ID: r.QID, Kind: r.Kind, Question: r.Question, GoldDocs: r.GoldDocs, Answers: r.GoldAnswers}
}

// lenient scores copies of the results with splitLenient: the baseline's
// citations are read again from its text that way; Sovereign's are its
// response's.
func lenient(rs []result) []result {
	out := make([]result, 0, len(rs))
	for _, r := range rs {
		if r.Pipeline == "baseline" && r.Error == "" {
			r.Citations, r.InvalidMarkers = markerCitations(splitLenient(r.Answer), r.Retrieved)
		}
		scoreWith(&r, len(r.Retrieved), questionOf(r), splitLenient)
		out = append(out, r)
	}
	return out
}

// rescore reads an answers-detail.jsonl and scores its answers again with
// today's rules (the baseline's citations are read again from its text;
// Sovereign's are those its response gave).
func rescore(c *config, path string) (string, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	var sov, base []result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return "", false, fmt.Errorf("%s: %w", path, err)
		}
		if r.Pipeline == "baseline" && r.Error == "" {
			r.Citations, r.InvalidMarkers = markerCitations(splitSentences(r.Answer), r.Retrieved)
		}
		score(&r, len(r.Retrieved), questionOf(r))
		if r.Pipeline == "baseline" {
			base = append(base, r)
		} else {
			sov = append(sov, r)
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	if c.label == "" {
		c.label = "rescored from " + path
	}
	md, pass := report(c, len(sov), sov, base, 0)
	return md, pass, nil
}
