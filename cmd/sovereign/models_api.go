package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apiclient"
)

// The `sovereign models` subcommands below talk to a running server over
// its HTTP API (the local ones in models_cmd.go work on the models
// directory).

// defaultServerURL is where `sovereign serve` listens by default.
const defaultServerURL = "http://127.0.0.1:8080"

// apiModelCommands are the subcommands that go through the API.
var apiModelCommands = []string{"catalog", "show", "add", "set", "remove", "load", "unload", "compare"}

// apiModel is the part of the API's model object the CLI shows.
type apiModel struct {
	ID            string   `json:"id"`
	Backend       string   `json:"backend"`
	Source        string   `json:"source"`
	Capabilities  []string `json:"capabilities"`
	ContextLength uint64   `json:"context_length"`
	Status        string   `json:"status"`
	StatusReason  string   `json:"status_reason"`
	Aliases       []string `json:"aliases"`
	Limits        struct {
		MaxInputTokens  int `json:"max_input_tokens"`
		MaxOutputTokens int `json:"max_output_tokens"`
	} `json:"limits"`
	Deprecation *struct {
		DeprecatedAt *time.Time `json:"deprecated_at"`
		Sunset       *time.Time `json:"sunset"`
		Replacement  string     `json:"replacement"`
	} `json:"deprecation"`
	Upstream *struct {
		Model    string `json:"model"`
		Replicas []struct {
			URL       string `json:"url"`
			Healthy   bool   `json:"healthy"`
			Breaker   string `json:"breaker"`
			LastError string `json:"last_error"`
		} `json:"replicas"`
	} `json:"upstream"`
	Stats struct {
		Requests              int     `json:"requests"`
		Errors                int     `json:"errors"`
		LatencyP50Ms          float64 `json:"latency_p50_ms"`
		DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	} `json:"stats"`
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// apiFlags are the flags every API subcommand takes.
type apiFlags struct {
	url, key string
}

func (a *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.url, "url", a.url, "server URL (default $SOVEREIGN_URL, else "+defaultServerURL+")")
	fs.StringVar(&a.key, "api-key", a.key, "API key (default $SOVEREIGN_API_KEY)")
}

func (a *apiFlags) client() *apiclient.Client {
	base, key := a.url, a.key
	if base == "" {
		base = os.Getenv("SOVEREIGN_URL")
	}
	if base == "" {
		base = defaultServerURL
	}
	if key == "" {
		key = os.Getenv("SOVEREIGN_API_KEY")
	}
	return apiclient.New(base, key)
}

func modelPath(id string, op ...string) string {
	p := "/v1/models/" + url.PathEscape(id)
	for _, o := range op {
		p += "/" + o
	}
	return p
}

// modelsAPICommand runs one of apiModelCommands; fs already holds the
// common flags.
func modelsAPICommand(ctx context.Context, sub string, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	api.register(fs)
	switch sub {
	case "catalog":
		return catalogCmd(ctx, fs, api, args, stdout)
	case "show":
		return showCmd(ctx, fs, api, args, stdout)
	case "add":
		return addCmd(ctx, fs, api, args, stdout)
	case "set":
		return setCmd(ctx, fs, api, args, stdout)
	case "remove":
		return removeCmd(ctx, fs, api, args, stdout)
	case "load", "unload":
		return loadCmd(ctx, sub, fs, api, args, stdout)
	case "compare":
		return compareCmd(ctx, fs, api, args, stdout)
	}
	return fmt.Errorf("models: unknown subcommand %q", sub)
}

// oneID parses args and returns the single positional model id.
func oneID(sub string, fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", fmt.Errorf("models %s: want exactly one model ID; see `sovereign models -h`", sub)
	}
	return pos[0], nil
}

func catalogCmd(ctx context.Context, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return errors.New("models catalog: takes no arguments")
	}
	c := api.client()
	var list struct {
		Data []apiModel `json:"data"`
	}
	if _, err := c.Do(ctx, http.MethodGet, "/v1/models", nil, &list); err != nil {
		return err
	}
	if len(list.Data) == 0 {
		fmt.Fprintf(stdout, "The server at %s has no models. Install one with `sovereign models pull --defaults`, or add an upstream one with `sovereign models add ID --base-url URL`.\n", c.Base)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tBACKEND\tSTATUS\tCAPABILITIES\tCTX\tALIASES\tREQ/1H\tERR\tP50\tTOK/S")
	var notes []string
	for _, m := range list.Data {
		ctxLen := "-"
		if m.ContextLength > 0 {
			ctxLen = fmt.Sprint(m.ContextLength)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", m.ID, m.Backend, m.Status, orDash(strings.Join(m.Capabilities, ",")),
			ctxLen, orDash(strings.Join(m.Aliases, ",")), m.Stats.Requests, m.Stats.Errors, formatMs(m.Stats.LatencyP50Ms), formatRate(m.Stats.DecodeTokensPerSecond))
		if m.Deprecation != nil {
			notes = append(notes, m.ID+" is deprecated"+deprecationDetail(m))
		}
		if m.Status == "failed" && m.StatusReason != "" {
			notes = append(notes, m.ID+" failed: "+m.StatusReason)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(stdout)
		for _, n := range notes {
			fmt.Fprintln(stdout, n)
		}
	}
	fmt.Fprintln(stdout, "\nFigures cover the last hour. Details of one model: sovereign models show ID")
	return nil
}

func deprecationDetail(m apiModel) string {
	d := m.Deprecation
	var parts []string
	if d.Sunset != nil {
		parts = append(parts, "sunset "+d.Sunset.UTC().Format(time.RFC3339))
	}
	if d.Replacement != "" {
		parts = append(parts, "use "+d.Replacement)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func formatMs(ms float64) string {
	switch {
	case ms <= 0:
		return "-"
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	}
	return fmt.Sprintf("%.2fs", ms/1000)
}

func formatRate(r float64) string {
	if r <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", r)
}

func showCmd(ctx context.Context, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	id, err := oneID("show", fs, args)
	if err != nil {
		return err
	}
	raw, err := api.client().Do(ctx, http.MethodGet, modelPath(id), nil, nil)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("the answer is not JSON: %v", err)
	}
	out.WriteByte('\n')
	_, err = stdout.Write(out.Bytes())
	return err
}

func addCmd(ctx context.Context, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	var replicas, aliases stringList
	baseURL := fs.String("base-url", "", "the upstream's OpenAI base URL (http://host:8000/v1)")
	fs.Var(&replicas, "replica", "another base URL serving the same model (repeatable)")
	upstreamModel := fs.String("upstream-model", "", "the model's name on the upstream (default ID)")
	keyEnv := fs.String("api-key-env", "", "environment variable holding the upstream's API key (read here, sent to the server)")
	caps := fs.String("capabilities", "", "comma-separated: chat, completions, embeddings, rerank (upstream default chat,completions)")
	fs.Var(&aliases, "alias", "another name for the model (repeatable)")
	ctxLen := fs.Uint64("context-length", 0, "the model's context length in tokens")
	path := fs.String("path", "", "a GGUF file on the server's machine (a local model)")
	id, err := oneID("add", fs, args)
	if err != nil {
		return err
	}
	spec := map[string]any{}
	upstream := *baseURL != "" || len(replicas) > 0
	switch {
	case upstream && *path != "":
		return errors.New("models add: give --base-url (an upstream model) or --path (a local GGUF), not both")
	case upstream:
		if *baseURL != "" {
			spec["base_url"] = *baseURL
		}
		if len(replicas) > 0 {
			spec["replicas"] = []string(replicas)
		}
		if *upstreamModel != "" {
			spec["upstream_model"] = *upstreamModel
		}
		if *keyEnv != "" {
			key := os.Getenv(*keyEnv)
			if key == "" {
				return fmt.Errorf("models add: --api-key-env %s: the variable is not set (or empty) here", *keyEnv)
			}
			spec["api_key"] = key
		}
	case *path != "":
		if *upstreamModel != "" || *keyEnv != "" {
			return errors.New("models add: --upstream-model and --api-key-env apply to upstream models (--base-url)")
		}
		p, err := filepath.Abs(*path)
		if err != nil {
			return err
		}
		spec["path"] = p
	default:
		return errors.New("models add: give --base-url URL for an upstream model or --path FILE.gguf for a local one")
	}
	if *caps != "" {
		var list []string
		for _, c := range strings.Split(*caps, ",") {
			if c = strings.TrimSpace(c); c != "" {
				list = append(list, c)
			}
		}
		spec["capabilities"] = list
	}
	if len(aliases) > 0 {
		spec["aliases"] = []string(aliases)
	}
	if *ctxLen > 0 {
		spec["context_length"] = *ctxLen
	}
	c := api.client()
	var m apiModel
	if _, err := c.Do(ctx, http.MethodPost, modelPath(id), spec, &m); err != nil {
		return err
	}
	what := "a local model"
	if m.Upstream != nil {
		what = fmt.Sprintf("upstream %q on %d replica(s)", m.Upstream.Model, len(m.Upstream.Replicas))
	}
	fmt.Fprintf(stdout, "Model %s added (%s; status %s).\n", m.ID, what, m.Status)
	if len(m.Aliases) > 0 {
		fmt.Fprintf(stdout, "Aliases: %s\n", strings.Join(m.Aliases, ", "))
	}
	fmt.Fprintf(stdout, "\nTry it:\n\n%s\n\nCheck its state and replicas with `sovereign models show %s`.\n", tryCurl(c.Base, m), m.ID)
	return nil
}

// tryCurl is a request a person can paste to use model m.
func tryCurl(base string, m apiModel) string {
	has := func(c string) bool {
		for _, x := range m.Capabilities {
			if x == c {
				return true
			}
		}
		return false
	}
	path, body := "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Hello!"}]}`, m.ID)
	switch {
	case has("chat"):
	case has("embeddings"):
		path, body = "/v1/embeddings", fmt.Sprintf(`{"model":%q,"input":"Hello!"}`, m.ID)
	case has("completions"):
		path, body = "/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":"Hello"}`, m.ID)
	case has("rerank"):
		path, body = "/v1/rerank", fmt.Sprintf(`{"model":%q,"query":"capital of France","documents":["Paris","Berlin"]}`, m.ID)
	}
	return fmt.Sprintf("  curl -s %s%s \\\n    -H \"Authorization: Bearer $SOVEREIGN_API_KEY\" -H 'Content-Type: application/json' \\\n    -d '%s'", base, path, body)
}

// parseDay reads 2027-01-31 (midnight UTC) or an RFC 3339 time.
func parseDay(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date: use 2027-01-31 or 2027-01-31T12:00:00Z", s)
	}
	return t, nil
}

func setCmd(ctx context.Context, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	var aliases stringList
	fs.Var(&aliases, "alias", "the model's aliases, replacing the current ones (repeatable)")
	noAliases := fs.Bool("no-aliases", false, "remove every alias")
	maxIn := fs.Int("max-input-tokens", -1, "refuse longer prompts (0: back to the context length)")
	maxOut := fs.Int("max-output-tokens", -1, "refuse a larger max_tokens, and the default max_tokens (0: no limit)")
	deprecate := fs.Bool("deprecate", false, "mark the model deprecated (with --sunset and --replacement)")
	sunset := fs.String("sunset", "", "from this date (2027-01-31, UTC) requests get 410 model_retired")
	replacement := fs.String("replacement", "", "the model to move to")
	undeprecate := fs.Bool("undeprecate", false, "remove the deprecation")
	id, err := oneID("set", fs, args)
	if err != nil {
		return err
	}
	c := api.client()
	patch := map[string]any{}
	switch {
	case *noAliases && len(aliases) > 0:
		return errors.New("models set: --alias and --no-aliases contradict each other")
	case *noAliases:
		patch["aliases"] = nil
	case len(aliases) > 0:
		patch["aliases"] = []string(aliases)
	}
	if *maxIn >= 0 || *maxOut >= 0 {
		// PATCH replaces limits whole: keep the limit not being set.
		var cur apiModel
		if _, err := c.Do(ctx, http.MethodGet, modelPath(id), nil, &cur); err != nil {
			return err
		}
		lim := map[string]any{}
		if l := cur.Limits.MaxInputTokens; l > 0 && uint64(l) != cur.ContextLength {
			lim["max_input_tokens"] = l
		}
		if l := cur.Limits.MaxOutputTokens; l > 0 {
			lim["max_output_tokens"] = l
		}
		for name, v := range map[string]int{"max_input_tokens": *maxIn, "max_output_tokens": *maxOut} {
			switch {
			case v > 0:
				lim[name] = v
			case v == 0:
				delete(lim, name)
			}
		}
		if len(lim) == 0 {
			patch["limits"] = nil
		} else {
			patch["limits"] = lim
		}
	}
	wantDeprecation := *deprecate || *sunset != "" || *replacement != ""
	switch {
	case wantDeprecation && *undeprecate:
		return errors.New("models set: --undeprecate contradicts --deprecate, --sunset and --replacement")
	case *undeprecate:
		patch["deprecation"] = nil
	case wantDeprecation:
		d := map[string]any{}
		if *sunset != "" {
			t, err := parseDay(*sunset)
			if err != nil {
				return fmt.Errorf("models set: --sunset: %v", err)
			}
			d["sunset"] = t.UTC().Format(time.RFC3339)
		}
		if *replacement != "" {
			d["replacement"] = *replacement
		}
		patch["deprecation"] = d
	}
	if len(patch) == 0 {
		return errors.New("models set: nothing to change; give --alias, --no-aliases, --max-input-tokens, --max-output-tokens, --deprecate (--sunset, --replacement) or --undeprecate")
	}
	var m apiModel
	if _, err := c.Do(ctx, http.MethodPatch, modelPath(id), patch, &m); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Model %s updated.\n", m.ID)
	fmt.Fprintf(stdout, "  aliases: %s\n", orDash(strings.Join(m.Aliases, ", ")))
	fmt.Fprintf(stdout, "  limits:  max input tokens %s, max output tokens %s\n", intOrDash(m.Limits.MaxInputTokens), intOrDash(m.Limits.MaxOutputTokens))
	if m.Deprecation != nil {
		fmt.Fprintf(stdout, "  deprecated%s\n", deprecationDetail(m))
		fmt.Fprintln(stdout, "Its responses now carry Deprecation (and Sunset, Link) headers; after the sunset its requests get 410 model_retired.")
	} else if *undeprecate {
		fmt.Fprintln(stdout, "  no longer deprecated")
	}
	return nil
}

func intOrDash(n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func removeCmd(ctx context.Context, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	id, err := oneID("remove", fs, args)
	if err != nil {
		return err
	}
	c := api.client()
	var before apiModel
	if _, err := c.Do(ctx, http.MethodGet, modelPath(id), nil, &before); err != nil {
		return err
	}
	if before.ID != id {
		return fmt.Errorf("models remove: %q is an alias of %s; remove %s by its id, or drop the alias with `sovereign models set %s --alias …`", id, before.ID, before.ID, before.ID)
	}
	if _, err := c.Do(ctx, http.MethodDelete, modelPath(id), nil, nil); err != nil {
		return err
	}
	switch before.Source {
	case "installed":
		fmt.Fprintf(stdout, "Removed %s and its files from the server's models directory.\n", id)
	default:
		fmt.Fprintf(stdout, "Removed %s's configuration.\n", id)
		var after apiModel
		if _, err := c.Do(ctx, http.MethodGet, modelPath(id), nil, &after); err == nil {
			fmt.Fprintf(stdout, "%s is still installed, with its default settings; `sovereign models remove %s` again deletes its files.\n", id, id)
		}
	}
	fmt.Fprintln(stdout, "See what is left with `sovereign models catalog`.")
	return nil
}

func loadCmd(ctx context.Context, sub string, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	id, err := oneID(sub, fs, args)
	if err != nil {
		return err
	}
	var m apiModel
	if _, err := api.client().Do(ctx, http.MethodPost, modelPath(id, sub), nil, &m); err != nil {
		return err
	}
	if sub == "unload" {
		fmt.Fprintf(stdout, "%s unloaded (status %s); the next request for it loads it again.\n", m.ID, m.Status)
		return nil
	}
	if m.Status == "failed" {
		return fmt.Errorf("models load: %s failed: %s", m.ID, orDash(m.StatusReason))
	}
	fmt.Fprintf(stdout, "%s is %s.\n", m.ID, m.Status)
	if m.Upstream != nil {
		for _, r := range m.Upstream.Replicas {
			state := "healthy"
			if !r.Healthy {
				state = "unhealthy (breaker " + r.Breaker + ")"
				if r.LastError != "" {
					state += ": " + r.LastError
				}
			}
			fmt.Fprintf(stdout, "  %s  %s\n", r.URL, state)
		}
	}
	return nil
}

// compareResult is one model's part of POST /v1/models/compare.
type compareResult struct {
	Model  string `json:"model"`
	Status string `json:"status"`
	Output *struct {
		Content      string `json:"content"`
		FinishReason string `json:"finish_reason"`
	} `json:"output"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	LatencyMs       float64  `json:"latency_ms"`
	TTFTMs          *float64 `json:"ttft_ms"`
	TokensPerSecond *float64 `json:"tokens_per_second"`
	Error           *struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	} `json:"error"`
}

func compareCmd(ctx context.Context, fs *flag.FlagSet, api *apiFlags, args []string, stdout io.Writer) error {
	var models stringList
	fs.Var(&models, "model", "a model to compare (repeat 2 to 5 times)")
	maxTokens := fs.Int("max-tokens", 0, "most tokens each model generates (default: each model's own default)")
	temperature := fs.Float64("temperature", -1, "sampling temperature (default: the server's)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	prompt := strings.Join(pos, " ")
	if prompt == "" {
		return errors.New("models compare: want a PROMPT, e.g. sovereign models compare --model a --model b 'Name three rivers'")
	}
	if len(models) < 2 || len(models) > 5 {
		return fmt.Errorf("models compare: give 2 to 5 --model flags (got %d)", len(models))
	}
	req := map[string]any{"models": []string(models), "messages": []map[string]string{{"role": "user", "content": prompt}}}
	if *maxTokens > 0 {
		req["max_tokens"] = *maxTokens
	}
	if *temperature >= 0 {
		req["temperature"] = *temperature
	}
	var out struct {
		Results []compareResult `json:"results"`
	}
	if _, err := api.client().Do(ctx, http.MethodPost, "/v1/models/compare", req, &out); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSTATUS\tLATENCY\tTTFT\tTOK/S\tTOKENS")
	failed := 0
	for _, r := range out.Results {
		ttft, tps, toks := "-", "-", "-"
		if r.TTFTMs != nil {
			ttft = formatMs(*r.TTFTMs)
		}
		if r.TokensPerSecond != nil {
			tps = formatRate(*r.TokensPerSecond)
		}
		if r.Usage != nil {
			toks = fmt.Sprint(r.Usage.CompletionTokens)
		}
		if r.Status != "succeeded" {
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Model, r.Status, formatMs(r.LatencyMs), ttft, tps, toks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range out.Results {
		switch {
		case r.Output != nil:
			fmt.Fprintf(stdout, "\n--- %s (finish: %s) ---\n%s\n", r.Model, orDash(r.Output.FinishReason), strings.TrimSpace(r.Output.Content))
		case r.Error != nil:
			fmt.Fprintf(stdout, "\n--- %s (failed: %s) ---\n%s\n", r.Model, r.Error.Error.Code, r.Error.Error.Message)
		}
	}
	if failed > 0 {
		return fmt.Errorf("models compare: %d of %d models failed (see above)", failed, len(out.Results))
	}
	return nil
}
