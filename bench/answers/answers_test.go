package main

import (
	"reflect"
	"testing"
)

func TestSet(t *testing.T) {
	docs, qs, err := loadSet("testdata")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, q := range qs {
		kinds[q.Kind]++
	}
	if len(docs) < 30 || len(qs) < 80 || kinds[kindOne] < 45 || kinds[kindTwo] < 15 || kinds[kindUnanswerable] < 20 {
		t.Errorf("%d documents, %d questions %v: want ≥ 30, ≥ 80 with ≥ 45 one-doc, ≥ 15 two-doc, ≥ 20 unanswerable", len(docs), len(qs), kinds)
	}
	// An unanswerable question's subject is in the set, so that it is
	// plausible: no gold answer to look for, but the search finds
	// something to be tempted by. And a two-doc question's answer is in
	// only one of its documents.
	byID := map[string]document{}
	for _, d := range docs {
		byID[d.ID] = d
	}
	for _, q := range qs {
		if q.Kind != kindTwo {
			continue
		}
		n := 0
		for _, id := range q.GoldDocs {
			if containsGold(byID[id].Text, q.Answers) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: the answer is in %d of its two documents, want 1", q.ID, n)
		}
	}
	if got := subset(qs, 10); len(got) != 10 || got[0].ID != qs[0].ID {
		t.Errorf("subset(10) = %d questions", len(got))
	}
}

func TestSplitSentences(t *testing.T) {
	cases := []struct {
		in   string
		want []sentence
	}{
		{"The bell was cast in 1872.[1] It weighs 2,340 kilograms. [1][2]", []sentence{
			{"The bell was cast in 1872.", [][]int{{1}}}, {"It weighs 2,340 kilograms.", [][]int{{1}, {2}}}}},
		{"It was cast in 1872 [2]. The bell is 2.4 metres wide.", []sentence{
			{"It was cast in 1872 .", [][]int{{2}}}, {"The bell is 2.4 metres wide.", nil}}},
		{"Captain J. Smith sailed her [1, 3]. Then\n[2]\nDone!", []sentence{
			{"Captain J. Smith sailed her .", [][]int{{1, 3}}}, {"Then", [][]int{{2}}}, {"Done!", nil}}},
		{"[1] The sources say \"Ring true.\" [2]", []sentence{{"The sources say \"Ring true.\"", [][]int{{2}}}}},
		{"[1][2]", nil},
		{"One\n[1] Two.", []sentence{{"One", [][]int{{1}}}, {"Two.", nil}}},
		{"I don't know.", []sentence{{"I don't know.", nil}}},
		{"", nil},
	}
	for _, c := range cases {
		got := splitSentences(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitSentences(%q) =\n %#v\nwant\n %#v", c.in, got, c.want)
		}
	}
}

func TestContainsGold(t *testing.T) {
	cases := []struct {
		answer string
		gold   []string
		want   bool
	}{
		{"It was cast in 1872.[1]", []string{"1872"}, true},
		{"It has rung since 1901.", []string{"9"}, false},
		{"A crew of 9 sailed her.", []string{"nine", "9"}, true},
		{"Her hull was GREEN [1].", []string{"green"}, true},
		{"The greenest hull.", []string{"green"}, false},
		{"It reads “Ring true, ring home.”", []string{"ring true, ring home"}, true},
		{"Margit Solberg–Hay designed it.", []string{"Solberg-Hay"}, true},
	}
	for _, c := range cases {
		if got := containsGold(c.answer, c.gold); got != c.want {
			t.Errorf("containsGold(%q, %q) = %v", c.answer, c.gold, got)
		}
	}
}

func TestAbstains(t *testing.T) {
	yes := []string{"The sources do not say.", "I don't know.", "I’m sorry, but I don't know who that was.",
		"The sources do not mention the population of Saltgrave.", "This information is not provided in the sources.",
		"There is no information about the engines.", "The text doesn't specify the cost."}
	no := []string{"The bell was cast in 1872.", "Ilse Marrow was the captain [1].", "She did not marry until 1880."}
	for _, s := range yes {
		if !abstains(s) {
			t.Errorf("abstains(%q) = false", s)
		}
	}
	for _, s := range no {
		if abstains(s) {
			t.Errorf("abstains(%q) = true", s)
		}
	}
}

func TestLoops(t *testing.T) {
	l := "The bell was cast in 1872. The bell was cast in 1872. The bell was cast in 1872."
	if !loops(l, "stop") {
		t.Error("three repeats: not a loop")
	}
	if loops("The bell was cast in 1872. The bell was cast in 1872.", "stop") {
		t.Error("two repeats, stopped: a loop")
	}
	if !loops("The bell was cast in 1872. The bell was cast in", "length") {
		t.Error("two repeats, cut by length: not a loop")
	}
}

func TestScoreBaselineAndSovereignAlike(t *testing.T) {
	q := question{ID: "q", Kind: kindTwo, GoldDocs: []string{"d01", "d02"}, Answers: []string{"Ilse Marrow"}}
	r := result{Answer: "The Calloway Wren carried it.[1] Ilse Marrow was her captain.[2] She was born in 1838. [4]",
		Citations: []citation{{Docs: []string{"d01"}}, {Docs: []string{"d02"}}, {Docs: []string{"d09"}}}}
	score(&r, 5, q)
	if !r.Correct || !r.Cited || r.CitedSources != 3 || r.RightSources != 2 || r.SentenceCount != 3 || r.MarkedSentences != 3 || r.Abstained || r.Loop {
		t.Errorf("score: %+v", r)
	}
	u := question{ID: "u", Kind: kindUnanswerable}
	r = result{Answer: "The sources do not say."}
	score(&r, 5, u)
	if !r.Abstained || r.Correct {
		t.Errorf("abstention: %+v", r)
	}
	r = result{Answer: "The sources do not say who designed it, but it is 34 metres high.[2]", Citations: []citation{{Docs: []string{"d23"}}}}
	score(&r, 5, u)
	if r.Abstained {
		t.Errorf("a cited answer is not an abstention: %+v", r)
	}
}

func TestSplitLenient(t *testing.T) {
	got := splitLenient("[1] 1872. It weighs 2,340 kg [2].")
	want := []sentence{{"1872.", [][]int{{1}}}, {"It weighs 2,340 kg .", [][]int{{2}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitLenient = %#v", got)
	}
	if got := splitSentences("[1] 1872."); !reflect.DeepEqual(got, []sentence{{"1872.", nil}}) {
		t.Errorf("splitSentences = %#v", got)
	}
	cits, invalid := markerCitations(splitLenient("[1] 1872 [7]."), []string{"d01", "d02"})
	if len(cits) != 1 || cits[0].Docs[0] != "d01" || invalid != 1 {
		t.Errorf("markerCitations = %+v, %d", cits, invalid)
	}
}
