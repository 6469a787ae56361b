package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// targets are the engine issue's acceptance bars, all against the first
// peer (llama.cpp's llama-server) and measured in one run.
type targets struct {
	single  float64 // single-stream decode, ours/peer, at least
	aggPeer float64 // aggregate decode at 8 streams, ours/peer, at least
	aggSelf float64 // aggregate decode at 8 streams / our single-stream, at least
	prompt  float64 // prompt tok/s, ours/peer, at least
	ttft    float64 // TTFT p50 at 8 streams, ours/peer, at most
}

var defaultTargets = targets{single: 1.0, aggPeer: 1.2, aggSelf: 2.0, prompt: 1.0, ttft: 1.0}

// targetStreams is the concurrency level the aggregate and TTFT targets use.
const targetStreams = 8

// namedFiles is a repeatable NAME=FILE[,FILE…] flag.
type namedFiles []struct {
	name  string
	files []string
}

func (n *namedFiles) String() string { return fmt.Sprint(*n) }

func (n *namedFiles) Set(v string) error {
	name, files, ok := strings.Cut(v, "=")
	if !ok || name == "" || files == "" {
		return fmt.Errorf("want NAME=FILE[,FILE…], got %q", v)
	}
	*n = append(*n, struct {
		name  string
		files []string
	}{name, strings.Split(files, ",")})
	return nil
}

// server is one column of the table: a server's reports, one per round.
type server struct {
	name    string
	reports []*Report
}

func loadServer(name string, files []string) (server, error) {
	s := server{name: name}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return s, err
		}
		var r Report
		if err := json.Unmarshal(data, &r); err != nil {
			return s, fmt.Errorf("%s: %v", f, err)
		}
		s.reports = append(s.reports, &r)
	}
	return s, nil
}

// metric reads one number from a report; ok is false when the report
// lacks it.
type metric struct {
	name   string
	format string
	get    func(*Report) (float64, bool)
}

// atStreams reads field of the aggregate result at the given concurrency.
func atStreams(streams int, field func(AggResult) float64) func(*Report) (float64, bool) {
	return func(r *Report) (float64, bool) {
		for _, a := range r.Aggregate {
			if a.Streams == streams {
				return field(a), true
			}
		}
		return 0, false
	}
}

func aggAt(streams int) func(*Report) (float64, bool) {
	return atStreams(streams, func(a AggResult) float64 { return a.TokS })
}

var (
	mPrompt = metric{"prompt tok/s", "%.1f", func(r *Report) (float64, bool) { return r.Prompt.TokS, r.Prompt.TokS > 0 }}
	mSingle = metric{"single-stream decode tok/s", "%.1f", func(r *Report) (float64, bool) { return r.Single.TokS, r.Single.TokS > 0 }}
	mAgg8   = metric{fmt.Sprintf("aggregate decode tok/s @%d", targetStreams), "%.1f", aggAt(targetStreams)}
	mTTFT8  = metric{fmt.Sprintf("TTFT p50 ms @%d (lower is better)", targetStreams), "%.0f",
		atStreams(targetStreams, func(a AggResult) float64 { return a.TTFTP50Ms })}
	mSelf = metric{fmt.Sprintf("aggregate @%d / own single-stream", targetStreams), "%.2fx", func(r *Report) (float64, bool) {
		a, ok := aggAt(targetStreams)(r)
		return a / r.Single.TokS, ok && r.Single.TokS > 0
	}}
)

// values is the metric of each round's report.
func (s server) values(m metric) []float64 {
	var out []float64
	for _, r := range s.reports {
		if v, ok := m.get(r); ok {
			out = append(out, v)
		}
	}
	return out
}

func (s server) median(m metric) (float64, bool) {
	v := s.values(m)
	if len(v) == 0 {
		return 0, false
	}
	return median(v), true
}

// roundRatios is ours/peer round by round (the i-th report of each was
// measured in the same round), for the spread column.
func roundRatios(m metric, ours, peer server) []float64 {
	var out []float64
	for i := 0; i < len(ours.reports) && i < len(peer.reports); i++ {
		o, ok1 := m.get(ours.reports[i])
		p, ok2 := m.get(peer.reports[i])
		if ok1 && ok2 && p > 0 {
			out = append(out, o/p)
		}
	}
	return out
}

// runCompare prints the table of ours against the peers (and extra runs
// of ours) and reports whether every target passed against the first peer.
func runCompare(w io.Writer, oursFiles string, peerFiles, extraFiles namedFiles, t targets) (bool, error) {
	if oursFiles == "" || len(peerFiles) == 0 {
		return false, fmt.Errorf("-compare needs -ours FILES and at least one -peer NAME=FILES")
	}
	ours, err := loadServer("sovereign", strings.Split(oursFiles, ","))
	if err != nil {
		return false, err
	}
	cols := []server{ours}
	for _, p := range peerFiles {
		s, err := loadServer(p.name, p.files)
		if err != nil {
			return false, err
		}
		cols = append(cols, s)
	}
	for _, x := range extraFiles {
		s, err := loadServer(x.name, x.files)
		if err != nil {
			return false, err
		}
		cols = append(cols, s)
	}
	peer := cols[1]
	r0 := ours.reports[0]
	fmt.Fprintf(w, "\nEngine benchmark: %s against %s — model %s, threads %d, /v1/%s, %d-token decodes, %d round(s), servers alternating\n",
		ours.name, peer.name, r0.Model, r0.Threads, endpointPath(r0.Endpoint), r0.Settings.DecodeTokens, len(ours.reports))
	fmt.Fprintf(w, "host: %s, %d CPUs; each figure is the median over rounds; ours/%s gives the median ratio and its range over rounds\n\n", r0.Host.CPU, r0.Host.NumCPU, peer.name)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.name)
	}
	fmt.Fprintf(tw, "ours/%s\ttarget\tresult\t\n", peer.name)
	allPass := true
	row := func(m metric, target string, pass func(ratio, self float64) bool) {
		fmt.Fprintf(tw, "%s\t", m.name)
		for _, c := range cols {
			if v, ok := c.median(m); ok {
				fmt.Fprintf(tw, m.format+"\t", v)
			} else {
				fmt.Fprintf(tw, "-\t")
			}
		}
		rr := roundRatios(m, ours, peer)
		ratioText := "-"
		ratio := math.NaN()
		if len(rr) > 0 {
			ratio = median(rr)
			ratioText = fmt.Sprintf("%.2fx", ratio)
			if len(rr) > 1 {
				ratioText += fmt.Sprintf(" (%.2f-%.2f)", slices.Min(rr), slices.Max(rr))
			}
		}
		if m.name == mSelf.name {
			ratioText = ""
		}
		result := ""
		if pass != nil {
			self, _ := ours.median(mSelf)
			ok := pass(ratio, self)
			if ok {
				result = "PASS"
			} else {
				result = "FAIL"
				allPass = false
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", ratioText, target, result)
	}
	row(mPrompt, fmt.Sprintf(">= %.2fx", t.prompt), func(r, _ float64) bool { return r >= t.prompt })
	row(mSingle, fmt.Sprintf(">= %.2fx", t.single), func(r, _ float64) bool { return r >= t.single })
	for _, n := range []int{1, 4} {
		row(metric{fmt.Sprintf("aggregate decode tok/s @%d", n), "%.1f", aggAt(n)}, "", nil)
	}
	row(mAgg8, fmt.Sprintf(">= %.2fx", t.aggPeer), func(r, _ float64) bool { return r >= t.aggPeer })
	row(mSelf, fmt.Sprintf(">= %.2fx (ours)", t.aggSelf), func(_, self float64) bool { return self >= t.aggSelf })
	row(mTTFT8, fmt.Sprintf("<= %.2fx", t.ttft), func(r, _ float64) bool { return r <= t.ttft })
	tw.Flush()

	if d := r0.Prompt.PromptTokens - peer.reports[0].Prompt.PromptTokens; d*50 > r0.Prompt.PromptTokens || -d*50 > r0.Prompt.PromptTokens {
		fmt.Fprintf(w, "NOTE: prompt token counts differ by more than 2%% (%d vs %d): the servers tokenised the same text differently.\n",
			r0.Prompt.PromptTokens, peer.reports[0].Prompt.PromptTokens)
	}
	for _, c := range cols {
		for _, r := range c.reports {
			if r.Endpoint != r0.Endpoint || r.Settings.DecodeTokens != r0.Settings.DecodeTokens ||
				r.Settings.PromptWords != r0.Settings.PromptWords || r.Threads != r0.Threads {
				fmt.Fprintf(w, "NOTE: %s ran with different settings (endpoint, decode tokens, prompt words or threads).\n", c.name)
			}
			for _, msg := range r.Warnings {
				fmt.Fprintf(w, "WARNING (%s): %s\n", c.name, msg)
			}
		}
	}
	if allPass {
		fmt.Fprintf(w, "\nRESULT: PASS (all targets met against %s)\n", peer.name)
	} else {
		fmt.Fprintf(w, "\nRESULT: FAIL (see rows marked FAIL)\n")
	}
	return allPass, nil
}
