package runner

import (
	"strings"

	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
)

// echoJob is the part of a job that echoes its prompt (echo on
// /v1/completions): the prompt's text goes out before the first token,
// with the log-probability of each prompt token given the ones before it
// when logprobs are asked for. The first token has none (nothing
// precedes it: null in OpenAI's answer). The logprobs are read from the
// logits of every prompt position as the prompt is decoded, like a
// likelihood rerank's, so the prompt is decoded whole rather than taken
// from the cache.
type echoJob struct {
	text string
	lps  []inference.TokenLogprob
	// pieces is the text of each prompt token, for its logprob entry.
	pieces [][]byte
}

// newEcho prepares the echo of req's prompt (tokenized as prompt).
func (e *Engine) newEcho(req inference.CompletionRequest, prompt []llamacpp.Token) *echoJob {
	ej := &echoJob{text: req.Prompt}
	if len(req.Tokens) > 0 {
		// Token ids echo as their text (special tokens shown).
		var b strings.Builder
		for _, t := range req.Tokens {
			b.Write(e.model.Piece(llamacpp.Token(t), true))
		}
		ej.text = b.String()
	}
	if !req.Logprobs {
		return ej
	}
	ej.pieces = make([][]byte, len(prompt))
	for i, t := range prompt {
		ej.pieces[i] = e.model.Piece(t, true)
	}
	if len(req.Tokens) == 0 && len(prompt) > 0 && prompt[0] == e.model.BOS() && e.model.AddBOS() && !strings.HasPrefix(req.Prompt, string(ej.pieces[0])) {
		// The tokenizer's BOS is not in the text: an entry with none.
		ej.pieces[0] = []byte{}
	}
	ej.lps = append(ej.lps, inference.TokenLogprob{ID: int32(prompt[0]), Token: string(ej.pieces[0]), Bytes: ej.pieces[0], NoLogprob: true})
	return ej
}

// echoLogprob records the logprob of prompt token k of j, read from the
// logits at batch index idx (the position before it).
func (e *Engine) echoLogprob(j *job, idx, k int) {
	tok := j.prompt[k]
	lp, top := e.lctx.Logprobs(idx, tok, j.req.TopLogprobs)
	t := inference.TokenLogprob{ID: int32(tok), Token: string(j.echo.pieces[k]), Bytes: j.echo.pieces[k], Logprob: lp}
	for _, a := range top {
		t.Top = append(t.Top, e.tokenLogprob(a.Token, a.Logprob, false))
	}
	j.echo.lps = append(j.echo.lps, t)
}

// event is the echo's event: the prompt's text, and its tokens' logprobs.
func (ej *echoJob) event() inference.Event {
	return inference.Event{Text: ej.text, Logprobs: ej.lps}
}
