package llamacpp_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/llamacpp"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// templateCorpus returns the chat templates llama.cpp's source carries
// (models/templates/*.jinja: Llama, Qwen, Mistral, Gemma, DeepSeek, gpt-oss,
// Granite, Phi, Hermes, Functionary, Command-R, …), which are llama.cpp's
// own test corpus for its chat code.
func templateCorpus(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", "scripts/llama-cpp.sh", "source")
	cmd.Dir = testutil.RepoRoot()
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unpacking llama.cpp's source: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "models", "templates", "*.jinja"))
	if err != nil || len(files) < 50 {
		t.Fatalf("llama.cpp's template corpus: %d files (%v)", len(files), err)
	}
	corpus := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		corpus[strings.TrimSuffix(filepath.Base(f), ".jinja")] = string(b)
	}
	return corpus
}

var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_weather", "description": "Current weather in a city",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
}}

// renders are the conversations each template renders into its golden file.
var renders = []struct {
	name string
	req  llamacpp.ChatRequest
}{
	{"chat", llamacpp.ChatRequest{AddGenerationPrompt: true, Messages: []map[string]any{
		{"role": "system", "content": "You are terse."},
		{"role": "user", "content": "Hi."},
		{"role": "assistant", "content": "Hello."},
		{"role": "user", "content": "Name a colour."},
	}}},
	{"tools", llamacpp.ChatRequest{AddGenerationPrompt: true, Tools: []map[string]any{weatherTool}, ToolChoice: "auto", Messages: []map[string]any{
		{"role": "user", "content": "Weather in Paris?"},
	}}},
	{"tool round trip", llamacpp.ChatRequest{AddGenerationPrompt: true, Tools: []map[string]any{weatherTool}, ToolChoice: "auto", Messages: []map[string]any{
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}},
		{"role": "tool", "tool_call_id": "call_1", "content": `{"temp_c":18}`},
	}}},
}

// TestChatTemplateCorpus renders three conversations (plain chat, a tool
// offered, a tool call and its result) with every template of llama.cpp's
// corpus and compares the prompts, the output format and any grammar
// with golden files (testdata/templates/<name>.txt; go test -update
// rewrites them). A template that cannot render a conversation has its
// error in the golden file instead, so a change either way shows.
func TestChatTemplateCorpus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()
	corpus := templateCorpus(t)
	rendered, withTools := 0, 0
	for name, src := range corpus {
		var b strings.Builder
		ch, err := llamacpp.NewChatTemplate(src, "<s>", "</s>")
		if err != nil {
			b.WriteString("load error: " + err.Error() + "\n")
		} else {
			for i, r := range renders {
				r.req.Now = now
				b.WriteString("=== " + r.name + "\n")
				p, err := ch.Apply(r.req)
				if err != nil {
					b.WriteString("error: " + err.Error() + "\n")
					continue
				}
				if i == 0 {
					rendered++
				}
				if i == 1 && strings.Contains(p.Prompt, "get_weather") {
					withTools++
				}
				b.WriteString("format: " + p.Format + "\n")
				if p.Grammar != "" {
					b.WriteString("grammar lazy: " + map[bool]string{true: "yes", false: "no"}[p.GrammarLazy] + "\n")
				}
				b.WriteString("--- prompt\n" + p.Prompt + "\n")
			}
			ch.Free()
		}
		got := todayless(b.String())
		golden := filepath.Join("testdata", "templates", name+".txt")
		if *update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%s: %v (go test ./internal/llamacpp -run TestChatTemplateCorpus -update writes it)", name, err)
			continue
		}
		if string(want) != got {
			t.Errorf("%s: rendering differs from %s:\n%s", name, golden, got)
		}
	}
	t.Logf("%d templates: %d render a chat, %d show an offered tool in the prompt", len(corpus), rendered, withTools)
	if rendered < len(corpus)*9/10 {
		t.Errorf("only %d of %d templates render a plain chat", rendered, len(corpus))
	}
}

// TestChatParserReadsToolCalls renders a tool request with Qwen 2.5's and
// Llama 3.1's templates and parses model output in each family's own
// tool-call format back into OpenAI tool calls; plain text stays content,
// and a stream's unfinished call is not reported as finished.
func TestChatParserReadsToolCalls(t *testing.T) {
	corpus := templateCorpus(t)
	for _, c := range []struct {
		template, output, partial string
		grammar                   bool // the format has a tool-call grammar in this llama.cpp
	}{
		{"Qwen-Qwen2.5-7B-Instruct", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "<tool_call>\n{\"name\": \"get_wea", true},
		{"meta-llama-Llama-3.1-8B-Instruct", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "{\"name\": \"get_wea", false},
	} {
		ch, err := llamacpp.NewChatTemplate(corpus[c.template], "<s>", "</s>")
		if err != nil {
			t.Fatal(err)
		}
		p, err := ch.Apply(llamacpp.ChatRequest{AddGenerationPrompt: true, Tools: []map[string]any{weatherTool}, ToolChoice: "auto",
			Messages: []map[string]any{{"role": "user", "content": "Weather in Paris?"}}})
		if err != nil {
			t.Fatalf("%s: %v", c.template, err)
		}
		if (p.Grammar != "") != c.grammar {
			t.Errorf("%s: grammar %q", c.template, p.Grammar)
		}
		pr, err := llamacpp.NewChatParser(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := pr.Parse(c.output, false)
		if err != nil {
			t.Fatalf("%s: %v", c.template, err)
		}
		if len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "get_weather" || strings.ReplaceAll(m.ToolCalls[0].Function.Arguments, " ", "") != `{"city":"Paris"}` || m.Content != "" {
			t.Errorf("%s: parsed %q into %+v", c.template, c.output, m)
		}
		if m, err = pr.Parse(c.partial, true); err != nil || len(m.ToolCalls) > 0 && m.ToolCalls[0].Function.Name == "get_weather" {
			t.Errorf("%s: partial %q parsed into %+v, %v", c.template, c.partial, m, err)
		}
		if m, err = pr.Parse("It is sunny.", false); err != nil || m.Content != "It is sunny." || len(m.ToolCalls) != 0 {
			t.Errorf("%s: plain text parsed into %+v, %v", c.template, m, err)
		}
		pr.Free()
		ch.Free()
	}
}

// todayless replaces today's date in a rendered prompt with "{today}":
// llama.cpp's strftime_now reads the clock (its Jinja context ignores the
// request's now), and a golden file must not change with the day.
func todayless(s string) string {
	now := time.Now()
	for _, layout := range []string{"2006-01-02", "02 Jan 2006", "Jan 02 2006", "January 02, 2006", "2 Jan 2006", "Jan 2 2006", "January 2, 2006"} {
		s = strings.ReplaceAll(s, now.Format(layout), "{today}")
	}
	return s
}
