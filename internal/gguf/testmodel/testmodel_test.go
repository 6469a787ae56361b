package testmodel

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/gguf"
)

func TestWriteDefault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := Write(path, Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Size() > 2<<20 {
		t.Errorf("default model is %d bytes, want < 2 MiB", st.Size())
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Arch() != "llama" || f.ContextLength() != 1024 || f.FileType() != "F16" {
		t.Errorf("arch %q ctx %d ftype %q", f.Arch(), f.ContextLength(), f.FileType())
	}
	if !strings.Contains(f.ChatTemplate(), "<|im_start|>") {
		t.Errorf("chat template %q", f.ChatTemplate())
	}
	for key, want := range map[string]uint64{
		"llama.embedding_length": 64, "llama.block_count": 2, "llama.attention.head_count": 4,
		"llama.attention.head_count_kv": 2, "llama.feed_forward_length": 128, "llama.rope.dimension_count": 16,
		"tokenizer.ggml.bos_token_id": BOSID, "tokenizer.ggml.eos_token_id": EOSID,
	} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("%s = %d (%v), want %d", key, got, ok, want)
		}
	}
	if m, _ := f.String("tokenizer.ggml.model"); m != "llama" {
		t.Errorf("tokenizer model %q", m)
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	kv, _ := f.Get("tokenizer.ggml.token_type")
	types, _ := kv.Value.([]int32)
	kv, _ = f.Get("tokenizer.ggml.scores")
	scores, _ := kv.Value.([]float32)
	if len(toks) != 512 || len(types) != 512 || len(scores) != 512 {
		t.Fatalf("vocab lengths %d %d %d", len(toks), len(types), len(scores))
	}
	for id, want := range map[int]string{UnkID: "<unk>", BOSID: "<s>", EndOfTextID: "</s>", ImStartID: "<|im_start|>", ImEndID: "<|im_end|>", FirstByteID: "<0x00>", FirstByteID + 0x0A: "<0x0A>", FirstByteID + 255: "<0xFF>"} {
		if toks[id] != want {
			t.Errorf("token %d = %q, want %q", id, toks[id], want)
		}
	}
	if types[ImEndID] != tokControl || types[FirstByteID+7] != tokByte || types[FirstNormalID] != tokNormal {
		t.Errorf("token types %d %d %d", types[ImEndID], types[FirstByteID+7], types[FirstNormalID])
	}
	seen := map[string]bool{}
	for _, tok := range toks {
		if seen[tok] {
			t.Errorf("duplicate token %q", tok)
		}
		seen[tok] = true
	}
	for _, want := range []string{"▁the", "▁hello", "{", "}", `"`, ":", `{"`, `":`, "▁", "a", "Z", "9"} {
		if !seen[want] {
			t.Errorf("vocabulary lacks %q", want)
		}
	}
	// Every multi-rune normal piece must be reachable by SentencePiece
	// merges: some split into two pieces that are both in the vocabulary.
	for id := FirstNormalID; id < len(toks); id++ {
		tok := []rune(toks[id])
		if len(tok) < 2 {
			continue
		}
		ok := false
		for i := 1; i < len(tok) && !ok; i++ {
			ok = seen[string(tok[:i])] && seen[string(tok[i:])]
		}
		if !ok {
			t.Errorf("token %q cannot be formed by a merge", string(tok))
		}
	}

	var params uint64
	for _, ti := range f.Tensors {
		want := gguf.TypeF32
		if len(ti.Dims) == 2 {
			want = gguf.TypeF16
		}
		if ti.Type != want {
			t.Errorf("%s is %s, want %s", ti.Name, ti.Type, want)
		}
		params += ti.NumElements()
	}
	if _, ok := f.Tensor("output.weight"); !ok {
		t.Error("no output.weight")
	}
	if q, _ := f.Tensor("blk.1.attn_k.weight"); q.Dims[0] != 64 || q.Dims[1] != 32 {
		t.Errorf("attn_k dims %v", q.Dims)
	}
	if params != f.ParameterCount() || params < 100000 {
		t.Errorf("parameters %d / %d", params, f.ParameterCount())
	}
	// Weights are random, not constant.
	raw, _ := f.TensorData("output.weight")
	row := func(id int) []byte { return raw[id*64*2 : (id+1)*64*2] }
	if !bytes.Equal(row(FirstByteID+0xC3), make([]byte, 128)) || !bytes.Equal(row(BOSID), make([]byte, 128)) {
		t.Error("byte/special token output rows are not zero")
	}
	if bytes.Equal(row(ImEndID), make([]byte, 128)) || bytes.Equal(row(FirstNormalID), make([]byte, 128)) {
		t.Error("<|im_end|> or normal token output row is zero")
	}
	distinct := map[uint16]bool{}
	for i := 0; i < len(raw); i += 2 {
		distinct[uint16(raw[i])|uint16(raw[i+1])<<8] = true
	}
	if len(distinct) < 1000 {
		t.Errorf("output.weight has only %d distinct values", len(distinct))
	}
}

func build(t *testing.T, o Options) []byte {
	t.Helper()
	w, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDeterministic(t *testing.T) {
	a, b, c := build(t, Options{Seed: 7}), build(t, Options{Seed: 7}), build(t, Options{Seed: 8})
	if !bytes.Equal(a, b) {
		t.Error("same seed gave different files")
	}
	if bytes.Equal(a, c) || len(a) != len(c) {
		t.Error("different seeds should differ only in weights")
	}
}

func TestOptions(t *testing.T) {
	big := build(t, Options{Vocab: 3000, Embd: 32, Heads: 2, HeadsKV: 1, Layers: 1, FF: 64, Context: 256, ChatTemplate: "x"})
	f, err := gguf.Read(bytes.NewReader(big), int64(len(big)), "big")
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	if len(toks) != 3000 || f.ContextLength() != 256 || f.ChatTemplate() != "x" {
		t.Errorf("vocab %d ctx %d tmpl %q", len(toks), f.ContextLength(), f.ChatTemplate())
	}
	for _, o := range []Options{{Vocab: MinVocab - 1}, {Embd: 30, Heads: 4}, {Heads: 4, HeadsKV: 3}, {Embd: 12, Heads: 4, HeadsKV: 1}} {
		if err := Write(filepath.Join(t.TempDir(), "x.gguf"), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
