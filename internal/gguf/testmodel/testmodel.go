// Package testmodel generates tiny random-weight llama-architecture GGUF
// models that llama.cpp loads and runs. They produce gibberish, but they
// exercise the real mechanics — model loading, tokenization (SentencePiece
// style with byte fallback), chat templates (ChatML), decoding, sampling,
// stop tokens and grammars — in milliseconds, so tests need no downloads.
//
// The vocabulary is fixed (it does not depend on the seed): <unk>, <s>,
// </s>, <|im_start|>, <|im_end|>, the 256 byte tokens <0x00>..<0xFF>, single
// characters, then English words and fragments with the ▁ space prefix,
// JSON punctuation and generated letter pairs until the vocabulary is full.
// Weights are seeded normal random values; norms are 1. A separate
// output.weight is written so greedy output depends on the prompt; its rows
// for byte and special tokens (other than <|im_end|>) are zero, so greedy
// decoding emits ordinary text pieces rather than raw bytes.
package testmodel

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/gguf"
)

// ChatMLTemplate is the default chat template; llama.cpp's built-in template
// detection recognises it as "chatml" because it contains <|im_start|>.
const ChatMLTemplate = "{% for message in messages %}" +
	"{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
	"{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// Token ids of the special tokens in every generated model.
const (
	UnkID       = 0 // <unk>
	BOSID       = 1 // <s>, added at the start of every prompt
	EndOfTextID = 2 // </s>, a control token that does not end generation
	ImStartID   = 3 // <|im_start|>
	ImEndID     = 4 // <|im_end|>
	// EOSID is the end-of-sequence token: <|im_end|>, as in ChatML models,
	// so llama.cpp treats it as both EOS and end of turn.
	EOSID = ImEndID
	// FirstByteID is the id of <0x00>; byte b has id FirstByteID+b.
	FirstByteID = 5
	// FirstNormalID is the id of the first ordinary (type 1) token.
	FirstNormalID = FirstByteID + 256
)

// llama.cpp token types (llama_token_type).
const (
	tokNormal  = 1
	tokUnknown = 2
	tokControl = 3
	tokByte    = 6
)

// Options controls the generated model. Zero fields take the defaults
// noted on each field.
type Options struct {
	Seed         int64  // weight RNG seed; 0 is a valid seed
	Vocab        int    // vocabulary size, default 512, at least MinVocab
	Embd         int    // embedding width, default 64
	Layers       int    // transformer blocks, default 2
	Heads        int    // attention heads, default 4
	HeadsKV      int    // key/value heads (GQA), default 2
	FF           int    // feed-forward width, default 128
	Context      int    // training context length, default 1024
	ChatTemplate string // default ChatMLTemplate
	Name         string // general.name, default "sovereign-testmodel"
}

// MinVocab is the smallest supported Options.Vocab: the special and byte
// tokens plus every single printable ASCII character and ▁.
var MinVocab = FirstNormalID + len(singleChars())

func (o *Options) fill() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.Vocab, 512)
	def(&o.Embd, 64)
	def(&o.Layers, 2)
	def(&o.Heads, 4)
	def(&o.HeadsKV, 2)
	def(&o.FF, 128)
	def(&o.Context, 1024)
	if o.ChatTemplate == "" {
		o.ChatTemplate = ChatMLTemplate
	}
	if o.Name == "" {
		o.Name = "sovereign-testmodel"
	}
	switch {
	case o.Vocab < MinVocab:
		return fmt.Errorf("testmodel: vocab %d is below the minimum %d", o.Vocab, MinVocab)
	case o.Embd < 0 || o.Layers < 0 || o.Heads < 0 || o.HeadsKV < 0 || o.FF < 0 || o.Context < 0:
		return fmt.Errorf("testmodel: negative size in options %+v", *o)
	case o.Embd%o.Heads != 0 || (o.Embd/o.Heads)%2 != 0:
		return fmt.Errorf("testmodel: embd %d must be heads (%d) times an even head size", o.Embd, o.Heads)
	case o.Heads%o.HeadsKV != 0:
		return fmt.Errorf("testmodel: heads %d is not a multiple of kv heads %d", o.Heads, o.HeadsKV)
	}
	return nil
}

// Write generates a model with opts and writes it to path atomically. It
// returns an error for invalid options (vocab below MinVocab, embd not a
// multiple of heads with an even head size, heads not a multiple of kv
// heads) or if the file cannot be written.
func Write(path string, opts Options) error {
	w, err := Build(opts)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// Build returns a gguf.Writer holding the generated model, for callers that
// want to add or override metadata before writing. It fails like Write.
func Build(opts Options) (*gguf.Writer, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	tokens, scores, types := Vocab(opts.Vocab)
	headDim := opts.Embd / opts.Heads
	kvDim := headDim * opts.HeadsKV

	w := gguf.NewWriter()
	w.SetString("general.architecture", "llama")
	w.SetString("general.type", "model")
	w.SetString("general.name", opts.Name)
	w.SetUint32("general.file_type", gguf.FileTypeMostlyF16)
	w.SetUint32("general.quantization_version", 2)
	w.SetUint32("llama.vocab_size", uint32(opts.Vocab))
	w.SetUint32("llama.context_length", uint32(opts.Context))
	w.SetUint32("llama.embedding_length", uint32(opts.Embd))
	w.SetUint32("llama.block_count", uint32(opts.Layers))
	w.SetUint32("llama.feed_forward_length", uint32(opts.FF))
	w.SetUint32("llama.attention.head_count", uint32(opts.Heads))
	w.SetUint32("llama.attention.head_count_kv", uint32(opts.HeadsKV))
	w.SetUint32("llama.rope.dimension_count", uint32(headDim))
	w.SetFloat32("llama.rope.freq_base", 10000)
	w.SetFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	w.SetString("tokenizer.ggml.model", "llama")
	w.SetString("tokenizer.ggml.pre", "default")
	w.SetStrings("tokenizer.ggml.tokens", tokens)
	w.SetFloat32s("tokenizer.ggml.scores", scores)
	w.SetInt32s("tokenizer.ggml.token_type", types)
	w.SetUint32("tokenizer.ggml.bos_token_id", BOSID)
	w.SetUint32("tokenizer.ggml.eos_token_id", EOSID)
	w.SetUint32("tokenizer.ggml.unknown_token_id", UnkID)
	w.SetBool("tokenizer.ggml.add_bos_token", true)
	w.SetBool("tokenizer.ggml.add_eos_token", false)
	w.SetString("tokenizer.chat_template", opts.ChatTemplate)

	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed_7e57_0de1))
	randn := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	var err error
	matrix := func(name string, in, out int, scale float64) {
		if err == nil {
			err = w.AddTensorF16(name, []uint64{uint64(in), uint64(out)}, randn(in*out, scale))
		}
	}
	vector := func(name string, n int) {
		if err == nil {
			err = w.AddTensorF32(name, []uint64{uint64(n)}, ones(n))
		}
	}
	// Scales: embeddings are normalised by RMSNorm anyway; 0.1 for the
	// block weights keeps activations O(1); output 0.3 gives logits with a
	// standard deviation of a few units, so greedy choices vary with input.
	matrix("token_embd.weight", opts.Embd, opts.Vocab, 1)
	vector("output_norm.weight", opts.Embd)
	// Output rows of the byte tokens and of every special token except
	// <|im_end|> are zero, so their logit is always 0 while ordinary tokens
	// reach a few units: greedy output is readable text (no stray bytes or
	// invalid UTF-8), yet generation can still end with <|im_end|>.
	out := randn(opts.Embd*opts.Vocab, 0.3)
	for id := 0; id < FirstNormalID; id++ {
		if id != ImEndID {
			clear(out[id*opts.Embd : (id+1)*opts.Embd])
		}
	}
	if err == nil {
		err = w.AddTensorF16("output.weight", []uint64{uint64(opts.Embd), uint64(opts.Vocab)}, out)
	}
	for i := 0; i < opts.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		vector(p+"attn_norm.weight", opts.Embd)
		matrix(p+"attn_q.weight", opts.Embd, opts.Embd, 0.1)
		matrix(p+"attn_k.weight", opts.Embd, kvDim, 0.1)
		matrix(p+"attn_v.weight", opts.Embd, kvDim, 0.1)
		matrix(p+"attn_output.weight", opts.Embd, opts.Embd, 0.1)
		vector(p+"ffn_norm.weight", opts.Embd)
		matrix(p+"ffn_gate.weight", opts.Embd, opts.FF, 0.1)
		matrix(p+"ffn_up.weight", opts.Embd, opts.FF, 0.1)
		matrix(p+"ffn_down.weight", opts.FF, opts.Embd, 0.1)
	}
	if err != nil {
		return nil, fmt.Errorf("testmodel: %w", err)
	}
	return w, nil
}

// singleChars returns ▁ and every printable ASCII character except space.
func singleChars() []string {
	out := []string{"▁"}
	for c := '!'; c <= '~'; c++ {
		out = append(out, string(c))
	}
	return out
}

// words are the multi-character pieces, most useful first. A leading space
// becomes ▁. Every prefix of a piece is added before it so SentencePiece
// merges can reach it.
var words = strings.Fields(`
 {"  ":  ",  "}  ":"  ","  ":▁  ,▁"  ▁"  ▁{  ▁[  ..  ?▁  !▁  .▁  ,▁  :▁
 the  and  to  of  a  in  is  it  you  that  I  hello  world  yes  no  true  false  null  name  value
 for  on  are  with  as  be  at  this  cat  dog  car  The  It  He  She  We  They  Hello  Yes  No  OK
 ing  ed  er  ly  es  tion  ment  ness  able  est  al  ous  ive  ist  re  un  de  th  he  an  on  at  en
 was  have  from  or  by  not  but  what  all  were  we  when  your  can  said  there  an  each
 which  do  how  if  will  up  about  out  many  then  them  so  some  her  would  make  type
 like  him  into  time  has  look  two  more  go  see  way  could  my  than  first  red  blue
 been  call  who  its  now  find  long  down  day  did  get  come  made  may  part  green
 0.  1.  10  100  ...
`)

// Vocab returns the tokens, scores and token types of a generated model
// with n tokens (n must be at least MinVocab for every single character to
// be present; smaller n truncates).
func Vocab(n int) (tokens []string, scores []float32, types []int32) {
	seen := map[string]bool{}
	add := func(tok string, score float32, typ int32) {
		if len(tokens) >= n || seen[tok] {
			return
		}
		seen[tok] = true
		tokens = append(tokens, tok)
		scores = append(scores, score)
		types = append(types, typ)
	}
	add("<unk>", 0, tokUnknown)
	add("<s>", 0, tokControl)
	add("</s>", 0, tokControl)
	add("<|im_start|>", 0, tokControl)
	add("<|im_end|>", 0, tokControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, tokByte)
	}
	normal := func(tok string) { add(tok, -float32(len(tokens)), tokNormal) }
	for _, c := range singleChars() {
		normal(c)
	}
	piece := func(w string) {
		// Add all prefixes (at least two runes long), then the piece.
		for i := range w {
			if i > 0 && utf8.RuneCountInString(w[:i]) >= 2 {
				normal(w[:i])
			}
		}
		normal(w)
	}
	for _, w := range words {
		if !strings.HasPrefix(w, "▁") && isWord(w) {
			piece("▁" + w) // words get the space-prefixed form first
		}
		piece(w)
	}
	// Fill the rest with letter pairs, then space-prefixed pairs, then
	// triples, which is plenty for any sensible test vocabulary.
	letters := "etaoinshrdlucmfwypvbgkqjxz"
	for _, prefix := range []string{"", "▁"} {
		for _, a := range letters {
			for _, b := range letters {
				piece(prefix + string(a) + string(b))
			}
		}
	}
	for _, a := range letters {
		for _, b := range letters {
			for _, c := range letters {
				if len(tokens) >= n {
					return tokens, scores, types
				}
				piece(string(a) + string(b) + string(c))
			}
		}
	}
	// Past ~20k tokens, pad with distinct unused-looking pieces.
	for i := 0; len(tokens) < n; i++ {
		normal(fmt.Sprintf("[extra_%d]", i))
	}
	return tokens, scores, types
}

func isWord(w string) bool {
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
