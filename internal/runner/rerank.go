package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
	"github.com/sovereign-ai/sovereign/internal/runnerproto"
)

// Reranking has three methods: cross-encoder for a model with rank
// pooling, query-likelihood for a causal language model, and chat-logits
// for a causal model when a request asks for it (bench/retrieval compares
// the two; query-likelihood ranks far better with the default model, see
// docs/rerank.md):
//
//   - cross-encoder (runnerproto.RerankCrossEncoder): a model whose pooling
//     type is rank. Each (query, document) pair is formatted the way
//     llama-server formats rerank prompts — the model's "rerank" template
//     with {query} and {document} when the GGUF has one, else
//     [BOS] query [EOS] [SEP] document [EOS] — decoded with rank pooling,
//     and the pooled logit is reported as sigmoid(logit), in [0, 1].
//   - chat-logits (runnerproto.RerankChatLogits): a causal chat model. Each
//     pair becomes a chat prompt (the Qwen3-Reranker recipe: a system
//     message asking for a "yes" or "no" judgement, the query and the
//     document, then the start of the assistant's turn; a base model
//     without a chat template gets a plain few-shot prompt instead, see
//     baseRerankPrompt), decoded by the
//     generation engine like any prompt (so pairs share decode steps and
//     the instruction+query prefix is reused from the KV cache), and the
//     relevance is P(yes) / (P(yes) + P(no)) over the logits of the first
//     answer token, each side summing its spelling variants.
//   - query-likelihood (runnerproto.RerankQueryLikelihood): a causal model.
//     Each pair becomes [Passage: document, a request to write a search
//     query for it, Query: query] (the UPR recipe, Sachan et al. 2022), and
//     the relevance is how likely the model finds the query's tokens after
//     that document: the geometric mean of their probabilities,
//     exp(mean log P), in (0, 1]. The query is the same for every document,
//     so only the document changes the score. It needs no instruction
//     following, so it works with base models, and reads every query token
//     rather than one answer token.

// rerankSystem and rerankInstruction are the chat-logits prompt for models
// with a chat template (instruction-tuned). They are general: nothing in
// them depends on a domain or a test.
const (
	rerankSystem = `Judge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be "yes" or "no".`
	// rerankInstruction follows Qwen3-Reranker's default instruction.
	rerankInstruction = "Given a web search query, retrieve relevant passages that answer the query"
)

// baseRerankPrompt is the chat-logits prompt for base models (a GGUF
// without a chat template, such as the default Gemma 3 270M): a short
// instruction and two worked examples in plain text, which a pretrained
// model continues with " yes" or " no". Measured on the default model, this
// puts about 97% of the next-token probability on the answer words, where
// the system/user transcript used for chat puts about 2% there and ranks
// worse. The examples are generic and unrelated to any caller's data.
const baseRerankPrompt = `Decide whether each document is relevant to the search query: answer "yes" if the document answers the query or is about what the query asks, "no" otherwise.

Query: how many legs does a spider have
Document: Spiders are arachnids with eight legs and two body segments.
Relevant: yes

Query: how many legs does a spider have
Document: The Roman Empire was ruled by emperors for centuries.
Relevant: no

Query: ` + queryMark + `
Document: ` + docMark + `
Relevant:`

// Placeholders split the formatted chat prompt into the fixed text and the
// caller's query and document, which are tokenized without parsing special
// tokens (a document cannot inject <|im_end|> or similar).
const (
	queryMark = "\x1equery\x1e"
	docMark   = "\x1edocument\x1e"
)

// answerWords are the spellings of the answer's first token that count as
// "yes" or "no"; only those the vocabulary holds as one token are used.
var (
	yesWords = []string{"yes", "Yes", "YES", " yes", " Yes", " YES"}
	noWords  = []string{"no", "No", "NO", " no", " No", " NO"}
)

// scoreJob is the part of a job that scores instead of sampling. With yes
// and no set it reads the answer logits at the prompt's end (chat-logits);
// with from > 0 it sums the log-probability of each prompt token from
// prompt[from] on given the tokens before it (query-likelihood).
type scoreJob struct {
	yes, no []llamacpp.Token
	from    int
	sum     float64
	n       int
	result  float64
}

// scoreSlot reads the yes/no logits at the slot's last prompt position and
// ends its job.
func (e *Engine) scoreSlot(s *slot) {
	j := s.job
	if j.score.from > 0 {
		if j.score.n == 0 {
			e.finish(s, inference.Event{Error: "no logits for the scored continuation"})
			return
		}
		// The geometric mean of the continuation's token probabilities.
		j.score.result = math.Exp(j.score.sum / float64(j.score.n))
		e.finish(s, inference.Event{Done: true, FinishReason: inference.FinishStop})
		return
	}
	toks := append(append([]llamacpp.Token{}, j.score.yes...), j.score.no...)
	l := e.lctx.TokenLogits(s.batchIdx, toks)
	if l == nil {
		e.finish(s, inference.Event{Error: "no logits for the scored prompt"})
		return
	}
	j.score.result = yesProbability(l[:len(j.score.yes)], l[len(j.score.yes):])
	e.finish(s, inference.Event{Done: true, FinishReason: inference.FinishStop})
}

// yesProbability is P(yes) / (P(yes) + P(no)) from raw logits: a softmax
// restricted to the answer tokens, computed stably.
func yesProbability(yes, no []float32) float64 {
	m := math.Inf(-1)
	for _, v := range append(append([]float32{}, yes...), no...) {
		m = math.Max(m, float64(v))
	}
	var py, pn float64
	for _, v := range yes {
		py += math.Exp(float64(v) - m)
	}
	for _, v := range no {
		pn += math.Exp(float64(v) - m)
	}
	if py+pn == 0 || math.IsNaN(py+pn) {
		return 0.5
	}
	return py / (py + pn)
}

// Score runs each prompt through the engine, sharing decode steps with
// other requests, and returns P(yes)/(P(yes)+P(no)) at each prompt's end.
// At most one prompt per slot is queued at a time. Each prompt must be
// shorter than CtxPerSlot. It returns ctx's error when the caller goes
// away and an error when the engine stops.
func (e *Engine) Score(ctx context.Context, prompts [][]llamacpp.Token, yes, no []llamacpp.Token) ([]float64, error) {
	return e.score(ctx, prompts, func(int) *scoreJob { return &scoreJob{yes: yes, no: no} })
}

// Likelihood runs each prompt through the engine like Score and returns, per
// prompt, the geometric mean probability of its tokens from from[i] on
// given those before: exp of their mean log-probability. from[i] must be
// between 1 and len(prompts[i])-1.
func (e *Engine) Likelihood(ctx context.Context, prompts [][]llamacpp.Token, from []int) ([]float64, error) {
	for i, p := range prompts {
		if from[i] < 1 || from[i] >= len(p) {
			return nil, fmt.Errorf("likelihood prompt %d of %d tokens scores from %d", i, len(p), from[i])
		}
	}
	return e.score(ctx, prompts, func(i int) *scoreJob { return &scoreJob{from: from[i]} })
}

// score queues one scoring job per prompt, at most one per slot at a time,
// and returns their results in order.
func (e *Engine) score(ctx context.Context, prompts [][]llamacpp.Token, mk func(i int) *scoreJob) ([]float64, error) {
	for i, p := range prompts {
		if len(p) == 0 || len(p) >= e.nCtxSeq {
			return nil, fmt.Errorf("score prompt %d has %d tokens; it must have 1 to %d", i, len(p), e.nCtxSeq-1)
		}
	}
	out := make([]float64, len(prompts))
	type pending struct {
		i int
		j *job
	}
	var inflight []pending
	next := 0
	for next < len(prompts) || len(inflight) > 0 {
		for next < len(prompts) && len(inflight) < len(e.slots) {
			j := &job{ctx: ctx, prompt: prompts[next], out: newEventQueue(), enqueued: time.Now(),
				score: mk(next)}
			select {
			case e.queue <- j:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-e.quit:
				return nil, errors.New("runner shutting down")
			}
			inflight = append(inflight, pending{next, j})
			next++
		}
		p := inflight[0]
		inflight = inflight[1:]
	wait:
		for {
			evs, err := p.j.out.next(ctx)
			if err != nil {
				return nil, err
			}
			for _, ev := range evs {
				if ev.Error != "" {
					return nil, errors.New(ev.Error)
				}
				if ev.Done {
					break wait
				}
			}
		}
		out[p.i] = p.j.score.result
	}
	return out, nil
}

// answerTokens returns the single-token spellings of words in m's
// vocabulary.
func answerTokens(m *llamacpp.Model, words []string) []llamacpp.Token {
	var out []llamacpp.Token
	seen := map[llamacpp.Token]bool{}
	for _, w := range words {
		t, err := m.Tokenize(w, false, false)
		if err != nil || len(t) != 1 || seen[t[0]] {
			continue
		}
		seen[t[0]] = true
		out = append(out, t[0])
	}
	return out
}

// rerankMethod is how this runner's model reranks ("" when it cannot).
func (s *Server) rerankMethod() string {
	switch {
	case s.embedder != nil && s.embedder.lctx.PoolingType() == llamacpp.PoolingRank:
		return runnerproto.RerankCrossEncoder
	case s.engine != nil:
		return runnerproto.RerankQueryLikelihood
	}
	return ""
}

// validateRerank checks a rerank request's inputs.
func validateRerank(req inference.RerankRequest) error {
	if strings.TrimSpace(req.Query) == "" {
		return apierr.Invalid("query", "'query' must be a non-empty string")
	}
	if len(req.Documents) == 0 {
		return apierr.Invalid("documents", "'documents' must hold at least one document")
	}
	for i, d := range req.Documents {
		if strings.TrimSpace(d) == "" {
			return apierr.Invalid(fmt.Sprintf("documents[%d]", i), "a document must not be empty")
		}
	}
	return nil
}

// chatRerank scores the pairs with the chat-logits method.
func (s *Server) chatRerank(ctx context.Context, req inference.RerankRequest) (inference.RerankResponse, error) {
	prompts, total, err := s.chatRerankPrompts(req.Query, req.Documents)
	if err != nil {
		return inference.RerankResponse{}, err
	}
	scores, err := s.engine.Score(ctx, prompts, s.yes, s.no)
	return rerankResponse(scores, total, err)
}

// rerankResponse is the runner's answer for scores in input order.
func rerankResponse(scores []float64, promptTokens int, err error) (inference.RerankResponse, error) {
	if err != nil {
		return inference.RerankResponse{}, err
	}
	res := inference.RerankResponse{PromptTokens: promptTokens, Results: make([]inference.RerankResult, len(scores))}
	for i, sc := range scores {
		res.Results[i] = inference.RerankResult{Index: i, RelevanceScore: sc}
	}
	return res, nil
}

// chatRerankPrompts builds one prompt per document: the chat-formatted
// instruction and query (identical for every document, so the engine
// reuses its KV cache), the document, cut to fit the context of a slot,
// and the start of the assistant's answer.
func (s *Server) chatRerankPrompts(query string, docs []string) ([][]llamacpp.Token, int, error) {
	text := baseRerankPrompt
	if s.template != "" {
		user := "<Instruct>: " + rerankInstruction + "\n<Query>: " + queryMark + "\n<Document>: " + docMark
		var err error
		text, _, err = s.format([]inference.Message{{Role: "system", Content: rerankSystem}, {Role: "user", Content: user}})
		if err != nil {
			return nil, 0, err
		}
	}
	qi, di := strings.Index(text, queryMark), strings.Index(text, docMark)
	if qi < 0 || di < qi {
		return nil, 0, errors.New("the chat template did not keep the rerank prompt's query and document in order")
	}
	a, b, c := text[:qi], text[qi+len(queryMark):di], text[di+len(docMark):]
	// A space before the query or document is tokenized with it, as a
	// tokenizer sees "Query: text" whole (SentencePiece joins the space to
	// the next word), so the pieces tokenize like the full prompt would.
	qsp, dsp := "", ""
	if strings.HasSuffix(a, " ") {
		a, qsp = a[:len(a)-1], " "
	}
	if strings.HasSuffix(b, " ") {
		b, dsp = b[:len(b)-1], " "
	}
	var prefix []llamacpp.Token
	for _, part := range []struct {
		text            string
		special, parsed bool
	}{{a, true, true}, {qsp + query, false, false}, {b, false, true}} {
		t, err := s.model.Tokenize(part.text, part.special, part.parsed)
		if err != nil {
			return nil, 0, apierr.Invalid("query", err.Error())
		}
		prefix = append(prefix, t...)
	}
	suffix, err := s.model.Tokenize(c, false, true)
	if err != nil {
		return nil, 0, err
	}
	return s.documentPrompts(prefix, suffix, dsp, docs)
}

// documentPrompts builds one prompt per document, [prefix, the document
// tokenized after space, suffix], cutting the document to fit one slot's
// context as llama-server does, and counts their tokens. A prefix and
// suffix that leave no room for a document are the query's fault.
func (s *Server) documentPrompts(prefix, suffix []llamacpp.Token, space string, docs []string) ([][]llamacpp.Token, int, error) {
	room := s.engine.CtxPerSlot() - 1 - len(prefix) - len(suffix)
	if room < 1 {
		return nil, 0, apierr.Invalid("query", fmt.Sprintf(
			"the query is too long: with the rerank prompt it takes %d tokens and this model's context per request is %d tokens",
			len(prefix)+len(suffix)+1, s.engine.CtxPerSlot()))
	}
	out := make([][]llamacpp.Token, len(docs))
	total := 0
	for i, d := range docs {
		dt, err := s.model.Tokenize(space+d, false, false)
		if err != nil {
			return nil, 0, apierr.Invalid(fmt.Sprintf("documents[%d]", i), err.Error())
		}
		if len(dt) > room {
			dt = dt[:room]
		}
		p := make([]llamacpp.Token, 0, len(prefix)+len(dt)+len(suffix))
		p = append(append(append(p, prefix...), dt...), suffix...)
		out[i] = p
		total += len(p)
	}
	return out, total, nil
}

// Rerank scores each document against query with the cross-encoder's rank
// pooling and returns sigmoid(score) per document, in input order. A
// document that does not fit the model's context with the query is cut;
// a query that leaves no room is an invalid request (apierr.Invalid).
func (e *Embedder) Rerank(query string, docs []string) (inference.RerankResponse, error) {
	m := e.model
	pairs := make([][]llamacpp.Token, len(docs))
	total := 0
	if tmpl := m.NamedTemplate("rerank"); tmpl != "" {
		// The model's own rerank prompt: the document is cut on the
		// rendered prompt's tokens when too long.
		for i, d := range docs {
			p := strings.ReplaceAll(strings.ReplaceAll(tmpl, "{query}", query), "{document}", d)
			t, err := m.Tokenize(p, false, true)
			if err != nil {
				return inference.RerankResponse{}, apierr.Invalid(fmt.Sprintf("documents[%d]", i), err.Error())
			}
			if len(t) > e.maxLen {
				return inference.RerankResponse{}, apierr.Invalid(fmt.Sprintf("documents[%d]", i), fmt.Sprintf(
					"the query and document take %d tokens; this model's maximum is %d", len(t), e.maxLen))
			}
			pairs[i] = t
			total += len(t)
		}
	} else {
		eos := m.EOS()
		if eos < 0 {
			eos = m.SEP()
		}
		q, err := m.Tokenize(query, false, false)
		if err != nil {
			return inference.RerankResponse{}, apierr.Invalid("query", err.Error())
		}
		var head, mid, tail []llamacpp.Token
		if m.AddBOS() {
			head = append(head, m.BOS())
		}
		if m.AddEOS() && eos >= 0 {
			mid = append(mid, eos)
			tail = append(tail, eos)
		}
		if m.AddSEP() && m.SEP() >= 0 {
			mid = append(mid, m.SEP())
		}
		room := e.maxLen - len(head) - len(q) - len(mid) - len(tail)
		if room < 1 {
			return inference.RerankResponse{}, apierr.Invalid("query", fmt.Sprintf(
				"the query has %d tokens; this model's maximum for a query and a document is %d", len(q), e.maxLen))
		}
		for i, d := range docs {
			dt, err := m.Tokenize(d, false, false)
			if err != nil {
				return inference.RerankResponse{}, apierr.Invalid(fmt.Sprintf("documents[%d]", i), err.Error())
			}
			if len(dt) > room {
				dt = dt[:room]
			}
			p := make([]llamacpp.Token, 0, e.maxLen)
			p = append(append(append(append(append(p, head...), q...), mid...), dt...), tail...)
			pairs[i] = p
			total += len(p)
		}
	}
	scores, err := e.pooled(pairs)
	if err != nil {
		return inference.RerankResponse{}, err
	}
	res := inference.RerankResponse{PromptTokens: total, Results: make([]inference.RerankResult, len(docs))}
	for i, v := range scores {
		res.Results[i] = inference.RerankResult{Index: i, RelevanceScore: 1 / (1 + math.Exp(-float64(v[0])))}
	}
	return res, nil
}

// Query-likelihood prompt pieces (the UPR recipe: rank passages by how
// likely the model finds the query after reading each one). The query
// follows the document, so a pair shares no prefix with the next beyond
// qlHead; what changes between documents is scored in full.
const (
	qlHead = "Passage:"
	qlMid  = "\nPlease write a search query for this passage.\nQuery:"
)

// likelihoodRerank scores the pairs with the query-likelihood method: the
// geometric mean probability of the query's tokens after the document.
func (s *Server) likelihoodRerank(ctx context.Context, req inference.RerankRequest) (inference.RerankResponse, error) {
	prompts, from, total, err := s.likelihoodPrompts(req.Query, req.Documents)
	if err != nil {
		return inference.RerankResponse{}, err
	}
	scores, err := s.engine.Likelihood(ctx, prompts, from)
	return rerankResponse(scores, total, err)
}

// likelihoodPrompts builds one prompt per document, [head document mid
// query], cutting the document to fit a slot's context, and the index of
// each prompt's first query token.
func (s *Server) likelihoodPrompts(query string, docs []string) ([][]llamacpp.Token, []int, int, error) {
	head, err := s.model.Tokenize(qlHead, true, true)
	if err != nil {
		return nil, nil, 0, err
	}
	mid, err := s.model.Tokenize(qlMid, false, true)
	if err != nil {
		return nil, nil, 0, err
	}
	q, err := s.model.Tokenize(" "+query, false, false)
	if err != nil {
		return nil, nil, 0, apierr.Invalid("query", err.Error())
	}
	prompts, total, err := s.documentPrompts(head, append(mid, q...), " ", docs)
	if err != nil {
		return nil, nil, 0, err
	}
	from := make([]int, len(prompts))
	for i, p := range prompts {
		from[i] = len(p) - len(q)
	}
	return prompts, from, total, nil
}
