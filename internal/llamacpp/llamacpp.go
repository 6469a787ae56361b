// Package llamacpp is Sovereign's cgo binding over llama.cpp's public C API
// (llama.h). It links the libraries that scripts/llama-cpp.sh builds from a
// pinned llama.cpp release; the Makefile passes their include and library
// directories in CGO_CPPFLAGS and CGO_LDFLAGS. A portable build (the
// default, build tag ggml_dl) links llama.cpp as shared libraries and loads
// the CPU backend variant that fits the CPU at start (backend.go); a build
// for one CPU links everything statically (link_static.go).
//
// This is the only package in the project that uses cgo. Only the runner
// (package runner, used by `sovereign runner`) may import it; a test in
// internal/deptest enforces that the API server never links it.
//
// Concurrency: a Model may be used for tokenization from several goroutines.
// A Context, its Batches and Samplers must be used from one goroutine at a
// time.
package llamacpp

/*
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "llama.h"
#include "ggml-cpu.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// SOV_MAX_FAST_BIAS is the most logit biases the greedy fast path applies
// (OpenAI allows 300 per request); more go through llama.cpp's sampler.
#define SOV_MAX_FAST_BIAS 512

// sov_threadpool_new starts a ggml threadpool of n threads that wait for
// work by polling at the given level (0: sleep at once, 50: llama.cpp's
// default) before they sleep.
// The pool is the CPU backend's, found through its registry entry, so
// that a portable build's variant makes it.
static struct ggml_threadpool *sov_threadpool_new(void *make, int n, int poll) {
	struct ggml_threadpool_params p = ggml_threadpool_params_default(n);
	p.poll = (uint32_t)poll;
	return make ? ((struct ggml_threadpool *(*)(struct ggml_threadpool_params *))make)(&p) : NULL;
}

static void sov_threadpool_free(void *free_, struct ggml_threadpool *p) {
	((void (*)(struct ggml_threadpool *))free_)(p);
}

extern void sovLog(int level, char *text);

// sov_sampler_accept_safe is in chat_shim.cpp (C++, so that an exception
// from the grammar becomes a return value).
int sov_sampler_accept_safe(struct llama_sampler *s, int token);

static void sov_log_cb(enum ggml_log_level level, const char *text, void *ud) {
	(void)ud;
	sovLog((int)level, (char *)text);
}

static void sov_set_log(void) { llama_log_set(sov_log_cb, NULL); }

static void sov_batch_add(struct llama_batch *b, llama_token tok, llama_pos pos, llama_seq_id seq, int logits) {
	int i = b->n_tokens;
	b->token[i] = tok;
	b->pos[i] = pos;
	b->n_seq_id[i] = 1;
	b->seq_id[i][0] = seq;
	b->logits[i] = (int8_t)logits;
	b->n_tokens = i + 1;
}

// sov_sampler samples with a chain and checks the pick against an optional
// grammar, resampling under the grammar only when the pick is rejected (the
// same strategy as llama.cpp's common sampler: grammar checks over the whole
// vocabulary are slow).
typedef struct {
	struct llama_sampler *chain;
	struct llama_sampler *grammar;
	llama_token_data *buf;
	int n_vocab;
	// greedy_fast: the chain is logit bias + greedy only, so the pick is an
	// argmax over the biased logits and needs no candidate array.
	int greedy_fast;
	llama_logit_bias *bias;
	int n_bias;
} sov_sampler;

// sov_argmax_f32 is the index of the largest of x[0..n) (the lowest such
// index on ties; NaNs are never picked), in one vectorised pass: each lane
// keeps its largest value and that value's first index, then the lanes are
// reduced. Gemma's 262,144-entry vocabulary takes ~33 us this way against
// ~230 us for the scalar loop, whose compare chain does not vectorise
// (BenchmarkArgmax).
//
// The vector loops are compiled for AVX-512 and AVX2 whatever -march the
// binding is built with and picked by the CPU at run time, so that a
// portable build (x86-64-v2) keeps them.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static int sov_argmax_avx512(const float *x, int n, float *bv, int *best) {
	int i = 0;
	__m512 vmax = _mm512_set1_ps(-INFINITY);
	__m512i vidx = _mm512_setzero_si512();
	__m512i cur = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	const __m512i step = _mm512_set1_epi32(16);
	for (; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i);
		__mmask16 gt = _mm512_cmp_ps_mask(v, vmax, _CMP_GT_OQ);
		vmax = _mm512_mask_mov_ps(vmax, gt, v);
		vidx = _mm512_mask_mov_epi32(vidx, gt, cur);
		cur = _mm512_add_epi32(cur, step);
	}
	float mv[16];
	int mi[16];
	_mm512_storeu_ps(mv, vmax);
	_mm512_storeu_si512((void *)mi, vidx);
	for (int k = 0; k < 16; k++) {
		if (mv[k] > *bv || (mv[k] == *bv && mi[k] < *best)) { *bv = mv[k]; *best = mi[k]; }
	}
	return i;
}

__attribute__((target("avx2"))) static int sov_argmax_avx2(const float *x, int n, float *bv, int *best) {
	int i = 0;
	__m256 vmax = _mm256_set1_ps(-INFINITY);
	__m256i vidx = _mm256_setzero_si256();
	__m256i cur = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	const __m256i step = _mm256_set1_epi32(8);
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		__m256 gt = _mm256_cmp_ps(v, vmax, _CMP_GT_OQ);
		vmax = _mm256_blendv_ps(vmax, v, gt);
		vidx = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(vidx), _mm256_castsi256_ps(cur), gt));
		cur = _mm256_add_epi32(cur, step);
	}
	float mv[8];
	int mi[8];
	_mm256_storeu_ps(mv, vmax);
	_mm256_storeu_si256((__m256i *)mi, vidx);
	for (int k = 0; k < 8; k++) {
		if (mv[k] > *bv || (mv[k] == *bv && mi[k] < *best)) { *bv = mv[k]; *best = mi[k]; }
	}
	return i;
}
#endif

static int sov_argmax_f32(const float *x, int n) {
	int i = 0, best = 0;
	float bv = -INFINITY;
#if defined(__x86_64__)
	if (n >= 16 && __builtin_cpu_supports("avx512f")) {
		i = sov_argmax_avx512(x, n, &bv, &best);
	} else if (n >= 8 && __builtin_cpu_supports("avx2")) {
		i = sov_argmax_avx2(x, n, &bv, &best);
	}
#endif
	for (; i < n; i++) {
		if (x[i] > bv) { bv = x[i]; best = i; }
	}
	return best;
}

// sov_argmax picks greedily under the sampler's logit biases: they are added
// to the logits in place for the scan and taken off again, so the buffer
// holds the raw logits afterwards (logprobs are computed from it).
static llama_token sov_argmax(sov_sampler *s, float *logits) {
	float saved[SOV_MAX_FAST_BIAS];
	for (int k = 0; k < s->n_bias; k++) {
		saved[k] = logits[s->bias[k].token];
		logits[s->bias[k].token] += s->bias[k].bias;
	}
	llama_token best = sov_argmax_f32(logits, s->n_vocab);
	for (int k = 0; k < s->n_bias; k++) logits[s->bias[k].token] = saved[k];
	return best;
}

static void sov_fill(sov_sampler *s, const float *logits, llama_token_data_array *arr) {
	for (int i = 0; i < s->n_vocab; i++) {
		s->buf[i].id = i;
		s->buf[i].logit = logits[i];
		s->buf[i].p = 0.0f;
	}
	arr->data = s->buf;
	arr->size = (size_t)s->n_vocab;
	arr->selected = -1;
	arr->sorted = false;
}

static llama_token sov_sample(sov_sampler *s, struct llama_context *ctx, int idx) {
	float *logits = llama_get_logits_ith(ctx, idx);
	if (logits == NULL) return -1;
	if (s->greedy_fast && s->grammar == NULL) {
		llama_token tok = sov_argmax(s, logits);
		llama_sampler_accept(s->chain, tok);
		return tok;
	}
	llama_token_data_array arr;
	sov_fill(s, logits, &arr);
	llama_sampler_apply(s->chain, &arr);
	if (arr.selected < 0) return -1;
	llama_token tok = arr.data[arr.selected].id;
	if (s->grammar != NULL) {
		llama_token_data one = { tok, 1.0f, 0.0f };
		llama_token_data_array single = { &one, 1, -1, false };
		llama_sampler_apply(s->grammar, &single);
		if (isinf(single.data[0].logit)) {
			sov_fill(s, logits, &arr);
			llama_sampler_apply(s->grammar, &arr);
			llama_sampler_apply(s->chain, &arr);
			if (arr.selected < 0) return -1;
			tok = arr.data[arr.selected].id;
			if (isinf(arr.data[arr.selected].logit)) return -2;
		}
		llama_sampler_accept(s->grammar, tok);
	}
	llama_sampler_accept(s->chain, tok);
	return tok;
}

// sov_logprobs returns the log-probability of tok under the raw logits at idx
// and writes the n most likely tokens (descending) into ids/lps.
static float sov_logprobs(struct llama_context *ctx, int idx, int n_vocab, llama_token tok, int n, llama_token *ids, float *lps) {
	const float *l = llama_get_logits_ith(ctx, idx);
	if (l == NULL) return NAN;
	float mx = -INFINITY;
	for (int i = 0; i < n_vocab; i++) if (l[i] > mx) mx = l[i];
	double sum = 0.0;
	for (int i = 0; i < n_vocab; i++) sum += exp((double)(l[i] - mx));
	float lse = mx + (float)log(sum);
	for (int k = 0; k < n; k++) { ids[k] = -1; lps[k] = -INFINITY; }
	for (int i = 0; i < n_vocab && n > 0; i++) {
		float v = l[i];
		if (v <= lps[n-1]) continue;
		int k = n - 1;
		while (k > 0 && lps[k-1] < v) { lps[k] = lps[k-1]; ids[k] = ids[k-1]; k--; }
		lps[k] = v; ids[k] = i;
	}
	for (int k = 0; k < n; k++) if (ids[k] >= 0) lps[k] -= lse;
	return l[tok] - lse;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

var (
	initOnce sync.Once
	initCPU  CPUBackend
	initErr  error
	// LogLevel is the lowest ggml log level written to stderr (2=info,
	// 3=warn, 4=error). Set it before the first call into the package.
	LogLevel = 3
)

//export sovLog
func sovLog(level C.int, text *C.char) {
	// GGML_LOG_LEVEL_CONT (5) continues the previous line; keep it when the
	// level is high enough that we printed that line, which we can't know
	// cheaply, so print continuations only at info verbosity.
	l := int(level)
	if l == 5 {
		if LogLevel > 2 {
			return
		}
	} else if l < LogLevel {
		return
	}
	os.Stderr.WriteString(C.GoString(text))
}

// Init initialises the llama.cpp backend once per process: it routes
// llama.cpp's log to stderr, filtered by LogLevel, and in a portable build
// loads the CPU variant that fits this CPU. It returns the CPU backend in
// use, or why there is none.
func Init() (CPUBackend, error) {
	initOnce.Do(func() {
		C.sov_set_log()
		if initCPU, initErr = loadCPU(); initErr == nil {
			C.llama_backend_init()
		}
	})
	return initCPU, initErr
}

// Token is a vocabulary id.
type Token = int32

// Model is a loaded GGUF model.
type Model struct {
	m     *C.struct_llama_model
	vocab *C.struct_llama_vocab
	path  string
}

// ModelParams configures LoadModel.
type ModelParams struct {
	// VocabOnly loads only the tokenizer.
	VocabOnly bool
	// UseMmap maps the file instead of reading it.
	UseMmap bool
	// NoRepack keeps every weight in the file's layout: ggml's CPU backend
	// otherwise repacks the matrices it has interleaved kernels for (Q8_0,
	// and Q5_0 unpacked to Q8_0, on AVX-512 VNNI with
	// scripts/llama-cpp/patch.py; Q4_0 and Q4_K on AVX2).
	// Tests use it to check the repacked kernels against the plain ones.
	NoRepack bool
}

// LoadModel loads the GGUF file at path. It returns an error naming the file
// when llama.cpp cannot load it.
func LoadModel(path string, p ModelParams) (*Model, error) {
	if _, err := Init(); err != nil {
		return nil, err
	}
	mp := C.llama_model_default_params()
	mp.n_gpu_layers = 0
	mp.vocab_only = C.bool(p.VocabOnly)
	mp.use_extra_bufts = C.bool(!p.NoRepack)
	mp.load_mode = C.LLAMA_LOAD_MODE_NONE
	if p.UseMmap {
		mp.load_mode = C.LLAMA_LOAD_MODE_MMAP
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	m := C.llama_model_load_from_file(cpath, mp)
	if m == nil {
		return nil, fmt.Errorf("llama.cpp could not load model file %s (see the log lines above for the reason)", path)
	}
	return &Model{m: m, vocab: C.llama_model_get_vocab(m), path: path}, nil
}

// Free releases the model. The Model must not be used afterwards.
func (m *Model) Free() {
	if m.m != nil {
		C.llama_model_free(m.m)
		m.m = nil
	}
}

// Path is the file the model was loaded from.
func (m *Model) Path() string { return m.path }

// NVocab is the vocabulary size.
func (m *Model) NVocab() int { return int(C.llama_vocab_n_tokens(m.vocab)) }

// NEmbd is the embedding width.
func (m *Model) NEmbd() int { return int(C.llama_model_n_embd(m.m)) }

// NCtxTrain is the context length the model was trained with.
func (m *Model) NCtxTrain() int { return int(C.llama_model_n_ctx_train(m.m)) }

// HasEncoder reports whether the model has an encoder (BERT-like or T5).
func (m *Model) HasEncoder() bool { return bool(C.llama_model_has_encoder(m.m)) }

// HasDecoder reports whether the model has a decoder (causal LMs).
func (m *Model) HasDecoder() bool { return bool(C.llama_model_has_decoder(m.m)) }

// Meta returns a metadata value as a string.
func (m *Model) Meta(key string) (string, bool) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	buf := make([]byte, 512)
	for {
		n := C.llama_model_meta_val_str(m.m, ck, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
		if n < 0 {
			return "", false
		}
		if int(n) < len(buf) {
			return string(buf[:n]), true
		}
		buf = make([]byte, int(n)+1)
	}
}

// ChatTemplate is the model's default chat template, or "" when it has none.
func (m *Model) ChatTemplate() string {
	t := C.llama_model_chat_template(m.m, nil)
	if t == nil {
		return ""
	}
	return C.GoString(t)
}

// NamedTemplate is the model's template called name (for example
// "rerank", the prompt format of a cross-encoder reranker with {query} and
// {document} placeholders), or "" when it has none.
func (m *Model) NamedTemplate(name string) string {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	t := C.llama_model_chat_template(m.m, cn)
	if t == nil {
		return ""
	}
	return C.GoString(t)
}

// IsEOG reports whether tok ends generation (EOS, EOT and similar).
func (m *Model) IsEOG(tok Token) bool { return bool(C.llama_vocab_is_eog(m.vocab, C.llama_token(tok))) }

// BOS returns the beginning-of-sequence token, or -1.
func (m *Model) BOS() Token { return Token(C.llama_vocab_bos(m.vocab)) }

// AddBOS reports whether tokenization adds BOS by default.
func (m *Model) AddBOS() bool { return bool(C.llama_vocab_get_add_bos(m.vocab)) }

// EOS returns the end-of-sequence token, or -1.
func (m *Model) EOS() Token { return Token(C.llama_vocab_eos(m.vocab)) }

// SEP returns the sentence separator token (BERT's [SEP]), or -1.
func (m *Model) SEP() Token { return Token(C.llama_vocab_sep(m.vocab)) }

// FIM returns the model's fill-in-the-middle tokens: the one before the
// prefix, the one before the suffix and the one after which the middle is
// written (Qwen2.5-Coder's <|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>),
// and whether it has all three.
func (m *Model) FIM() (pre, suf, mid Token, ok bool) {
	pre, suf, mid = Token(C.llama_vocab_fim_pre(m.vocab)), Token(C.llama_vocab_fim_suf(m.vocab)), Token(C.llama_vocab_fim_mid(m.vocab))
	return pre, suf, mid, pre >= 0 && suf >= 0 && mid >= 0
}

// AddEOS reports whether tokenization adds EOS by default.
func (m *Model) AddEOS() bool { return bool(C.llama_vocab_get_add_eos(m.vocab)) }

// AddSEP reports whether tokenization adds SEP by default.
func (m *Model) AddSEP() bool { return bool(C.llama_vocab_get_add_sep(m.vocab)) }

// Tokenize converts text to tokens. addSpecial adds BOS/EOS as the model
// wants; parseSpecial turns special-token text such as <|im_start|> into
// the special token.
func (m *Model) Tokenize(text string, addSpecial, parseSpecial bool) ([]Token, error) {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	n := len(text) + 8
	for {
		out := make([]Token, n)
		got := C.llama_tokenize(m.vocab, ctext, C.int32_t(len(text)), (*C.llama_token)(unsafe.Pointer(&out[0])), C.int32_t(n), C.bool(addSpecial), C.bool(parseSpecial))
		if got == math.MinInt32 {
			return nil, errors.New("tokenize: input too long")
		}
		if got >= 0 {
			return out[:got], nil
		}
		n = int(-got)
	}
}

// Piece returns the bytes of one token. The bytes may be part of a UTF-8
// sequence that the next tokens complete. special renders control tokens.
func (m *Model) Piece(tok Token, special bool) []byte {
	buf := make([]byte, 64)
	for {
		n := C.llama_token_to_piece(m.vocab, C.llama_token(tok), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf)), 0, C.bool(special))
		if n >= 0 {
			return buf[:n]
		}
		buf = make([]byte, int(-n))
	}
}

// Detokenize converts tokens back to text.
func (m *Model) Detokenize(tokens []Token, removeSpecial, unparseSpecial bool) (string, error) {
	if len(tokens) == 0 {
		return "", nil
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= m.NVocab() {
			return "", fmt.Errorf("detokenize: token %d is outside the vocabulary (0..%d)", t, m.NVocab()-1)
		}
	}
	n := len(tokens)*8 + 16
	for {
		buf := make([]byte, n)
		got := C.llama_detokenize(m.vocab, (*C.llama_token)(unsafe.Pointer(&tokens[0])), C.int32_t(len(tokens)),
			(*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(n), C.bool(removeSpecial), C.bool(unparseSpecial))
		if got >= 0 {
			return string(buf[:got]), nil
		}
		n = int(-got)
	}
}

// Pooling types, as llama.cpp's enum llama_pooling_type.
const (
	PoolingUnspecified = -1
	PoolingNone        = 0
	PoolingMean        = 1
	PoolingCLS         = 2
	PoolingLast        = 3
	PoolingRank        = 4
)

// ContextParams configures NewContext.
type ContextParams struct {
	NCtx         int // total KV cells across sequences (with KVUnified=false: NCtx/NSeqMax per sequence)
	NBatch       int // most tokens per Decode call
	NUBatch      int // physical batch size
	NSeqMax      int // number of parallel sequences
	Threads      int
	ThreadsBatch int
	Embeddings   bool
	Pooling      int // one of the Pooling constants
	KVUnified    bool
	SWAFull      bool
}

// Context is an inference context over a Model.
type Context struct {
	c      *C.struct_llama_context
	model  *Model
	nVocab int
	mem    C.llama_memory_t
	pool   *C.struct_ggml_threadpool
}

// NewContext creates a context. It fails when llama.cpp cannot allocate it.
func NewContext(m *Model, p ContextParams) (*Context, error) {
	cp := C.llama_context_default_params()
	cp.n_ctx = C.uint32_t(p.NCtx)
	if p.NBatch > 0 {
		cp.n_batch = C.uint32_t(p.NBatch)
	}
	if p.NUBatch > 0 {
		cp.n_ubatch = C.uint32_t(p.NUBatch)
	}
	if p.NSeqMax > 0 {
		cp.n_seq_max = C.uint32_t(p.NSeqMax)
	}
	if p.Threads <= 0 {
		p.Threads = runtime.NumCPU()
	}
	if p.ThreadsBatch <= 0 {
		p.ThreadsBatch = p.Threads
	}
	cp.n_threads = C.int32_t(p.Threads)
	cp.n_threads_batch = C.int32_t(p.ThreadsBatch)
	cp.embeddings = C.bool(p.Embeddings)
	cp.pooling_type = C.enum_llama_pooling_type(p.Pooling)
	cp.kv_unified = C.bool(p.KVUnified)
	cp.swa_full = C.bool(p.SWAFull)
	cp.no_perf = C.bool(true)
	c := C.llama_init_from_model(m.m, cp)
	if c == nil {
		return nil, fmt.Errorf("llama.cpp could not create a context for %s (n_ctx=%d, n_seq_max=%d)", m.path, p.NCtx, p.NSeqMax)
	}
	return &Context{c: c, model: m, nVocab: m.NVocab(), mem: C.llama_get_memory(c)}, nil
}

// Free releases the context and its threadpool.
func (c *Context) Free() {
	if c.c != nil {
		C.llama_free(c.c)
		c.c = nil
	}
	if c.pool != nil {
		C.sov_threadpool_free(cpuProc("ggml_threadpool_free"), c.pool)
		c.pool = nil
	}
}

// StartThreadpool gives the context a persistent pool of threads that
// decodes every batch from now on. Without one, ggml starts and joins its
// worker threads inside every decode, which costs about 3 ms per generated
// token on 2 cores (llama.cpp's own server keeps a pool for the same
// reason). poll is how long idle threads spin for the next decode before
// they sleep: 0 sleeps at once, 50 is llama.cpp's default. The pool must
// have at least as many threads as any later SetThreads asks for.
func (c *Context) StartThreadpool(threads, poll int) error {
	if c.pool != nil {
		return errors.New("llamacpp: the context already has a threadpool")
	}
	p := C.sov_threadpool_new(cpuProc("ggml_threadpool_new"), C.int(threads), C.int(poll))
	if p == nil {
		return fmt.Errorf("llamacpp: could not start a threadpool of %d threads", threads)
	}
	c.pool = p
	C.llama_attach_threadpool(c.c, p, nil)
	return nil
}

// SetThreads sets how many threads decoding uses from the next Decode on:
// threads for batches of one token, batch for larger ones.
func (c *Context) SetThreads(threads, batch int) {
	C.llama_set_n_threads(c.c, C.int32_t(threads), C.int32_t(batch))
}

// ThreadsBatch is how many threads the context decodes batches of more
// than one token with.
func (c *Context) ThreadsBatch() int { return int(C.llama_n_threads_batch(c.c)) }

// NCtx is the total number of KV cells.
func (c *Context) NCtx() int { return int(C.llama_n_ctx(c.c)) }

// PoolingType is the pooling the context applies to embeddings.
func (c *Context) PoolingType() int { return int(C.llama_pooling_type(c.c)) }

// ErrNoKVSlot is returned by Decode when the KV cache has no room for the batch.
var ErrNoKVSlot = errors.New("llama_decode: no KV cache slot for the batch (context full)")

// Decode runs the model on a batch. Encoder-only models are run with
// llama_encode.
func (c *Context) Decode(b *Batch) error {
	if b.b.n_tokens == 0 {
		return nil
	}
	var rc C.int32_t
	if c.model.HasEncoder() && !c.model.HasDecoder() {
		rc = C.llama_encode(c.c, b.b)
	} else {
		rc = C.llama_decode(c.c, b.b)
	}
	switch {
	case rc == 0:
		return nil
	case rc == 1:
		return ErrNoKVSlot
	default:
		return fmt.Errorf("llama_decode failed with code %d", int(rc))
	}
}

// SeqRemove removes positions [p0, p1) of seq from the KV cache (p1 < 0:
// to the end). It returns false when the cache cannot remove a partial
// sequence.
func (c *Context) SeqRemove(seq, p0, p1 int) bool {
	return bool(C.llama_memory_seq_rm(c.mem, C.llama_seq_id(seq), C.llama_pos(p0), C.llama_pos(p1)))
}

// SeqPosMax is the largest position of seq in the cache, or -1 when empty.
func (c *Context) SeqPosMax(seq int) int {
	return int(C.llama_memory_seq_pos_max(c.mem, C.llama_seq_id(seq)))
}

// ClearMemory empties the KV cache.
func (c *Context) ClearMemory() { C.llama_memory_clear(c.mem, C.bool(true)) }

// Embedding returns a copy of the pooled embedding of seq, or of token i of
// the last batch when the context does not pool (seq is then ignored).
func (c *Context) Embedding(seq, i int) []float32 {
	n := c.model.NEmbd()
	var p *C.float
	if c.PoolingType() == PoolingNone {
		p = C.llama_get_embeddings_ith(c.c, C.int32_t(i))
	} else {
		p = C.llama_get_embeddings_seq(c.c, C.llama_seq_id(seq))
	}
	if p == nil {
		return nil
	}
	src := unsafe.Slice((*float32)(unsafe.Pointer(p)), n)
	if c.PoolingType() == PoolingRank {
		src = src[:1]
	}
	return append([]float32(nil), src...)
}

// Logprob is a token and its log-probability.
type Logprob struct {
	Token   Token
	Logprob float32
}

// Logprobs returns the log-probability of tok under the raw logits of
// batch position idx, and the top n alternatives (n may be 0).
func (c *Context) Logprobs(idx int, tok Token, n int) (float32, []Logprob) {
	ids := make([]C.llama_token, n+1)
	lps := make([]C.float, n+1)
	lp := C.sov_logprobs(c.c, C.int(idx), C.int(c.nVocab), C.llama_token(tok), C.int(n), &ids[0], &lps[0])
	top := make([]Logprob, 0, n)
	for k := 0; k < n; k++ {
		if ids[k] >= 0 {
			top = append(top, Logprob{Token: Token(ids[k]), Logprob: float32(lps[k])})
		}
	}
	return float32(lp), top
}

// Logits returns a copy of the raw logits over the whole vocabulary at batch
// position idx of the last decode, or nil when the decode produced none there.
func (c *Context) Logits(idx int) []float32 {
	p := C.llama_get_logits_ith(c.c, C.int32_t(idx))
	if p == nil {
		return nil
	}
	return append([]float32(nil), unsafe.Slice((*float32)(unsafe.Pointer(p)), c.nVocab)...)
}

// TokenLogits returns the raw logits of the given tokens at batch position
// idx of the last decode (a position added with logits set), in the order
// of toks. It returns nil when the decode produced no logits at idx.
func (c *Context) TokenLogits(idx int, toks []Token) []float32 {
	p := C.llama_get_logits_ith(c.c, C.int32_t(idx))
	if p == nil {
		return nil
	}
	all := unsafe.Slice((*float32)(unsafe.Pointer(p)), c.nVocab)
	out := make([]float32, len(toks))
	for i, t := range toks {
		if t >= 0 && int(t) < c.nVocab {
			out[i] = all[t]
		} else {
			out[i] = float32(math.Inf(-1))
		}
	}
	return out
}

// Batch is a llama_batch of single-sequence tokens.
type Batch struct {
	b   C.struct_llama_batch
	cap int
}

// NewBatch allocates a batch for up to n tokens.
func NewBatch(n int) *Batch {
	return &Batch{b: C.llama_batch_init(C.int32_t(n), 0, 1), cap: n}
}

// Free releases the batch.
func (b *Batch) Free() { C.llama_batch_free(b.b) }

// Clear empties the batch.
func (b *Batch) Clear() { b.b.n_tokens = 0 }

// Len is the number of tokens in the batch.
func (b *Batch) Len() int { return int(b.b.n_tokens) }

// Cap is the batch capacity.
func (b *Batch) Cap() int { return b.cap }

// Add appends tok at pos for seq, asking for its logits when logits is set,
// and returns its index in the batch. It panics when the batch is full.
func (b *Batch) Add(tok Token, pos, seq int, logits bool) int {
	if int(b.b.n_tokens) >= b.cap {
		panic("llamacpp: batch full")
	}
	l := 0
	if logits {
		l = 1
	}
	i := int(b.b.n_tokens)
	C.sov_batch_add(&b.b, C.llama_token(tok), C.llama_pos(pos), C.llama_seq_id(seq), C.int(l))
	return i
}

// SamplerParams configures a Sampler. Temperature <= 0 samples greedily.
type SamplerParams struct {
	Temperature      float32
	TopK             int
	TopP             float32
	MinP             float32
	Seed             uint32
	RepeatLastN      int
	RepeatPenalty    float32
	FrequencyPenalty float32
	PresencePenalty  float32
	LogitBias        map[Token]float32
	// Grammar is a GBNF grammar with root rule "root"; empty for none.
	Grammar string
	// TriggerPatterns and TriggerTokens make Grammar lazy: it constrains
	// the output only once a pattern (a regular expression matched from
	// the start of the output; the grammar sees it from the first group
	// on) or a token has appeared.
	TriggerPatterns []string
	TriggerTokens   []Token
}

// Sampler picks tokens from a context's logits.
type Sampler struct {
	s     *C.sov_sampler
	model *Model
}

// ErrGrammar is returned by NewSampler for a grammar llama.cpp cannot parse.
var ErrGrammar = errors.New("invalid grammar")

// NewSampler builds a sampler chain for the model.
func NewSampler(m *Model, p SamplerParams) (*Sampler, error) {
	sp := C.llama_sampler_chain_default_params()
	sp.no_perf = C.bool(true)
	chain := C.llama_sampler_chain_init(sp)
	add := func(s *C.struct_llama_sampler) { C.llama_sampler_chain_add(chain, s) }
	if len(p.LogitBias) > 0 {
		lb := make([]C.llama_logit_bias, 0, len(p.LogitBias))
		for t, b := range p.LogitBias {
			lb = append(lb, C.llama_logit_bias{token: C.llama_token(t), bias: C.float(b)})
		}
		add(C.llama_sampler_init_logit_bias(C.int32_t(m.NVocab()), C.int32_t(len(lb)), &lb[0]))
	}
	penalties := p.RepeatPenalty != 0 && p.RepeatPenalty != 1 || p.FrequencyPenalty != 0 || p.PresencePenalty != 0
	if penalties {
		last := p.RepeatLastN
		if last == 0 {
			last = 64
		}
		rp := p.RepeatPenalty
		if rp == 0 {
			rp = 1
		}
		add(C.llama_sampler_init_penalties(C.int32_t(m.NVocab()), C.int32_t(last), C.float(rp), C.float(p.FrequencyPenalty), C.float(p.PresencePenalty)))
	}
	if p.Temperature <= 0 {
		add(C.llama_sampler_init_greedy())
	} else {
		if p.TopK > 0 {
			add(C.llama_sampler_init_top_k(C.int32_t(p.TopK)))
		}
		if p.TopP > 0 && p.TopP < 1 {
			add(C.llama_sampler_init_top_p(C.float(p.TopP), 1))
		}
		if p.MinP > 0 {
			add(C.llama_sampler_init_min_p(C.float(p.MinP), 1))
		}
		add(C.llama_sampler_init_temp(C.float(p.Temperature)))
		add(C.llama_sampler_init_dist(C.uint32_t(p.Seed)))
	}
	s := (*C.sov_sampler)(C.calloc(1, C.size_t(unsafe.Sizeof(C.sov_sampler{}))))
	s.chain = chain
	if p.Temperature <= 0 && !penalties && len(p.LogitBias) <= C.SOV_MAX_FAST_BIAS {
		s.greedy_fast = 1
		if len(p.LogitBias) > 0 {
			s.bias = (*C.llama_logit_bias)(C.malloc(C.size_t(len(p.LogitBias)) * C.size_t(unsafe.Sizeof(C.llama_logit_bias{}))))
			bs := unsafe.Slice(s.bias, len(p.LogitBias))
			i := 0
			for t, b := range p.LogitBias {
				bs[i] = C.llama_logit_bias{token: C.llama_token(t), bias: C.float(b)}
				i++
			}
			s.n_bias = C.int(len(p.LogitBias))
		}
	}
	s.n_vocab = C.int(m.NVocab())
	s.buf = (*C.llama_token_data)(C.malloc(C.size_t(m.NVocab()) * C.size_t(unsafe.Sizeof(C.llama_token_data{}))))
	if strings.TrimSpace(p.Grammar) != "" {
		g := C.CString(p.Grammar)
		root := C.CString("root")
		if len(p.TriggerPatterns) > 0 || len(p.TriggerTokens) > 0 {
			pats := make([]*C.char, len(p.TriggerPatterns)+1)
			for i, pt := range p.TriggerPatterns {
				pats[i] = C.CString(pt)
			}
			toks := make([]C.llama_token, len(p.TriggerTokens)+1)
			for i, t := range p.TriggerTokens {
				toks[i] = C.llama_token(t)
			}
			s.grammar = C.llama_sampler_init_grammar_lazy_patterns(m.vocab, g, root,
				&pats[0], C.size_t(len(p.TriggerPatterns)), &toks[0], C.size_t(len(p.TriggerTokens)))
			for _, pt := range pats[:len(p.TriggerPatterns)] {
				C.free(unsafe.Pointer(pt))
			}
		} else {
			s.grammar = C.llama_sampler_init_grammar(m.vocab, g, root)
		}
		C.free(unsafe.Pointer(g))
		C.free(unsafe.Pointer(root))
		if s.grammar == nil {
			out := &Sampler{s: s, model: m}
			out.Free()
			return nil, ErrGrammar
		}
	}
	return &Sampler{s: s, model: m}, nil
}

// ErrGrammarDeadEnd is returned by Sample when the grammar admits no token.
var ErrGrammarDeadEnd = errors.New("grammar admits no further token")

// Sample picks the next token from batch position idx and records it in the
// sampler's state (penalties, grammar).
func (s *Sampler) Sample(c *Context, idx int) (Token, error) {
	t := C.sov_sample(s.s, c.c, C.int(idx))
	switch {
	case t == -2:
		return 0, ErrGrammarDeadEnd
	case t < 0:
		return 0, fmt.Errorf("sampling failed at batch index %d", idx)
	}
	return Token(t), nil
}

// Free releases the sampler.
func (s *Sampler) Free() {
	if s.s == nil {
		return
	}
	C.llama_sampler_free(s.s.chain)
	if s.s.grammar != nil {
		C.llama_sampler_free(s.s.grammar)
	}
	C.free(unsafe.Pointer(s.s.buf))
	if s.s.bias != nil {
		C.free(unsafe.Pointer(s.s.bias))
	}
	C.free(unsafe.Pointer(s.s))
	s.s = nil
}

// argmax is the greedy pick over x: the index of its largest value, the
// lowest one on ties. It exposes the sampler's vectorised scan to tests.
func argmax(x []float32) int {
	if len(x) == 0 {
		return -1
	}
	return int(C.sov_argmax_f32((*C.float)(unsafe.Pointer(&x[0])), C.int(len(x))))
}

// PrefillGrammar feeds tokens to the sampler's grammar, as if generated:
// text the prompt already holds that the grammar starts with. It fails if
// the grammar rejects them.
func (s *Sampler) PrefillGrammar(toks []Token) error {
	if s.s.grammar == nil {
		return nil
	}
	for _, t := range toks {
		if C.sov_sampler_accept_safe(s.s.grammar, C.int(t)) == 0 {
			return fmt.Errorf("%w: the grammar does not start with the generation prompt", ErrGrammar)
		}
	}
	return nil
}
