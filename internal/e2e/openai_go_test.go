package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// TestOpenAIGoSDKToolCalls drives tool calls through OpenAI's official Go
// SDK (openai-go/v3), unmodified, on the default model: tool_choice
// required and a named function, a stream assembled by the SDK's
// accumulator, a forced call cut short by max_tokens, and a round trip
// that sends the SDK's own message back with the tool's result.
func TestOpenAIGoSDKToolCalls(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	client := openai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0))
	ctx := context.Background()
	weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Current weather in a city"),
		Parameters: shared.FunctionParameters{"type": "object", "required": []string{"city"}, "additionalProperties": false,
			"properties": map[string]any{"city": map[string]any{"type": "string", "enum": []string{"Paris", "Rome"}}}},
	})
	params := func(choice openai.ChatCompletionToolChoiceOptionUnionParam) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{
			Model:             "gemma3-270m",
			Messages:          []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Rome?")},
			Tools:             []openai.ChatCompletionToolUnionParam{weather},
			ToolChoice:        choice,
			ParallelToolCalls: openai.Bool(false),
			MaxTokens:         openai.Int(64),
			Temperature:       openai.Float(0),
		}
	}
	check := func(what string, call openai.ChatCompletionMessageToolCallUnion) {
		t.Helper()
		var args struct{ City string }
		if !strings.HasPrefix(call.ID, "call_") || call.Function.Name != "get_weather" ||
			json.Unmarshal([]byte(call.Function.Arguments), &args) != nil || (args.City != "Paris" && args.City != "Rome") {
			t.Fatalf("%s: call %+v", what, call)
		}
	}

	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	resp, err := client.Chat.Completions.New(ctx, params(required))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "tool_calls" || len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("required: %s", resp.RawJSON())
	}
	check("required", resp.Choices[0].Message.ToolCalls[0])

	named := openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}}}
	stream := client.Chat.Completions.NewStreaming(ctx, params(named))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "tool_calls" || len(acc.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("streamed: %+v", acc.ChatCompletion)
	}
	check("streamed", acc.Choices[0].Message.ToolCalls[0])

	// A forced call with max_tokens too small for it: the SDK gets the
	// call with the arguments written so far (not whole JSON) and
	// finish_reason "length", plain and through the accumulator; never
	// the server's call format as content.
	whole := squeeze(resp.Choices[0].Message.ToolCalls[0].Function.Arguments)
	short := params(named)
	short.MaxTokens = openai.Int(18)
	cut, err := client.Chat.Completions.New(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	if c := cut.Choices[0]; c.FinishReason != "length" || c.Message.Content != "" || len(c.Message.ToolCalls) != 1 ||
		c.Message.ToolCalls[0].Function.Name != "get_weather" || json.Valid([]byte(c.Message.ToolCalls[0].Function.Arguments)) ||
		!strings.HasPrefix(whole, squeeze(c.Message.ToolCalls[0].Function.Arguments)) {
		t.Fatalf("cut short: %s", cut.RawJSON())
	}
	cutStream := client.Chat.Completions.NewStreaming(ctx, short)
	var cutAcc openai.ChatCompletionAccumulator
	for cutStream.Next() {
		cutAcc.AddChunk(cutStream.Current())
	}
	if err := cutStream.Err(); err != nil {
		t.Fatal(err)
	}
	if c := cutAcc.Choices; len(c) != 1 || c[0].FinishReason != "length" || c[0].Message.Content != "" || len(c[0].Message.ToolCalls) != 1 ||
		c[0].Message.ToolCalls[0].Function.Name != "get_weather" || c[0].Message.ToolCalls[0].Function.Arguments != cut.Choices[0].Message.ToolCalls[0].Function.Arguments {
		t.Fatalf("cut short, streamed: %+v", cutAcc.ChatCompletion)
	}

	// The round trip: the SDK's message and the tool's result go back.
	call := resp.Choices[0].Message.ToolCalls[0]
	p := params(openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")})
	p.Messages = append(p.Messages, resp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"temp_c": 21}`, call.ID))
	p.MaxTokens = openai.Int(24)
	again, err := client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if again.Choices[0].Message.Content == "" || len(again.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("round trip: %s", again.RawJSON())
	}
}
