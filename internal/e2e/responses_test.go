package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/upstream/upstreamtest"
)

// TestOpenAIGoSDKResponses drives the Responses API through OpenAI's
// official Go SDK on the default model: a plain answer, a stream (the
// SDK's accumulator rebuilds the same answer from the events), a required
// function call and its output sent back, previous_response_id
// continuing a conversation, and retrieve, input_items and delete.
func TestOpenAIGoSDKResponses(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	client := openai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0))
	ctx := context.Background()
	base := func(input string) responses.ResponseNewParams {
		return responses.ResponseNewParams{
			Model:           "gemma3-270m",
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
			Instructions:    openai.String("Answer in one short sentence."),
			MaxOutputTokens: openai.Int(24),
			Temperature:     openai.Float(0),
		}
	}

	plain, err := client.Responses.New(ctx, base("What is the capital of France?"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Status != "completed" && plain.Status != "incomplete" || !strings.Contains(plain.OutputText(), "Paris") ||
		!strings.HasPrefix(plain.ID, "resp_") || plain.Usage.InputTokens == 0 || plain.Usage.OutputTokens == 0 {
		t.Fatalf("plain: %s", plain.RawJSON())
	}

	stream := client.Responses.NewStreaming(ctx, base("What is the capital of France?"))
	var types []string
	seq := int64(-1)
	var completed responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.SequenceNumber != seq+1 {
			t.Fatalf("sequence %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		if ev.Type == "response.completed" || ev.Type == "response.incomplete" {
			completed = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"}
	if len(types) < 9 || strings.Join(types[:5], " ") != strings.Join(want, " ") ||
		strings.Join(types[len(types)-4:len(types)-1], " ") != "response.output_text.done response.content_part.done response.output_item.done" {
		t.Fatalf("event types: %v", types)
	}
	if completed.OutputText() != plain.OutputText() {
		t.Fatalf("streamed %q, plain %q", completed.OutputText(), plain.OutputText())
	}

	// A required function call, then its output back with
	// previous_response_id: the model answers from it.
	p := base("What is the weather in Rome?")
	p.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "required": []string{"city"}, "additionalProperties": false,
		"properties": map[string]any{"city": map[string]any{"type": "string", "enum": []string{"Paris", "Rome"}}}}, true)}
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}
	p.ParallelToolCalls = openai.Bool(false)
	p.MaxOutputTokens = openai.Int(64)
	called, err := client.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseFunctionToolCall
	for _, o := range called.Output {
		if o.Type == "function_call" {
			call = o.AsFunctionCall()
		}
	}
	var args struct{ City string }
	if call.Name != "get_weather" || !strings.HasPrefix(call.CallID, "call_") || json.Unmarshal([]byte(call.Arguments), &args) != nil || args.City == "" {
		t.Fatalf("function call: %s", called.RawJSON())
	}
	next := base("")
	next.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c": 21, "sky": "sunny"}`),
	}}
	next.Input.OfInputItemList[0].OfFunctionCallOutput.CallID = openai.String(call.CallID)
	next.PreviousResponseID = openai.String(called.ID)
	next.MaxOutputTokens = openai.Int(32)
	answer, err := client.Responses.New(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if answer.OutputText() == "" || answer.PreviousResponseID != called.ID {
		t.Fatalf("answer from the tool output: %s", answer.RawJSON())
	}

	got, err := client.Responses.Get(ctx, answer.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != answer.ID || got.OutputText() != answer.OutputText() {
		t.Fatalf("retrieve: %v %v", got, err)
	}
	items, err := client.Responses.InputItems.List(ctx, called.ID, responses.InputItemListParams{})
	if err != nil || len(items.Data) != 1 || items.Data[0].Type != "message" {
		t.Fatalf("input items: %+v %v", items, err)
	}
	if err := client.Responses.Delete(ctx, answer.ID); err != nil {
		t.Fatal(err)
	}
	var apiErr *openai.Error
	if _, err := client.Responses.Get(ctx, answer.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("deleted response: %v", err)
	}
}

// TestResponsesMechanics checks the Responses API's refusals and
// isolation on the tiny model: a bad input item names its place, a team
// cannot read another team's response, store: false keeps nothing, and an
// unknown previous_response_id is a 404 naming the field.
func TestResponsesMechanics(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	post := func(key string, body any) (*http.Response, map[string]any) {
		resp := e.request(key, "POST", "/v1/responses", body)
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	for _, c := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"model": "tiny"}, "input"},
		{map[string]any{"model": "tiny", "input": []any{map[string]any{"type": "reasoning"}}}, "input[0].type"},
		{map[string]any{"model": "tiny", "input": []any{map[string]any{"role": "robot", "content": "x"}}}, "input[0].role"},
		{map[string]any{"model": "tiny", "input": "x", "tools": []any{map[string]any{"type": "web_search"}}}, "tools[0].type"},
		{map[string]any{"model": "tiny", "input": "x", "tools": []any{map[string]any{"type": "function", "name": "bad name"}}}, "tools[0].name"},
		{map[string]any{"model": "tiny", "input": "x", "text": map[string]any{"format": map[string]any{"type": "xml"}}}, "text.format.type"},
		// The local backend compiles the schema, and names the field when it cannot.
		{map[string]any{"model": "tiny", "input": "x", "text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": map[string]any{"type": "decimal"}}}}, "text.format"},
		{map[string]any{"model": "tiny", "input": "x", "truncation": "auto"}, "truncation"},
		{map[string]any{"model": "tiny", "input": "x", "background": true}, "background"},
		{map[string]any{"model": "tiny", "input": "x", "previous_response_id": "resp_nope"}, "previous_response_id"},
	} {
		resp, out := post(e.key, c.body)
		errObj, _ := out["error"].(map[string]any)
		if resp.StatusCode/100 != 4 || errObj == nil || errObj["param"] != c.param {
			t.Errorf("%v: %d %v, want an error on %s", c.body, resp.StatusCode, out, c.param)
		}
	}

	// Greedy: a sampled token can be the end of text, and the answer
	// would then be complete before its limit (a flake seen once).
	resp, out := post(e.key, map[string]any{"model": "tiny", "input": "Once upon", "max_output_tokens": 4, "temperature": 0})
	id, _ := out["id"].(string)
	if resp.StatusCode != 200 || out["object"] != "response" || out["status"] != "incomplete" || id == "" {
		t.Fatalf("tiny response: %d %v", resp.StatusCode, out)
	}
	other := teamKey(t, e, "other")
	for _, path := range []string{"/v1/responses/" + id, "/v1/responses/" + id + "/input_items"} {
		r := e.request(other, "GET", path, nil)
		r.Body.Close()
		if r.StatusCode != 404 {
			t.Fatalf("another team's GET %s: %d", path, r.StatusCode)
		}
	}
	if r := e.request(other, "DELETE", "/v1/responses/"+id, nil); r.StatusCode != 404 {
		t.Fatalf("another team's DELETE: %d", r.StatusCode)
	}
	_, out = post(e.key, map[string]any{"model": "tiny", "input": "Once upon", "max_output_tokens": 2, "store": false})
	r := e.request(e.key, "GET", "/v1/responses/"+out["id"].(string), nil)
	r.Body.Close()
	if r.StatusCode != 404 {
		t.Fatalf("a store: false response was kept: %d", r.StatusCode)
	}
}

// TestResponsesRelayToUpstreams: an upstream declared with the responses
// capability gets /responses relayed as sent, events included; one
// without it gets the request as chat completions.
func TestResponsesRelayToUpstreams(t *testing.T) {
	up := upstreamtest.New(t, "r")
	serving := upstreamSpec("serving", up.BaseURL())
	serving.Capabilities = []string{"chat", "responses"}
	chatonly := upstreamSpec("chatonly", up.BaseURL())
	chatonly.Capabilities = []string{"chat", "tools"}
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{serving, chatonly})

	events := []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_up\",\"model\":\"mock\",\"status\":\"in_progress\",\"x_vendor\":1}}",
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"Hi\"}",
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_up\",\"model\":\"mock\",\"status\":\"completed\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1,\"total_tokens\":4}}}",
	}
	up.SetScript(&upstreamtest.Script{Events: events})
	body := `{"model":"serving","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,AA=="}]}],"stream":true,"reasoning":{"effort":"low"}}`
	resp := e.post(context.Background(), "/v1/responses", []byte(body))
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(got), "input[0].content") {
		t.Fatalf("an image to a model without vision: %d %s", resp.StatusCode, got)
	}
	body = strings.Replace(body, `,{"type":"input_image","image_url":"data:image/png;base64,AA=="}`, "", 1)
	resp = e.post(context.Background(), "/v1/responses", []byte(body))
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(up.LastRawBody()) != strings.Replace(body, `"model":"serving"`, `"model":"mock"`, 1) {
		t.Fatalf("the upstream got %s", up.LastRawBody())
	}
	var want strings.Builder
	for _, ev := range events {
		want.WriteString(strings.ReplaceAll(ev, `"model":"mock"`, `"model":"serving"`) + "\n\n")
	}
	if resp.StatusCode != 200 || string(got) != want.String() {
		t.Fatalf("relayed events: %d\n%s\nwant\n%s", resp.StatusCode, got, want.String())
	}

	up.SetScript(nil)
	resp = e.post(context.Background(), "/v1/responses", map[string]any{"model": "chatonly", "input": "hi", "store": false})
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || up.LastBody()["messages"] == nil {
		t.Fatalf("translated to chat: %d %v; upstream got %v", resp.StatusCode, out, up.LastBody())
	}
	text := out["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
	if text != up.Reply() {
		t.Fatalf("output text %v, want %q", text, up.Reply())
	}

	// A function tool through the chat translation: the upstream gets
	// OpenAI's chat tools, its tool_calls come back as a function_call
	// item, and the call's output goes back as chat tool turns.
	up.SetScript(&upstreamtest.Script{Body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"mock","choices":[{"index":0,"finish_reason":"tool_calls",` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_up1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}}],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`})
	tool := map[string]any{"type": "function", "name": "get_weather", "parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}
	resp = e.post(context.Background(), "/v1/responses", map[string]any{"model": "chatonly", "input": "Weather in Oslo?", "tools": []any{tool}, "tool_choice": "required"})
	var called struct {
		ID     string
		Output []struct {
			Type, Name, Arguments string
			CallID                string `json:"call_id"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&called)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(called.Output) != 1 || called.Output[0].Type != "function_call" || called.Output[0].CallID != "call_up1" || called.Output[0].Arguments != `{"city":"Oslo"}` {
		t.Fatalf("function call from the upstream: %d %+v", resp.StatusCode, called)
	}
	sent := up.LastBody()
	if tools, _ := sent["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["function"].(map[string]any)["name"] != "get_weather" || sent["tool_choice"] != "required" {
		t.Fatalf("the upstream got tools %v, tool_choice %v", sent["tools"], sent["tool_choice"])
	}
	// Streamed: the upstream's tool-call deltas become the function call
	// item's events.
	up.SetScript(&upstreamtest.Script{Events: []string{
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"mock","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_up2","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"mock","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"mock","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"mock","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: [DONE]`}})
	resp = e.post(context.Background(), "/v1/responses", map[string]any{"model": "chatonly", "input": "Weather in Oslo?", "tools": []any{tool}, "stream": true, "store": false})
	var argsDone string
	for _, ev := range sseData(t, resp.Body) {
		var x struct{ Type, Arguments string }
		json.Unmarshal(ev, &x)
		if x.Type == "response.function_call_arguments.done" {
			argsDone = x.Arguments
		}
	}
	resp.Body.Close()
	if argsDone != `{"city":"Oslo"}` {
		t.Fatalf("streamed call arguments %q", argsDone)
	}

	up.SetScript(nil)
	resp = e.post(context.Background(), "/v1/responses", map[string]any{"model": "chatonly", "previous_response_id": called.ID,
		"input": []any{map[string]any{"type": "function_call_output", "call_id": "call_up1", "output": `{"temp_c": -3}`}}})
	resp.Body.Close()
	msgs, _ := up.LastBody()["messages"].([]any)
	if resp.StatusCode != 200 || len(msgs) != 3 {
		t.Fatalf("round trip: %d, upstream messages %v", resp.StatusCode, msgs)
	}
	asst, toolMsg := msgs[1].(map[string]any), msgs[2].(map[string]any)
	calls, _ := asst["tool_calls"].([]any)
	if asst["role"] != "assistant" || len(calls) != 1 || calls[0].(map[string]any)["function"].(map[string]any)["name"] != "get_weather" ||
		toolMsg["role"] != "tool" || toolMsg["tool_call_id"] != "call_up1" || toolMsg["content"] != `{"temp_c": -3}` {
		t.Fatalf("the upstream got the tool turns as %v", msgs)
	}
}

// TestResponsesWithCitations: the Responses API answers from sources with
// Sovereign's citations extension, the citations coming back as the
// output text's annotations (url_citation for a source with a URL), as
// response.output_text.annotation.added events when streamed, and as
// source links under the response's id.
func TestResponsesWithCitations(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	body := map[string]any{"model": "gemma3-270m", "citations": true, "temperature": 0, "max_output_tokens": 60,
		"input":   "What coolant does the zorblat engine run on?",
		"sources": map[string]any{"documents": []map[string]string{{"id": "engines", "title": "Engines", "url": "https://example.test/engines", "text": "The zorblat engine runs on purple coolant and was first built in Qarth in 1872."}}}}
	resp := e.request(e.key, "POST", "/v1/responses", body)
	var out struct {
		ID     string
		Output []struct {
			Type    string
			Content []struct {
				Text        string
				Annotations []map[string]any
			}
		}
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	json.Unmarshal(raw, &out)
	matchOpenAI(t, "Response", "a response with citations", raw)
	if resp.StatusCode != 200 || len(out.Output) == 0 || len(out.Output[0].Content) == 0 {
		t.Fatalf("%d %+v", resp.StatusCode, out)
	}
	text, anns := out.Output[0].Content[0].Text, out.Output[0].Content[0].Annotations
	if !strings.Contains(strings.ToLower(text), "purple") || len(anns) == 0 {
		t.Fatalf("answer %q, annotations %v", text, anns)
	}
	runes := []rune(text)
	for _, a := range anns {
		s, e2 := int(a["start_index"].(float64)), int(a["end_index"].(float64))
		if a["type"] != "url_citation" || a["url"] != "https://example.test/engines" || s < 0 || e2 > len(runes) || s >= e2 {
			t.Fatalf("annotation %v on %q", a, text)
		}
	}
	links := e.json("GET", "/v1/source_links?response_id="+out.ID, nil, 200)
	if data := links["data"].([]any); len(data) != len(anns) {
		t.Fatalf("%d source links for %d annotations", len(data), len(anns))
	}

	body["stream"] = true
	sresp := e.request(e.key, "POST", "/v1/responses", body)
	defer sresp.Body.Close()
	var added, completed int
	for _, ev := range sseData(t, sresp.Body) {
		var head struct{ Type string }
		json.Unmarshal(ev, &head)
		switch head.Type {
		case "response.output_text.annotation.added":
			added++
			matchOpenAI(t, "ResponseStreamEvent", "annotation event", ev)
		case "response.completed", "response.incomplete":
			completed++
			if added == 0 {
				t.Fatal("the response ended before its annotations")
			}
		}
	}
	if added != len(anns) || completed != 1 {
		t.Fatalf("streamed: %d annotation events, want %d; %d completions", added, len(anns), completed)
	}
}
