package convert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/gguf"
)

// Tiny BERT dimensions used by the synthetic fixtures.
const (
	tHidden = 8
	tFF     = 16
	tLayers = 2
	tHeads  = 2
	tPos    = 16
	tTypes  = 2
)

var tVocab = []string{"[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "kit", "##ten", "car", "##s", ".", "hello", "##ing", "a"}

// tVocabSize is larger than the tokenizer vocabulary to exercise padding.
const tVocabSize = 18

type stEntry struct {
	dtype string
	shape []uint64
	data  []byte
}

func writeSafetensors(t *testing.T, path string, tensors map[string]stEntry) {
	t.Helper()
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, n := range names {
		e := tensors[n]
		hdr[n] = map[string]any{"dtype": e.dtype, "shape": e.shape, "data_offsets": []int{len(data), len(data) + len(e.data)}}
		data = append(data, e.data...)
	}
	h, _ := json.Marshal(hdr)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func encodeAs(dtype string, v []float32) []byte {
	var b []byte
	for _, x := range v {
		switch dtype {
		case "F32":
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		case "F16":
			b = binary.LittleEndian.AppendUint16(b, gguf.Float32ToFloat16(x))
		}
	}
	return b
}

// bertTensors returns HF-named tensors and their float values.
func bertTensors(dtype string) (map[string]stEntry, map[string][]float32) {
	rng := rand.New(rand.NewPCG(3, 4))
	entries := map[string]stEntry{}
	values := map[string][]float32{}
	add := func(name string, shape ...uint64) {
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		v := randF32(rng, n)
		if dtype == "F16" { // make values exactly representable
			for i := range v {
				v[i] = gguf.Float16ToFloat32(gguf.Float32ToFloat16(v[i]))
			}
		}
		values[name] = v
		entries[name] = stEntry{dtype, shape, encodeAs(dtype, v)}
	}
	add("embeddings.word_embeddings.weight", tVocabSize, tHidden)
	add("embeddings.token_type_embeddings.weight", tTypes, tHidden)
	add("embeddings.position_embeddings.weight", tPos, tHidden)
	add("embeddings.LayerNorm.weight", tHidden)
	add("embeddings.LayerNorm.bias", tHidden)
	for i := 0; i < tLayers; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		for _, s := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			add(p+s+".weight", tHidden, tHidden)
			add(p+s+".bias", tHidden)
		}
		add(p+"attention.output.LayerNorm.weight", tHidden)
		add(p+"attention.output.LayerNorm.bias", tHidden)
		add(p+"intermediate.dense.weight", tFF, tHidden)
		add(p+"intermediate.dense.bias", tFF)
		add(p+"output.dense.weight", tHidden, tFF)
		add(p+"output.dense.bias", tHidden)
		add(p+"output.LayerNorm.weight", tHidden)
		add(p+"output.LayerNorm.bias", tHidden)
	}
	// Tensors the converter must drop.
	add("pooler.dense.weight", tHidden, tHidden)
	add("pooler.dense.bias", tHidden)
	entries["embeddings.position_ids"] = stEntry{"I64", []uint64{1, tPos}, make([]byte, 8*tPos)}
	return entries, values
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeBERTDir writes a complete synthetic sentence-transformers BERT dir.
func makeBERTDir(t *testing.T, dtype string) (string, map[string][]float32) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny-bert")
	writeJSON(t, filepath.Join(dir, "config.json"), map[string]any{
		"architectures": []string{"BertModel"}, "model_type": "bert", "hidden_size": tHidden,
		"intermediate_size": tFF, "num_hidden_layers": tLayers, "num_attention_heads": tHeads,
		"max_position_embeddings": tPos, "vocab_size": tVocabSize, "type_vocab_size": tTypes,
		"layer_norm_eps": 1e-12, "hidden_act": "gelu", "position_embedding_type": "absolute",
	})
	vocab := map[string]int{}
	for i, tok := range tVocab {
		vocab[tok] = i
	}
	var added []map[string]any
	for _, s := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} {
		added = append(added, map[string]any{"id": vocab[s], "content": s, "special": true})
	}
	writeJSON(t, filepath.Join(dir, "tokenizer.json"), map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"model":        map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "vocab": vocab},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 1}}}},
	})
	writeJSON(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{
		"cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]",
		"mask_token": map[string]any{"content": "[MASK]", "lstrip": true},
	})
	writeJSON(t, filepath.Join(dir, "modules.json"), []map[string]any{
		{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
	})
	writeJSON(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{
		"word_embedding_dimension": tHidden, "pooling_mode_mean_tokens": true, "pooling_mode_cls_token": false,
	})
	entries, values := bertTensors(dtype)
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), entries)
	return dir, values
}

func TestBERT(t *testing.T) {
	for _, dtype := range []string{"F32", "F16"} {
		t.Run(dtype, func(t *testing.T) { testBERT(t, dtype) })
	}
}

func testBERT(t *testing.T, dtype string) {
	dir, values := makeBERTDir(t, dtype)
	out := filepath.Join(t.TempDir(), "out.gguf")
	var calls [][2]int
	if err := BERT(dir, out, func(done, total int) { calls = append(calls, [2]int{done, total}) }); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Arch() != "bert" || f.FileType() != "F16" || f.ContextLength() != tPos {
		t.Errorf("arch %q ftype %q ctx %d", f.Arch(), f.FileType(), f.ContextLength())
	}
	for key, want := range map[string]uint64{
		"bert.embedding_length": tHidden, "bert.feed_forward_length": tFF, "bert.block_count": tLayers,
		"bert.attention.head_count": tHeads, "bert.pooling_type": 1, "tokenizer.ggml.token_type_count": tTypes,
		"tokenizer.ggml.cls_token_id": 3, "tokenizer.ggml.seperator_token_id": 4, "tokenizer.ggml.unknown_token_id": 2,
		"tokenizer.ggml.padding_token_id": 0, "tokenizer.ggml.mask_token_id": 5, "tokenizer.ggml.bos_token_id": 3,
		"tokenizer.ggml.eos_token_id": 4, "general.file_type": 1,
	} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d", key, got, ok, want)
		}
	}
	if eps, _ := f.Float("bert.attention.layer_norm_epsilon"); float32(eps) != 1e-12 {
		t.Errorf("eps %g", eps)
	}
	if c, ok := f.Bool("bert.attention.causal"); !ok || c {
		t.Errorf("causal %v %v", c, ok)
	}
	for _, k := range []string{"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"} {
		if b, ok := f.Bool(k); !ok || !b {
			t.Errorf("%s = %v %v", k, b, ok)
		}
	}
	// "[CLS] A [SEP] B [SEP]": the separator is the shared trailing token,
	// so gguf-py sets add_sep_token = false.
	if b, ok := f.Bool("tokenizer.ggml.add_sep_token"); !ok || b {
		t.Errorf("add_sep_token = %v %v, want false", b, ok)
	}
	if m, _ := f.String("tokenizer.ggml.model"); m != "bert" {
		t.Errorf("tokenizer model %q", m)
	}
	if n, _ := f.String("general.name"); n != "tiny-bert" {
		t.Errorf("name %q", n)
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	wantToks := []string{"[PAD]", "▁[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "▁the", "▁cat", "▁kit", "ten", "▁car", "s", "▁.", "▁hello", "ing", "▁a", "▁[PAD16]", "▁[PAD17]"}
	if !reflect.DeepEqual(toks, wantToks) {
		t.Errorf("tokens\n got %q\nwant %q", toks, wantToks)
	}
	kv, _ := f.Get("tokenizer.ggml.token_type")
	wantTypes := []int32{3, 1, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4}
	if !reflect.DeepEqual(kv.Value, wantTypes) {
		t.Errorf("token types %v", kv.Value)
	}

	// Tensors: exactly the llama.cpp set, with the right types and shapes.
	hf := map[string]string{
		"token_embd.weight": "embeddings.word_embeddings.weight", "token_types.weight": "embeddings.token_type_embeddings.weight",
		"position_embd.weight": "embeddings.position_embeddings.weight", "token_embd_norm.weight": "embeddings.LayerNorm.weight",
		"token_embd_norm.bias": "embeddings.LayerNorm.bias",
	}
	for i := 0; i < tLayers; i++ {
		for gg, h := range map[string]string{"attn_q": "attention.self.query", "attn_k": "attention.self.key", "attn_v": "attention.self.value",
			"attn_output": "attention.output.dense", "attn_output_norm": "attention.output.LayerNorm", "ffn_up": "intermediate.dense",
			"ffn_down": "output.dense", "layer_output_norm": "output.LayerNorm"} {
			for _, s := range []string{".weight", ".bias"} {
				hf[fmt.Sprintf("blk.%d.%s%s", i, gg, s)] = fmt.Sprintf("encoder.layer.%d.%s%s", i, h, s)
			}
		}
	}
	if len(f.Tensors) != len(hf) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(hf))
	}
	for _, ti := range f.Tensors {
		src, ok := hf[ti.Name]
		if !ok {
			t.Errorf("unexpected tensor %q", ti.Name)
			continue
		}
		want := gguf.TypeF32
		if len(ti.Dims) == 2 && ti.Name != "position_embd.weight" && ti.Name != "token_types.weight" {
			want = gguf.TypeF16
		}
		if ti.Type != want {
			t.Errorf("%s type %s, want %s", ti.Name, ti.Type, want)
		}
		raw, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		vals := values[src]
		if uint64(len(vals)) != ti.NumElements() {
			t.Fatalf("%s has %d elements, source %d", ti.Name, ti.NumElements(), len(vals))
		}
		for i, v := range vals {
			var got float32
			if ti.Type == gguf.TypeF16 {
				got = gguf.Float16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
				v = gguf.Float16ToFloat32(gguf.Float32ToFloat16(v))
			} else {
				got = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			if got != v {
				t.Fatalf("%s[%d] = %g, want %g", ti.Name, i, got, v)
			}
		}
	}
	up, _ := f.Tensor("blk.0.ffn_up.weight")
	if !reflect.DeepEqual(up.Dims, []uint64{tHidden, tFF}) {
		t.Errorf("ffn_up dims %v, want [%d %d] (ggml order)", up.Dims, tHidden, tFF)
	}
	if len(calls) != len(hf)+1 || calls[0] != [2]int{0, len(hf)} || calls[len(calls)-1] != [2]int{len(hf), len(hf)} {
		t.Errorf("progress calls %v", calls)
	}
}

func TestBERTErrors(t *testing.T) {
	mutate := func(t *testing.T, change func(dir string)) error {
		dir, _ := makeBERTDir(t, "F32")
		change(dir)
		return BERT(dir, filepath.Join(t.TempDir(), "o.gguf"), nil)
	}
	setTensors := func(dir string, edit func(map[string]stEntry)) {
		e, _ := bertTensors("F32")
		edit(e)
		writeSafetensors(t, filepath.Join(dir, "model.safetensors"), e)
	}
	editJSON := func(path string, edit func(map[string]any)) {
		var m map[string]any
		b, _ := os.ReadFile(path)
		json.Unmarshal(b, &m)
		edit(m)
		writeJSON(t, path, m)
	}
	cases := []struct {
		name   string
		change func(dir string)
		want   string
	}{
		{"no config", func(d string) { os.Remove(filepath.Join(d, "config.json")) }, "config.json: no such file"},
		{"no weights", func(d string) { os.Remove(filepath.Join(d, "model.safetensors")) }, "no model.safetensors"},
		{"no tokenizer", func(d string) { os.Remove(filepath.Join(d, "tokenizer.json")) }, "tokenizer.json: no such file"},
		{"roberta", func(d string) {
			editJSON(filepath.Join(d, "config.json"), func(m map[string]any) { m["model_type"] = "roberta" })
		}, `model_type is "roberta"`},
		{"bpe", func(d string) {
			editJSON(filepath.Join(d, "tokenizer.json"), func(m map[string]any) { m["model"].(map[string]any)["type"] = "BPE" })
		}, `tokenizer model is "BPE", want WordPiece`},
		{"max pooling", func(d string) {
			writeJSON(t, filepath.Join(d, "1_Pooling", "config.json"), map[string]any{"pooling_mode_max_tokens": true})
		}, "unsupported pooling mode"},
		{"unexpected", func(d string) {
			setTensors(d, func(e map[string]stEntry) {
				e["encoder.layer.0.extra.weight"] = stEntry{"F32", []uint64{1}, make([]byte, 4)}
			})
		}, `unexpected tensor "encoder.layer.0.extra.weight"`},
		{"missing", func(d string) {
			setTensors(d, func(e map[string]stEntry) { delete(e, "encoder.layer.1.output.dense.weight") })
		}, "missing tensors (llama.cpp names): blk.1.ffn_down.weight"},
		{"shape", func(d string) {
			setTensors(d, func(e map[string]stEntry) {
				e["encoder.layer.0.intermediate.dense.weight"] = stEntry{"F32", []uint64{tHidden, tFF}, make([]byte, 4*tHidden*tFF)}
			})
		}, "has shape [8 16], config.json implies [16 8]"},
		{"dtype", func(d string) {
			setTensors(d, func(e map[string]stEntry) {
				e["embeddings.LayerNorm.bias"] = stEntry{"I32", []uint64{tHidden}, make([]byte, 4*tHidden)}
			})
		}, "unsupported dtype I32"},
		{"bad safetensors", func(d string) {
			os.WriteFile(filepath.Join(d, "model.safetensors"), []byte("\xff\xff\xff\xff\xff\xff\xff\x7f{}"), 0o644)
		}, "header length"},
		{"bad offsets", func(d string) {
			setTensors(d, func(e map[string]stEntry) {
				e["embeddings.LayerNorm.bias"] = stEntry{"F32", []uint64{tHidden + 1}, make([]byte, 4*tHidden)}
			})
		}, "needs 36 bytes but has 32"},
		{"token id out of range", func(d string) {
			editJSON(filepath.Join(d, "config.json"), func(m map[string]any) { m["vocab_size"] = 10 })
		}, "outside the model's vocab_size 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mutate(t, c.change)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestPhantomSpace(t *testing.T) {
	for in, want := range map[string]string{"##ing": "ing", "cat": "▁cat", "[CLS]": "▁[CLS]", "[unused3]": "▁[unused3]", "[": "▁[", "#": "▁#", "##": ""} {
		if got := phantomSpace(in, tokNormal); got != want {
			t.Errorf("phantomSpace(%q) = %q, want %q", in, got, want)
		}
	}
	if got := phantomSpace("[CLS]", tokControl); got != "[CLS]" {
		t.Errorf("control token changed to %q", got)
	}
}

func TestPairAddsSep(t *testing.T) {
	sp := func(id string) templatePiece {
		var p templatePiece
		p.SpecialToken = &struct {
			ID string `json:"id"`
		}{id}
		return p
	}
	seq := func(id string) templatePiece {
		var p templatePiece
		p.Sequence = &struct {
			ID string `json:"id"`
		}{id}
		return p
	}
	cases := []struct {
		name        string
		pair        []templatePiece
		first, last string
		want        *bool
	}{
		{"bert", []templatePiece{sp("[CLS]"), seq("A"), sp("[SEP]"), seq("B"), sp("[SEP]")}, "[CLS]", "[SEP]", ptr(false)},
		{"double sep", []templatePiece{sp("<s>"), seq("A"), sp("</s>"), sp("</s>"), seq("B"), sp("</s>")}, "<s>", "</s>", ptr(true)},
		{"no trailing", []templatePiece{sp("[CLS]"), seq("A"), sp("[SEP]"), seq("B")}, "[CLS]", "", ptr(true)},
		{"no pair", nil, "[CLS]", "[SEP]", nil},
		{"odd", []templatePiece{seq("B"), seq("A")}, "", "", nil},
	}
	for _, c := range cases {
		got := pairAddsSep(c.pair, c.first, c.last, "[SEP]", "</s>")
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: got %v, want %v", c.name, deref(got), deref(c.want))
		}
	}
}

func ptr(b bool) *bool { return &b }

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
