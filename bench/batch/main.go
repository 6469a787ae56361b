// Command batch is Sovereign's Batch API benchmark, run against a live
// server (bench/batch/run.sh starts one):
//
//  1. idle TTFT: interactive streamed chat requests, one at a time, on an
//     otherwise idle server (p50 of the time to the first content token);
//  2. the engine at full slots: as many concurrent clients as the model has
//     slots, sending the batch's own requests directly, back to back
//     (aggregate completion tokens per second of wall time);
//  3. the engine's floor: interactive requests beside slots-1 direct
//     requests (what the engine itself gives them at the load a batch puts
//     on it while it leaves them a slot);
//  4. the batch: the same requests as a batch of -lines lines, alone (after
//     the engine's interactive window has passed), then again with
//     interactive streamed requests sent one at a time, a pause between
//     them, while it runs (p50 TTFT during the batch). A batch's rate is its
//     output tokens over the time from in_progress to completed.
//
// Targets (issue 14): the batch alone reaches ≥ 90 % of the full-slot rate,
// and TTFT p50 during the batch is within 1.5× of the idle p50. It prints a
// markdown table and a RESULT line, and exits 1 when a target is missed.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	baseURL   = flag.String("base-url", "http://127.0.0.1:18095", "the server")
	apiKey    = flag.String("api-key", "", "an API key with the inference scope")
	model     = flag.String("model", "gemma3-270m", "chat model")
	slots     = flag.Int("slots", 4, "the server's slots per model (SOVEREIGN_SLOTS)")
	lines     = flag.Int("lines", 200, "batch lines")
	maxTokens = flag.Int("max-tokens", 64, "max_tokens of the batch's and the direct requests")
	direct    = flag.Int("direct", 0, "requests of the full-slot phase (0: 12 per slot)")
	probes    = flag.Int("probes", 40, "interactive requests on the idle server")
	pause     = flag.Duration("probe-pause", 750*time.Millisecond, "pause between interactive requests during the batch")
	window    = flag.Duration("window", 11*time.Second, "wait before the batch alone: the engine's interactive window and a second")
	serverPID = flag.Int("server-pid", 0, "the server's process id: the CPU other processes take during each phase is measured (0: not measured)")
)

var client = &http.Client{Timeout: 10 * time.Minute}

// topics make every request's prompt different (no shared cached prefix
// beyond the chat template's).
var topics = []string{"a lighthouse keeper", "a lost umbrella", "the first snow", "a bakery at dawn", "a clockmaker", "a river barge",
	"an old map", "a quiet library", "a mountain pass", "a street musician", "a paper boat", "a night train", "a tea garden",
	"a broken compass", "a fox in the city", "a glass bridge"}

func linePrompt(i int) string {
	return fmt.Sprintf("Request %d. Write a short story about %s.", i, topics[i%len(topics)])
}

func probePrompt(i int) string {
	return fmt.Sprintf("Probe %d: in one sentence, what is %s?", i, topics[(i*7)%len(topics)])
}

func post(path string, body any) (*http.Response, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", *baseURL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+*apiKey)
	req.Header.Set("Content-Type", "application/json")
	return client.Do(req)
}

func getJSON(path string, v any) error {
	req, _ := http.NewRequest("GET", *baseURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+*apiKey)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func chatBody(prompt string, maxTok int) map[string]any {
	return map[string]any{"model": *model, "messages": []map[string]string{{"role": "user", "content": prompt}}, "max_tokens": maxTok, "temperature": 0}
}

// complete sends one non-streamed chat request and returns its completion
// tokens.
func complete(prompt string) (int, error) {
	resp, err := post("/v1/chat/completions", chatBody(prompt, *maxTokens))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("chat: %d %s", resp.StatusCode, b)
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.Usage.CompletionTokens, err
}

// ttft sends one streamed interactive request and returns the time to its
// first content token.
func ttft(prompt string) (time.Duration, error) {
	body := chatBody(prompt, 8)
	body["stream"] = true
	start := time.Now()
	resp, err := post("/v1/chat/completions", body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("stream: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	var first time.Duration
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &chunk) == nil && first == 0 && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			first = time.Since(start)
		}
	}
	if first == 0 {
		return 0, fmt.Errorf("stream without content")
	}
	return first, sc.Err()
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "batch bench:", err)
		os.Exit(2)
	}
}

func main() {
	flag.Parse()
	if *direct == 0 {
		*direct = 12 * *slots
	}
	log := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "batch bench: "+format+"\n", args...) }
	// other records the CPU share other processes took during each phase.
	other := map[string]float64{}
	phase := func(name string, f func()) {
		m, t := readCPU(), time.Now()
		f()
		other[name] = m.others(time.Since(t))
	}

	// Warm up: the model loads, the caches fill.
	for i := range 3 {
		_, err := complete(linePrompt(1000 + i))
		must(err)
		_, err = ttft(probePrompt(1000 + i))
		must(err)
	}

	// 1. Idle TTFT.
	var idle []time.Duration
	phase("idle", func() {
		for i := range *probes {
			d, err := ttft(probePrompt(i))
			must(err)
			idle = append(idle, d)
		}
	})
	log("idle TTFT p50 %s ms over %d requests", ms(p50(idle)), len(idle))

	// 2. The engine at full slots, the batch's requests sent directly.
	var directRate float64
	phase("direct", func() {
		var next, tokens atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range *slots {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= *direct {
						return
					}
					n, err := complete(linePrompt(10_000 + i))
					must(err)
					tokens.Add(int64(n))
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		directRate = float64(tokens.Load()) / wall.Seconds()
		log("full slots: %d requests, %d tokens in %v: %.1f tok/s", *direct, tokens.Load(), wall.Round(time.Millisecond), directRate)
	})

	// 3. The engine's own floor: interactive requests beside slots-1
	// direct requests decoding (what a batch that leaves them one slot
	// costs them, without the batch machinery).
	var floor []time.Duration
	phase("floor", func() {
		var stop atomic.Bool
		var wg sync.WaitGroup
		for j := range *slots - 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					_, err := complete(linePrompt(20_000 + 100*j + i))
					must(err)
				}
			}()
		}
		time.Sleep(time.Second)
		for i := range *probes {
			time.Sleep(*pause)
			d, err := ttft(probePrompt(200 + i))
			must(err)
			floor = append(floor, d)
		}
		stop.Store(true)
		wg.Wait()
	})
	log("TTFT p50 beside %d direct requests %s ms", *slots-1, ms(p50(floor)))

	// 4. The batch alone, then again with interactive requests during it.
	// First the window in which the engine keeps a slot for interactive
	// requests after the last one closes (engine.Config.InteractiveWindow):
	// alone, the batch has every slot.
	time.Sleep(*window)
	var aloneRate, batchRate float64
	var during []time.Duration
	phase("alone", func() {
		var wall time.Duration
		var tokens int
		aloneRate, _, wall, tokens = runBatch(false)
		log("batch alone: %d tokens in %v: %.1f tok/s", tokens, wall.Round(time.Millisecond), aloneRate)
	})
	phase("during", func() {
		var wall time.Duration
		var tokens int
		batchRate, during, wall, tokens = runBatch(true)
		log("batch with interactive requests: %d tokens in %v: %.1f tok/s; %d interactive requests during it",
			tokens, wall.Round(time.Millisecond), batchRate, len(during))
	})

	ratio := aloneRate / directRate
	slow := float64(p50(during)) / float64(p50(idle))
	okRate, okTTFT := ratio >= 0.90, slow <= 1.5
	mark := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	cpu := func(name string) string {
		if *serverPID == 0 {
			return "—"
		}
		return fmt.Sprintf("%.0f %%", other[name])
	}
	fmt.Printf("\n| measure | value | target | | others' CPU |\n|---|---:|---|---|---:|\n")
	fmt.Printf("| engine, %d slots, direct requests (aggregate decode) | %.1f tok/s | | | %s |\n", *slots, directRate, cpu("direct"))
	fmt.Printf("| batch of %d lines alone (output tokens / in_progress→completed) | %.1f tok/s | | | %s |\n", *lines, aloneRate, cpu("alone"))
	fmt.Printf("| batch alone / engine | %.1f %% | ≥ 90 %% | %s | |\n", 100*ratio, mark(okRate))
	fmt.Printf("| batch of %d lines with interactive requests | %.1f tok/s (%.1f %%) | | | %s |\n", *lines, batchRate, 100*batchRate/directRate, cpu("during"))
	fmt.Printf("| interactive TTFT p50, idle server (%d requests) | %s ms | | | %s |\n", len(idle), ms(p50(idle)), cpu("idle"))
	fmt.Printf("| interactive TTFT p50 beside %d direct requests, no batch (%d requests) | %s ms (%.2f×) | | | %s |\n", *slots-1, len(floor),
		ms(p50(floor)), float64(p50(floor))/float64(p50(idle)), cpu("floor"))
	fmt.Printf("| interactive TTFT p50 during the batch (%d requests) | %s ms | | | |\n", len(during), ms(p50(during)))
	fmt.Printf("| during / idle | %.2f× | ≤ 1.5× | %s | |\n", slow, mark(okTTFT))
	for name, pct := range other {
		if pct > 10 {
			fmt.Printf("\nWARNING: other processes took %.0f %% of the CPUs during the %q phase: its numbers are skewed\n", pct, name)
		}
	}
	fmt.Printf("\nRESULT batch_ratio=%.3f ttft_ratio=%.2f direct_tok_s=%.1f batch_tok_s=%.1f idle_ttft_ms=%s batch_ttft_ms=%s %s\n",
		ratio, slow, directRate, aloneRate, ms(p50(idle)), ms(p50(during)), mark(okRate && okTTFT))
	if !okRate || !okTTFT {
		os.Exit(1)
	}
}

// runBatch runs the -lines batch and returns its rate (output tokens over
// in_progress→completed), and, when probing, the TTFTs of interactive
// requests sent one at a time during it.
func runBatch(probing bool) (rate float64, during []time.Duration, wall time.Duration, tokens int) {
	var in bytes.Buffer
	for i := range *lines {
		b, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("line-%d", i), "method": "POST", "url": "/v1/chat/completions",
			"body": chatBody(linePrompt(i), *maxTokens)})
		in.Write(append(b, '\n'))
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "bench.jsonl")
	fw.Write(in.Bytes())
	mw.Close()
	req, _ := http.NewRequest("POST", *baseURL+"/v1/files", &form)
	req.Header.Set("Authorization", "Bearer "+*apiKey)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := client.Do(req)
	must(err)
	var file struct {
		ID string `json:"id"`
	}
	json.NewDecoder(resp.Body).Decode(&file)
	resp.Body.Close()
	if file.ID == "" {
		must(fmt.Errorf("upload: %d", resp.StatusCode))
	}
	resp, err = post("/v1/batches", map[string]any{"input_file_id": file.ID, "endpoint": "/v1/chat/completions", "completion_window": "24h"})
	must(err)
	var b batchObject
	json.NewDecoder(resp.Body).Decode(&b)
	resp.Body.Close()
	if b.ID == "" {
		must(fmt.Errorf("create batch: %d", resp.StatusCode))
	}

	// Follow the batch: the times it starts and ends, seen every 100 ms.
	var inProgress, completed time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var cur batchObject
			must(getJSON("/v1/batches/"+b.ID, &cur))
			now := time.Now()
			if inProgress.IsZero() && cur.Status != "validating" {
				inProgress = now
			}
			switch cur.Status {
			case "completed":
				completed, b = now, cur
				return
			case "failed", "expired", "cancelled":
				must(fmt.Errorf("batch %s", cur.Status))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for i := 0; probing; i++ {
		select {
		case <-done:
		default:
			time.Sleep(*pause)
			d, err := ttft(probePrompt(500 + i))
			must(err)
			select {
			case <-done:
				// Finished after the batch: not "during".
			default:
				during = append(during, d)
			}
			continue
		}
		break
	}
	<-done
	wall = completed.Sub(inProgress)
	if b.RequestCounts.Completed != *lines || probing && len(during) == 0 {
		must(fmt.Errorf("batch: %+v, %d probes", b.RequestCounts, len(during)))
	}
	return float64(b.Usage.OutputTokens) / wall.Seconds(), during, wall, b.Usage.OutputTokens

}

// cpuMeter measures the CPU time processes other than the server, its
// runners and this generator take: other work on the machine skews every
// number here, and the table says how much there was.
type cpuMeter struct{ busy, ours uint64 }

func readCPU() cpuMeter {
	var m cpuMeter
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		for i, v := range f[1:] {
			var n uint64
			fmt.Sscan(v, &n)
			if i != 3 && i != 4 { // idle, iowait
				m.busy += n
			}
		}
	}
	ticks := func(pid int) (uint64, int) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, 0
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		var ut, st uint64
		var ppid int
		fmt.Sscan(f[1], &ppid)
		fmt.Sscan(f[11], &ut)
		fmt.Sscan(f[12], &st)
		return ut + st, ppid
	}
	self, _ := ticks(os.Getpid())
	m.ours += self
	if *serverPID > 0 {
		t, _ := ticks(*serverPID)
		m.ours += t
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			var pid int
			if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == *serverPID {
				continue
			}
			if t, ppid := ticks(pid); ppid == *serverPID {
				m.ours += t
			}
		}
	}
	return m
}

// others is the share of the machine's CPU others took since m, over
// elapsed.
func (m cpuMeter) others(elapsed time.Duration) float64 {
	now := readCPU()
	other := float64(now.busy-m.busy) - float64(now.ours-m.ours)
	cap := elapsed.Seconds() * 100 * float64(runtime.NumCPU()) // USER_HZ
	if other < 0 || cap <= 0 {
		return 0
	}
	return 100 * other / cap
}

type batchObject struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	RequestCounts struct {
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
	Usage struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}
