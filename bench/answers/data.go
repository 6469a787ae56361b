package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The labelled set: fictional documents and the questions asked of them.

// Kinds of question.
const (
	kindOne          = "one-doc"      // answered by one document
	kindTwo          = "two-doc"      // needs two documents (a link in one, the answer in the other)
	kindUnanswerable = "unanswerable" // about the same world; no document holds the answer
)

type document struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

type question struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	Question string   `json:"question"`
	GoldDocs []string `json:"gold_docs"`
	// Answers are acceptable short answers, matched case-insensitively as
	// whole words; any one is enough.
	Answers []string `json:"answers"`
}

func (q question) answerable() bool { return q.Kind != kindUnanswerable }

func loadSet(dir string) ([]document, []question, error) {
	var docs []document
	var qs []question
	if err := readJSON(filepath.Join(dir, "documents.json"), &docs); err != nil {
		return nil, nil, err
	}
	if err := readJSON(filepath.Join(dir, "questions.json"), &qs); err != nil {
		return nil, nil, err
	}
	return docs, qs, validateSet(docs, qs)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// validateSet checks the set's own rules: unique ids, documents of 80–200
// words with a title, gold documents that exist (one for a one-doc
// question, two for a two-doc one, none and no answers for an unanswerable
// one), and every gold answer written in one of the gold documents.
func validateSet(docs []document, qs []question) error {
	byID := map[string]document{}
	for _, d := range docs {
		if d.ID == "" || d.Title == "" {
			return fmt.Errorf("document %q: needs an id and a title", d.ID)
		}
		if _, dup := byID[d.ID]; dup {
			return fmt.Errorf("document %q: duplicate id", d.ID)
		}
		if n := len(strings.Fields(d.Text)); n < 80 || n > 200 {
			return fmt.Errorf("document %q: %d words, want 80–200", d.ID, n)
		}
		byID[d.ID] = d
	}
	seen := map[string]bool{}
	for _, q := range qs {
		if q.ID == "" || strings.TrimSpace(q.Question) == "" || seen[q.ID] {
			return fmt.Errorf("question %q: needs a unique id and a question", q.ID)
		}
		seen[q.ID] = true
		want := map[string]int{kindOne: 1, kindTwo: 2, kindUnanswerable: 0}
		n, ok := want[q.Kind]
		if !ok {
			return fmt.Errorf("question %s: unknown kind %q", q.ID, q.Kind)
		}
		if len(q.GoldDocs) != n {
			return fmt.Errorf("question %s (%s): %d gold documents, want %d", q.ID, q.Kind, len(q.GoldDocs), n)
		}
		if q.answerable() != (len(q.Answers) > 0) {
			return fmt.Errorf("question %s (%s): answers %v", q.ID, q.Kind, q.Answers)
		}
		var gold strings.Builder
		for _, id := range q.GoldDocs {
			d, ok := byID[id]
			if !ok {
				return fmt.Errorf("question %s: no document %q", q.ID, id)
			}
			gold.WriteString(d.Title + "\n" + d.Text + "\n")
		}
		if q.answerable() && !containsGold(gold.String(), q.Answers) {
			return fmt.Errorf("question %s: none of %q is in its gold documents", q.ID, q.Answers)
		}
	}
	return nil
}

// subset picks n questions spread evenly over the set (so that a short
// run has every kind), in the set's order; n <= 0 or n >= len: all.
func subset(qs []question, n int) []question {
	if n <= 0 || n >= len(qs) {
		return qs
	}
	out := make([]question, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, qs[i*len(qs)/n])
	}
	return out
}

// only keeps the questions whose id or kind is in the comma-separated
// list sel (all when sel is empty).
func only(qs []question, sel string) []question {
	if sel == "" {
		return qs
	}
	want := map[string]bool{}
	for _, s := range strings.Split(sel, ",") {
		want[strings.TrimSpace(s)] = true
	}
	var out []question
	for _, q := range qs {
		if want[q.ID] || want[q.Kind] {
			out = append(out, q)
		}
	}
	return out
}
