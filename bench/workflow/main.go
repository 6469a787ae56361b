// Command workflow measures the workflow engine's overhead: how long a run
// of five transform steps takes from POST /v1/workflows/{id}/runs to its
// workflow.run.succeeded event, through a live `sovereign serve` (SQLite,
// the embedded durable engine). Runs go one at a time, so the figure is
// the engine's and the store's work per run, not queueing. It prints a
// table and checks the target (p50 ≤ 50 ms).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:18300", "the server")
	key := flag.String("key", os.Getenv("SOVEREIGN_API_KEY"), "an API key with the workflows scope")
	n := flag.Int("n", 200, "runs to measure")
	warm := flag.Int("warmup", 20, "runs before measuring")
	target := flag.Float64("target-p50-ms", 50, "the p50 target")
	flag.Parse()

	steps := []any{map[string]any{"id": "s1", "type": "transform", "template": "hello {{ input.name }}"}}
	for i := 2; i <= 5; i++ {
		steps = append(steps, map[string]any{"id": fmt.Sprintf("s%d", i), "type": "transform",
			"expression": fmt.Sprintf("string(steps.s%d.output.%s) + '!'", i-1, map[bool]string{true: "text", false: "value"}[i == 2])})
	}
	var wf struct{ ID string }
	call(*base, *key, "POST", "/v1/workflows", map[string]any{"name": "bench-5-transforms", "definition": map[string]any{"steps": steps}}, &wf)

	var lat []float64
	for i := 0; i < *warm+*n; i++ {
		start := time.Now()
		var run struct{ ID string }
		call(*base, *key, "POST", "/v1/workflows/"+wf.ID+"/runs", map[string]any{"input": map[string]any{"name": "bench"}}, &run)
		waitSucceeded(*base, *key, run.ID)
		if i >= *warm {
			lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		}
	}
	sort.Float64s(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Printf("\n## Workflow engine overhead\n\nA run of 5 transform steps, POST /v1/workflows/{id}/runs to the run's workflow.run.succeeded event on GET /v1/workflow_runs/{id}/events; %d runs one at a time after %d warm-up; SQLite; ms.\n\n", *n, *warm)
	fmt.Println("| p50 | p90 | p99 | max |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| %.1f | %.1f | %.1f | %.1f |\n\n", pct(0.5), pct(0.9), pct(0.99), lat[len(lat)-1])
	verdict := "PASS"
	if pct(0.5) > *target {
		verdict = "FAIL"
	}
	fmt.Printf("%s: a 5-step transform run, p50 = %.1f ms (target <= %.0f ms)\n", verdict, pct(0.5), *target)
	if verdict == "FAIL" {
		os.Exit(1)
	}
}

func call(base, key, method, path string, body, into any) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		fail("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	json.Unmarshal(raw, into)
}

// waitSucceeded reads the run's event stream until the run ends.
func waitSucceeded(base, key, id string) {
	req, _ := http.NewRequest("GET", base+"/v1/workflow_runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("events: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "event: workflow.run.succeeded":
			return
		case strings.HasPrefix(line, "event: workflow.run.failed"), strings.HasPrefix(line, "event: workflow.run.cancelled"):
			fail("run %s: %s", id, line)
		}
	}
	fail("run %s: the stream ended without the run's end", id)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "workflow bench: "+format+"\n", args...)
	os.Exit(2)
}
