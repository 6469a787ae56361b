package runner

import (
	"fmt"
	"math"
	"sync"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
)

// Embedder computes pooled, L2-normalised embeddings, packing several
// inputs into one batch, one sequence each.
type Embedder struct {
	mu     sync.Mutex
	model  *llamacpp.Model
	lctx   *llamacpp.Context
	batch  *llamacpp.Batch
	nSeq   int
	maxLen int
	// threads is the most threads a batch decodes with (see
	// batchThreads).
	threads int
}

// tokensPerThread is how many tokens of a batch each decoding thread
// gets at least. ggml's threads meet at a barrier after every operation
// of the graph, spin-waiting for each other, and a small batch's
// operations take microseconds: one thread descheduled for a moment
// stalls the others, and the extra threads save less than they risk.
// Measured with all-minilm-l6-v2 on 2 cores (one 10-token query, 300
// times): one thread 4.0 ms at p50 and 5.8 ms at p99, two threads 2.7 ms
// and 22-42 ms; for 4 inputs (~80 tokens) one thread 28 ms, two 15 ms.
// See docs/engine.md for what it did to bench/retrieval.
const tokensPerThread = 32

// batchThreads is how many threads decode a batch of n tokens: one per
// tokensPerThread tokens, at least one and at most limit.
func batchThreads(n, limit int) int {
	return min(limit, max(1, n/tokensPerThread))
}

// NewEmbedder creates an embedding context for m with the model's pooling
// (mean when the model does not say).
func NewEmbedder(m *llamacpp.Model, threads int) (*Embedder, error) {
	maxLen := m.NCtxTrain()
	if maxLen <= 0 || maxLen > 8192 {
		maxLen = 8192
	}
	const nSeq = 8
	lctx, err := llamacpp.NewContext(m, llamacpp.ContextParams{
		NCtx:       maxLen * nSeq,
		NBatch:     maxLen * nSeq,
		NUBatch:    maxLen * nSeq,
		NSeqMax:    nSeq,
		Threads:    threads,
		Embeddings: true,
		Pooling:    llamacpp.PoolingUnspecified,
		KVUnified:  true,
	})
	if err != nil {
		return nil, err
	}
	if lctx.PoolingType() == llamacpp.PoolingNone {
		lctx.Free()
		return nil, fmt.Errorf("model %s has no pooling; it cannot produce sentence embeddings", m.Path())
	}
	return &Embedder{model: m, lctx: lctx, batch: llamacpp.NewBatch(maxLen * nSeq), nSeq: nSeq, maxLen: maxLen, threads: lctx.ThreadsBatch()}, nil
}

// Close frees the context.
func (e *Embedder) Close() {
	e.batch.Free()
	e.lctx.Free()
}

// Embed returns one normalised vector per input, in order.
func (e *Embedder) Embed(inputs []string) (inference.EmbeddingResponse, error) {
	toks := make([][]llamacpp.Token, len(inputs))
	total := 0
	for i, in := range inputs {
		t, err := e.model.Tokenize(in, true, false)
		if err != nil {
			return inference.EmbeddingResponse{}, err
		}
		if len(t) == 0 {
			return inference.EmbeddingResponse{}, apierr.Invalid("input", fmt.Sprintf("input[%d] is empty", i))
		}
		if len(t) > e.maxLen {
			return inference.EmbeddingResponse{}, apierr.Invalid("input", fmt.Sprintf(
				"input[%d] has %d tokens; this model's maximum is %d", i, len(t), e.maxLen))
		}
		toks[i] = t
		total += len(t)
	}
	out, err := e.pooled(toks)
	if err != nil {
		return inference.EmbeddingResponse{}, err
	}
	for _, v := range out {
		normalize(v)
	}
	return inference.EmbeddingResponse{Embeddings: out, PromptTokens: total}, nil
}

// pooled decodes each token sequence (each at most maxLen tokens), packing
// up to nSeq sequences per batch, and returns the pooled output of each,
// in order (for rank pooling, one score per sequence).
func (e *Embedder) pooled(toks [][]llamacpp.Token) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([][]float32, len(toks))
	for start := 0; start < len(toks); {
		e.batch.Clear()
		e.lctx.ClearMemory()
		end := start
		for end < len(toks) && end-start < e.nSeq && e.batch.Len()+len(toks[end]) <= e.batch.Cap() {
			for p, t := range toks[end] {
				e.batch.Add(t, p, end-start, true)
			}
			end++
		}
		n := batchThreads(e.batch.Len(), e.threads)
		e.lctx.SetThreads(n, n)
		if err := e.lctx.Decode(e.batch); err != nil {
			return nil, err
		}
		for i := start; i < end; i++ {
			v := e.lctx.Embedding(i-start, 0)
			if v == nil {
				return nil, fmt.Errorf("no pooled output returned for input %d", i)
			}
			out[i] = v
		}
		start = end
	}
	return out, nil
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}
