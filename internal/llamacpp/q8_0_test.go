package llamacpp_test

import (
	"math"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/gguf"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// defaultChatModel returns the path of the default chat model's GGUF file,
// fetching it when missing.
func defaultChatModel(t *testing.T) string {
	t.Helper()
	return testutil.DefaultModels(t).Path("gemma3-270m")
}

// outputs decodes each prompt as its own sequence, all in one batch, and
// returns the logits and the final hidden state (the output layer's input)
// of every prompt's last token.
func outputs(t *testing.T, m *llamacpp.Model, prompts []string) (logits, hidden [][]float32) {
	t.Helper()
	c, err := llamacpp.NewContext(m, llamacpp.ContextParams{NCtx: 128 * len(prompts), NBatch: 512, NUBatch: 512,
		NSeqMax: len(prompts), Threads: 2, ThreadsBatch: 2, KVUnified: true, Embeddings: true, Pooling: llamacpp.PoolingNone})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	b := llamacpp.NewBatch(512)
	defer b.Free()
	var last []int
	for seq, p := range prompts {
		toks, err := m.Tokenize(p, true, false)
		if err != nil {
			t.Fatal(err)
		}
		for i, tok := range toks {
			idx := b.Add(tok, i, seq, i == len(toks)-1)
			if i == len(toks)-1 {
				last = append(last, idx)
			}
		}
	}
	if err := c.Decode(b); err != nil {
		t.Fatal(err)
	}
	for seq, idx := range last {
		logits = append(logits, c.Logits(idx))
		hidden = append(hidden, c.Embedding(seq, idx))
	}
	return logits, hidden
}

// q8Logits multiplies hidden by a Q8_0 matrix the way ggml does: the
// activations quantized to Q8_0 blocks of 32 (scale amax/127 stored as
// float16, values rounded to nearest), integer products per block, scaled
// by both blocks' scales.
func q8Logits(w []byte, rows int, hidden []float32) []float32 {
	nb := len(hidden) / 32
	qa := make([]int8, len(hidden))
	da := make([]float32, nb)
	for l := 0; l < nb; l++ {
		var amax float32
		for _, x := range hidden[l*32 : l*32+32] {
			amax = max(amax, float32(math.Abs(float64(x))))
		}
		d := amax / 127
		da[l] = gguf.Float16ToFloat32(gguf.Float32ToFloat16(d))
		if d != 0 {
			for i, x := range hidden[l*32 : l*32+32] {
				qa[l*32+i] = int8(math.RoundToEven(float64(x / d)))
			}
		}
	}
	out := make([]float32, rows)
	for r := range out {
		row := w[r*nb*34 : (r+1)*nb*34]
		var sum float32
		for l := 0; l < nb; l++ {
			blk := row[l*34 : l*34+34]
			dw := gguf.Float16ToFloat32(uint16(blk[0]) | uint16(blk[1])<<8)
			var dot int32
			for i := 0; i < 32; i++ {
				dot += int32(int8(blk[2+i])) * int32(qa[l*32+i])
			}
			sum += float32(dot) * dw * da[l]
		}
		out[r] = sum
	}
	return out
}

// TestQ8_0OutputLayer checks the multiply of gemma3-270m's Q8_0 output layer
// (its 640 x 262,144 token embedding) against a reference written here, for
// one, five and eight rows at once: on CPUs with AVX-512 VNNI those are the
// kernels of scripts/llama-cpp/q8_0_avx512vnni.inc (gemv; gemm on four rows
// and gemv on one; gemm), elsewhere llama.cpp's own. The integer block
// products are exact either way, so only the order of the float sums may
// differ. NoRepack (llama.cpp's plain kernels) must pass the same check.
func TestQ8_0OutputLayer(t *testing.T) {
	path := defaultChatModel(t)
	gf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := gf.Tensor("token_embd.weight")
	if !ok || ti.Type != gguf.TypeQ8_0 {
		t.Fatalf("token_embd.weight: %+v, want a Q8_0 matrix", ti)
	}
	if _, ok := gf.Tensor("output.weight"); ok {
		t.Fatal("the model has its own output.weight; this test expects the tied token embedding")
	}
	w, err := gf.TensorData("token_embd.weight")
	if err != nil {
		t.Fatal(err)
	}
	rows := int(ti.Dims[1])
	prompts := modelPrompts
	for _, mp := range []llamacpp.ModelParams{{}, {NoRepack: true}} {
		m, err := llamacpp.LoadModel(path, mp)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 5, 8} {
			logits, hidden := outputs(t, m, prompts[:n])
			for i := range logits {
				if len(logits[i]) != rows || len(hidden[i]) != int(ti.Dims[0]) {
					t.Fatalf("%d prompts, prompt %d: %d logits, hidden state of %d", n, i, len(logits[i]), len(hidden[i]))
				}
				want := q8Logits(w, rows, hidden[i])
				var maxDiff, span float64
				for k := range want {
					maxDiff = max(maxDiff, math.Abs(float64(logits[i][k]-want[k])))
					span = max(span, math.Abs(float64(want[k])))
				}
				t.Logf("NoRepack=%v, %d prompts, prompt %d: largest logit %.2f, largest difference %.2g", mp.NoRepack, n, i, span, maxDiff)
				if maxDiff > 1e-4*span {
					t.Errorf("NoRepack=%v, %d prompts, prompt %d %q: logits differ from the reference by up to %.3g (largest logit %.2f)",
						mp.NoRepack, n, i, prompts[i], maxDiff, span)
				}
			}
		}
		m.Free()
	}
}

// modelPrompts are the prompts the whole-model kernel tests run, from
// prose to code and counting, so that near-ties and clear leads both occur.
var modelPrompts = []string{
	"The capital of France is",
	"Water boils at a temperature of",
	"def fibonacci(n):\n    ",
	"Once upon a time, in a small village,",
	"The chemical symbol for gold is",
	"1, 2, 3, 4, 5,",
	"Translate to German: good morning ->",
	"The largest planet in the solar system is",
}
