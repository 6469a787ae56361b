package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// citedAnswer is the part of a completion with citations the tests read.
type citedAnswer struct {
	ID      string `json:"id"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Citations []struct {
		Index   int    `json:"index"`
		Start   int    `json:"start"`
		End     int    `json:"end"`
		Text    string `json:"text"`
		Sources []struct {
			ID           string `json:"id"`
			CollectionID string `json:"collection_id"`
			DocumentID   string `json:"document_id"`
			ChunkID      string `json:"chunk_id"`
			Title        string `json:"title"`
			URL          string `json:"url"`
			Snippet      string `json:"snippet"`
		} `json:"sources"`
	} `json:"citations"`
}

// checkOffsets fails unless every citation's offsets slice its text out of
// answer, in order.
func checkOffsets(t *testing.T, answer string, a citedAnswer) {
	t.Helper()
	runes := []rune(answer)
	for i, c := range a.Citations {
		if c.Index != i || c.Start < 0 || c.End > len(runes) || c.Start >= c.End || string(runes[c.Start:c.End]) != c.Text {
			t.Fatalf("citation %d [%d,%d) %q does not slice the answer %q", i, c.Start, c.End, c.Text, answer)
		}
		if len(c.Sources) == 0 {
			t.Fatalf("citation %d has no sources", i)
		}
	}
}

var marker = regexp.MustCompile(`\[\d+\]`)

// answerModel answers with sources in the tests that need answers worth
// having: the instruct default (a base model's answers turn on numerics).
const answerModel = "qwen2.5-coder-0.5b-instruct"

// TestAnswersWithCitations asks the default chat model about made-up facts
// held in the team's default collection: each answer's first citation
// points at the document holding the fact, offsets slice the answer, the
// citations are recorded as source links, streaming ends with the same
// citations, citations off means no markers, and once the document is
// deleted it is cited no more. Another team can neither cite nor search
// the collection, nor read the links.
func TestAnswersWithCitations(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	col := e.json("POST", "/v1/collections", map[string]any{"name": "default"}, 201)
	colID := col["id"].(string)
	docs := map[string]string{}
	for title, text := range facts {
		d := e.json("POST", "/v1/collections/"+colID+"/documents", map[string]any{"title": title, "url": "https://example.test/" + title, "text": text}, 202)
		docs[title] = d["id"].(string)
	}
	for _, d := range docs {
		e.waitReady(colID, d)
	}
	// ask returns the status, the answer and the error envelope (one of
	// them is empty).
	ask := func(key, q string, extra map[string]any) (int, citedAnswer, envelope) {
		t.Helper()
		body := map[string]any{"model": answerModel, "messages": []map[string]string{{"role": "user", "content": q}},
			"citations": true, "max_tokens": 60, "temperature": 0}
		for k, v := range extra {
			body[k] = v
		}
		resp := e.request(key, "POST", "/v1/completions", body)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var a citedAnswer
		var env envelope
		json.Unmarshal(raw, &a)
		json.Unmarshal(raw, &env)
		return resp.StatusCode, a, env
	}
	questions := []struct{ q, want string }{
		{"What coolant does the zorblat engine run on?", "zorblat"},
		{"When was the zorblat engine first built?", "zorblat"},
		{"What keeps the sky ships of Veloria afloat?", "ships"},
		{"What do the seeds of quantum tomatoes do?", "garden"},
	}
	var firstResponse citedAnswer
	for _, qa := range questions {
		q, want := qa.q, qa.want
		code, a, _ := ask(e.key, q, nil)
		if code != 200 || len(a.Choices) != 1 {
			t.Fatalf("%q: %d %+v", q, code, a)
		}
		answer := a.Choices[0].Message.Content
		if len(a.Citations) == 0 {
			t.Fatalf("%q: no citations in %q", q, answer)
		}
		checkOffsets(t, answer, a)
		checkFacts(t, a)
		src := a.Citations[0].Sources[0]
		if src.DocumentID != docs[want] || src.Title != want || src.URL != "https://example.test/"+want || src.CollectionID != colID ||
			!strings.HasPrefix(src.ChunkID, "chunk_") || !strings.Contains(facts[want], src.Snippet) {
			t.Fatalf("%q: answer %q cites %+v, want document %s (%s)", q, answer, src, want, docs[want])
		}
		if !strings.Contains(answer, "[") {
			t.Fatalf("%q: answer without markers: %q", q, answer)
		}
		if firstResponse.ID == "" && want == "zorblat" {
			firstResponse = a
		}
	}

	// Every citation of a response is a source link.
	links := e.json("GET", "/v1/source_links?response_id="+firstResponse.ID, nil, 200)["data"].([]any)
	n := 0
	for _, c := range firstResponse.Citations {
		n += len(c.Sources)
	}
	if len(links) != n || n == 0 {
		t.Fatalf("%d source links for %d cited sources", len(links), n)
	}
	l := links[0].(map[string]any)
	if l["response_id"] != firstResponse.ID || l["source"].(map[string]any)["document_id"] != docs["zorblat"] || l["model"] != answerModel {
		t.Fatalf("source link %v", l)
	}
	if got := e.json("GET", "/v1/source_links?document_id="+docs["zorblat"], nil, 200)["data"].([]any); len(got) < 2 {
		t.Fatalf("links by document: %d", len(got))
	}
	page := e.json("GET", "/v1/source_links?limit=1", nil, 200)
	if len(page["data"].([]any)) != 1 || page["has_more"] != true {
		t.Fatalf("first page: %v", page)
	}
	next := e.json("GET", "/v1/source_links?limit=1&after="+page["last_id"].(string), nil, 200)
	if next["first_id"] == page["first_id"] || len(next["data"].([]any)) != 1 {
		t.Fatalf("second page repeats the first: %v", next)
	}
	e.json("GET", "/v1/source_links?limit=0", nil, 400)

	// Streaming: the text as usual, then a chunk with the citations.
	streamed, cits := streamCited(t, e, e.key, "What coolant does the zorblat engine run on?")
	checkOffsets(t, streamed, cits)
	if len(cits.Citations) == 0 || cits.Citations[0].Sources[0].DocumentID != docs["zorblat"] {
		t.Fatalf("streamed answer %q: citations %+v", streamed, cits.Citations)
	}

	// What the sources do not say is answered with the fixed sentence, not
	// a guess; a question about nothing in them without asking the model.
	for _, q := range []string{"How many captains steer each sky ship of Veloria?", "What is the capital of France?"} {
		code, a, _ := ask(e.key, q, nil)
		if code != 200 || a.Choices[0].Message.Content != "The sources do not say." || len(a.Citations) != 0 {
			t.Fatalf("%q: %d %+v, want the abstain text without citations", q, code, a)
		}
		if q == "What is the capital of France?" && a.Usage.CompletionTokens != 0 {
			t.Fatalf("%q: the model was asked (%d tokens) about a question retrieval found nothing for", q, a.Usage.CompletionTokens)
		}
	}
	// {"abstain": false} keeps what the model wrote.
	if code, a, _ := ask(e.key, "What is the capital of France?", map[string]any{"citations": map[string]any{"abstain": false}}); code != 200 || a.Choices[0].Message.Content == "The sources do not say." {
		t.Fatalf("abstain false: %d %+v", code, a)
	}

	// Citations off: the answer has no markers and no citations.
	code, a, _ := ask(e.key, "What coolant does the zorblat engine run on?", map[string]any{"citations": false, "sources": map[string]any{"collections": []string{colID}}})
	if code != 200 || a.Citations != nil || marker.MatchString(a.Choices[0].Message.Content) {
		t.Fatalf("citations false: %d %+v", code, a)
	}

	// Inline documents are cited by their own ids.
	code, a, _ = ask(e.key, "What colour is the moon of Tarsis?", map[string]any{"sources": map[string]any{"documents": []map[string]string{
		{"id": "memo-7", "title": "Tarsis memo", "text": "The moon of Tarsis is bright green and smells of mint."}}}})
	if code != 200 || len(a.Citations) == 0 || a.Citations[0].Sources[0].ID != "memo-7" || a.Citations[0].Sources[0].CollectionID != "" {
		t.Fatalf("inline document: %d %+v", code, a)
	}

	// Bad sources are refused with the field named.
	for _, c := range []struct {
		extra map[string]any
		param string
	}{
		{map[string]any{"sources": map[string]any{"documents": []map[string]string{{"text": " "}}}}, "sources.documents[0].text"},
		{map[string]any{"sources": map[string]any{"collections": []string{colID}, "mode": "psychic"}}, "sources.mode"},
		{map[string]any{"sources": map[string]any{"collections": []string{colID}, "top_k": 0}}, "sources.top_k"},
		{map[string]any{"sources": "everything"}, "sources"},
		{map[string]any{"prompt": "hi"}, "prompt"},
		{map[string]any{"citations": map[string]any{"abstain": "no"}}, "citations"},
		{map[string]any{"citations": map[string]any{"cite": true}}, "citations"},
	} {
		code, _, env := ask(e.key, "What coolant does the zorblat engine run on?", c.extra)
		if code != 400 || env.Error.Param == nil || *env.Error.Param != c.param {
			t.Fatalf("%v: %d %+v, want 400 on %s", c.extra, code, env, c.param)
		}
	}

	// Another team: cannot cite, search or read this team's records.
	other := teamKey(t, e, "outsiders")
	if code, _, env := ask(other, "What coolant does the zorblat engine run on?", map[string]any{"sources": map[string]any{"collections": []string{colID}}}); code != 404 || env.Error.Code != "not_found" {
		t.Fatalf("other team cited the collection: %d %+v", code, env)
	}
	resp := e.request(other, "POST", "/v1/collections/"+colID+"/search", map[string]any{"query": "zorblat"})
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("other team searched the collection: %d", resp.StatusCode)
	}
	if code, _, env := ask(other, "What coolant does the zorblat engine run on?", nil); code != 400 || env.Error.Param == nil || *env.Error.Param != "sources" {
		t.Fatalf("other team without a default collection: %d %+v", code, env)
	}
	resp = e.request(other, "GET", "/v1/source_links", nil)
	var theirs map[string]any
	json.NewDecoder(resp.Body).Decode(&theirs)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(theirs["data"].([]any)) != 0 {
		t.Fatalf("other team sees links: %d %v", resp.StatusCode, theirs)
	}
	resp = e.request(other, "GET", "/v1/source_links?after="+page["first_id"].(string), nil)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("other team's cursor into our links: %d", resp.StatusCode)
	}

	// Deleting the zorblat document: it is cited no more, and its links
	// stay on record.
	e.json("DELETE", "/v1/collections/"+colID+"/documents/"+docs["zorblat"], nil, 200)
	for _, qa := range questions {
		if qa.want != "zorblat" {
			continue
		}
		_, a, _ := ask(e.key, qa.q, nil)
		for _, c := range a.Citations {
			for _, s := range c.Sources {
				if s.DocumentID == docs["zorblat"] {
					t.Fatalf("%q: deleted document cited: %+v", qa.q, a)
				}
			}
		}
	}
	if got := e.json("GET", "/v1/source_links?response_id="+firstResponse.ID, nil, 200)["data"].([]any); len(got) != n {
		t.Fatalf("links of the deleted document's answer: %d, want %d", len(got), n)
	}
}

// streamCited streams a completion with citations and returns the text
// and the citations chunk, checking that the chunk comes last before
// [DONE].
func streamCited(t *testing.T, e *env, key, q string) (string, citedAnswer) {
	t.Helper()
	resp := e.request(key, "POST", "/v1/completions", map[string]any{"model": answerModel, "stream": true, "citations": true,
		"max_tokens": 60, "temperature": 0, "messages": []map[string]string{{"role": "user", "content": q}}})
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var text strings.Builder
	var cits citedAnswer
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		events = append(events, line)
		if line == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Citations json.RawMessage `json:"citations"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
		}
		if ch.Citations != nil {
			json.Unmarshal([]byte(line), &cits)
		}
	}
	if len(events) < 3 || events[len(events)-1] != "[DONE]" || !strings.Contains(events[len(events)-2], `"citations"`) {
		t.Fatalf("the citations chunk is not last before [DONE]: %v", events[max(0, len(events)-3):])
	}
	return text.String(), cits
}

// teamKey creates a team and an inference key in it, returning the key.
func teamKey(t *testing.T, e *env, name string) string {
	t.Helper()
	team := e.json("POST", "/v1/teams", map[string]any{"name": name}, 201)
	k := e.json("POST", "/v1/keys", map[string]any{"name": name, "team_id": team["id"], "scopes": []string{"inference"}}, 201)
	return k["key"].(string)
}

// TestUploadPDF uploads a real PDF: its text is extracted, chunked with
// offsets and found.
func TestUploadPDF(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 512})
	colID := e.json("POST", "/v1/collections", map[string]any{"name": "reports"}, 201)["id"].(string)
	data, err := os.ReadFile("testdata/ostra.pdf")
	if err != nil {
		t.Fatal(err)
	}
	resp, d := e.upload("/v1/collections/"+colID+"/documents", "ostra.pdf", "application/pdf", data)
	if resp.StatusCode != 202 || d["title"] != "Ostra report" || d["format"] != "pdf" {
		t.Fatalf("upload: %d %v", resp.StatusCode, d)
	}
	e.waitReady(colID, d["id"].(string))
	hits := e.json("POST", "/v1/collections/"+colID+"/search", map[string]any{"query": "What does the lighthouse of Ostra burn?"}, 200)["data"].([]any)
	if len(hits) == 0 || !strings.Contains(fmt.Sprint(hits[0].(map[string]any)["text"]), "copper lighthouse of Ostra") {
		t.Fatalf("PDF text not found: %v", hits)
	}
}

// TestUploadHostilePDF uploads a 700-byte PDF whose object stream
// extends itself behind a #-escaped name: the reader would follow it for
// ever; the upload answers 400 naming the time budget once it is spent,
// and the server goes on serving uploads.
func TestUploadHostilePDF(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 512})
	colID := e.json("POST", "/v1/collections", map[string]any{"name": "reports"}, 201)["id"].(string)
	data, err := os.ReadFile("testdata/extends-escaped.pdf")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, body := e.upload("/v1/collections/"+colID+"/documents", "hostile.pdf", "application/pdf", data)
	env, _ := body["error"].(map[string]any)
	if resp.StatusCode != 400 || env == nil || !strings.Contains(fmt.Sprint(env["message"]), "time budget of 3s") || time.Since(start) > 10*time.Second {
		t.Fatalf("hostile PDF: %d %v after %s", resp.StatusCode, body, time.Since(start))
	}
	good, err := os.ReadFile("testdata/ostra.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if resp, d := e.upload("/v1/collections/"+colID+"/documents", "ostra.pdf", "application/pdf", good); resp.StatusCode != 202 || d["format"] != "pdf" {
		t.Fatalf("a good PDF after it: %d %v", resp.StatusCode, d)
	}
}

var digitRun = regexp.MustCompile(`[0-9]+`)

// checkFacts fails when a cited span states a number that none of its
// sources holds (the writer drops such markers).
func checkFacts(t *testing.T, a citedAnswer) {
	t.Helper()
	for _, c := range a.Citations {
		for _, d := range digitRun.FindAllString(c.Text, -1) {
			found := false
			for _, s := range c.Sources {
				if slices.Contains(digitRun.FindAllString(s.Snippet, -1), d) {
					found = true
				}
			}
			if !found {
				t.Fatalf("citation %q cites sources without %s", c.Text, d)
			}
		}
	}
}

// TestCitationsHoldFacts asks the README's question over the README's
// document: every cited span's numbers are in its source, and a sentence
// of the answer that states a number the source does not have (the
// default model likes to add "1900-year-old") is not cited but listed
// under unsupported, with offsets that slice the answer.
func TestCitationsHoldFacts(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	resp := e.request(e.key, "POST", "/v1/completions", map[string]any{"model": "gemma3-270m", "citations": true, "temperature": 0, "max_tokens": 60,
		"messages": []map[string]string{{"role": "user", "content": "What coolant does the zorblat engine run on?"}},
		"sources":  map[string]any{"documents": []map[string]string{{"id": "engines", "title": "Engines", "text": "The zorblat engine runs on purple coolant and was first built in Qarth in 1872."}}}})
	defer resp.Body.Close()
	var a struct {
		citedAnswer
		Unsupported []struct {
			Start, End int
			Text       string
		} `json:"unsupported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	answer := a.Choices[0].Message.Content
	checkOffsets(t, answer, a.citedAnswer)
	checkFacts(t, a.citedAnswer)
	runes := []rune(answer)
	for _, u := range a.Unsupported {
		if u.Start < 0 || u.End > len(runes) || string(runes[u.Start:u.End]) != u.Text {
			t.Fatalf("unsupported span %+v does not slice %q", u, answer)
		}
	}
	t.Logf("answer %q, unsupported %v", answer, a.Unsupported)
	// Every "1900" of the answer is inside an unsupported span.
	for i := 0; i+4 <= len(runes); i++ {
		if string(runes[i:i+4]) != "1900" {
			continue
		}
		covered := false
		for _, u := range a.Unsupported {
			covered = covered || u.Start <= i && i+4 <= u.End
		}
		if !covered {
			t.Fatalf("the 1900 at %d of %q is not in an unsupported span: %+v", i, answer, a.Unsupported)
		}
	}
}

// TestTwoHopAnswer asks the instruct default a question that names its
// subject through a description ("the ship that carried the bell"): the
// bell's document names the ship, the ship's names her captain, and a
// second ship with another captain stands beside them. Each search
// returns one chunk (top_k 1), so the captain is found only by searching
// again for the ship. The answer names the right captain and cites both
// documents, the bell's for the sentence that resolves the ship.
func TestTwoHopAnswer(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	colID := e.json("POST", "/v1/collections", map[string]any{"name": "default"}, 201)["id"].(string)
	docs := map[string]string{}
	for title, text := range map[string]string{
		"The Veldor Bell": "The Veldor Bell hangs in the clock tower of the Ostrand Exchange. It was cast in 1872 and weighs 2,340 kilograms. The bell was too heavy for the coast road, so it was brought to Ostrand by sea aboard the schooner Calloway Wren.",
		"Calloway Wren":   "The Calloway Wren was a two-masted schooner built at Velmouth in 1864. Her hull was painted green. Her longest-serving master was Captain Ilse Marrow, who commanded her from 1869 to 1884.",
		"Orla Bright":     "The Orla Bright was a paddle steamer that carried passengers between Velmouth and Pellham Ness. Her last master was Captain Tobiah Quill.",
	} {
		docs[title] = e.json("POST", "/v1/collections/"+colID+"/documents", map[string]any{"title": title, "text": text}, 202)["id"].(string)
	}
	for _, d := range docs {
		e.waitReady(colID, d)
	}
	// One chunk per search: the first finds the bell's, and only a second
	// search, for the ship it names, finds her captain.
	resp := e.request(e.key, "POST", "/v1/completions", map[string]any{"model": answerModel, "citations": true, "temperature": 0, "max_tokens": 80,
		"sources":  map[string]any{"collections": []string{colID}, "top_k": 1},
		"messages": []map[string]string{{"role": "user", "content": "Who captained the ship that carried the Veldor Bell to Ostrand?"}}})
	defer resp.Body.Close()
	var a citedAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	answer := a.Choices[0].Message.Content
	checkOffsets(t, answer, a)
	cited := map[string]bool{}
	for _, c := range a.Citations {
		for _, s := range c.Sources {
			cited[s.DocumentID] = true
		}
	}
	if !strings.Contains(answer, "Ilse Marrow") || strings.Contains(answer, "Tobiah Quill") || !cited[docs["The Veldor Bell"]] || !cited[docs["Calloway Wren"]] {
		t.Fatalf("answer %q cites %v; want Ilse Marrow, from the bell's and the Wren's documents (%v)", answer, cited, docs)
	}
}
