package llamacpp_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/gguf"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// q5ToQ8 unpacks Q5_0 blocks (fp16 scale d, 4 bytes of fifth bits qh, 16
// bytes of low nibbles) to Q8_0 blocks (d, 32 int8): value j of a block is
// its low nibble (byte j for j < 16, the high half of byte j-16 after) plus
// 16 × bit j of qh, minus 16, as ggml's dequantize_row_q5_0 reads it.
func q5ToQ8(w []byte) []byte {
	out := make([]byte, 0, len(w)/22*34)
	for b := 0; b+22 <= len(w); b += 22 {
		blk := w[b : b+22]
		qh := uint32(blk[2]) | uint32(blk[3])<<8 | uint32(blk[4])<<16 | uint32(blk[5])<<24
		out = append(out, blk[0], blk[1])
		for j := 0; j < 32; j++ {
			lo := blk[6+j%16] & 0x0F
			if j >= 16 {
				lo = blk[6+j%16] >> 4
			}
			v := int(lo) | int(qh>>j&1)<<4
			out = append(out, byte(int8(v-16)))
		}
	}
	return out
}

// TestQ5_0MulMat multiplies random Q5_0 matrices by random activations through
// ggml's CPU backend, with the weight repacked (on CPUs with AVX-512 VNNI
// the runner's llama.cpp unpacks Q5_0 to Q8_0 at load,
// scripts/llama-cpp/q5_0_as_q8_0.inc, and multiplies it with the kernels of
// q8_0_avx512vnni.inc) and in the file's layout (llama.cpp's own Q5_0
// kernels), for 1 to 33 activation rows (gemv, gemm, and gemm with a gemv
// remainder), against a reference written here. The unpacking is exact and
// the integer block products are too, so only the order of the float sums
// may differ: every product must be within 1e-5 of the largest one (they
// measured within 6e-7 of it, and equal for a single block). A wrong bit
// anywhere in the unpacking moves the products of its rows by 16 × its
// scale × an activation: the control, one fifth bit flipped in the
// reference, moves one product by 5 to 3,000 times the tolerance.
func TestQ5_0MulMat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct{ cols, rows int }{{896, 1024}, {4864, 64}, {32, 4}} {
		nb := shape.cols / 32
		w := make([]byte, shape.rows*nb*22)
		for i := range w {
			w[i] = byte(rng.Uint32())
		}
		for b := 0; b < shape.rows*nb; b++ { // scales 0.002-0.02, as in a model
			d := gguf.Float32ToFloat16(0.002 + 0.018*rng.Float32())
			w[b*22], w[b*22+1] = byte(d), byte(d>>8)
		}
		w8 := q5ToQ8(w)
		// A control: one fifth bit flipped in the reference's weights.
		bad := append([]byte(nil), w...)
		bad[2] ^= 1
		bad8 := q5ToQ8(bad)
		for _, n := range []int{1, 3, 4, 5, 8, 33} {
			// Activations that every path quantizes to the same Q8_0
			// blocks: integers in -127..127 with 127 in each block, times
			// a power of two, so the block scale and every quotient are
			// exact (ggml's paths divide and round differently: 127/amax
			// and round-to-even for a row, 1/d and roundf for four rows).
			x := make([]float32, n*shape.cols)
			for b := 0; b < len(x)/32; b++ {
				scale := float32(math.Ldexp(1, -rng.IntN(6)))
				for i := b * 32; i < b*32+32; i++ {
					x[i] = float32(rng.IntN(255)-127) * scale
				}
				x[b*32+rng.IntN(32)] = 127 * scale
			}
			for _, repack := range []bool{true, false} {
				got, wbytes, err := llamacpp.MulMat(int(gguf.TypeQ5_0), w, shape.cols, shape.rows, x, n, 2, repack)
				if repack && !llamacpp.HasAVX512VNNI() {
					// Without the VNNI kernels (a portable build's other
					// variants) Q5_0 has no repacked layout: llama.cpp
					// keeps such a weight in a plain buffer.
					if err == nil || !strings.Contains(err.Error(), "does not take") {
						t.Fatalf("repacking Q5_0 without AVX-512 VNNI: %v, want CPU_REPACK to refuse it", err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if repack && llamacpp.HasAVX512VNNI() && wbytes != len(w8) {
					t.Fatalf("%d x %d: the repacked Q5_0 weight took %d bytes, want %d (held as Q8_0)", shape.rows, shape.cols, wbytes, len(w8))
				}
				var maxDiff, span, ctl float64
				for r := 0; r < n; r++ {
					xr := x[r*shape.cols : (r+1)*shape.cols]
					want := q8Logits(w8, shape.rows, xr)
					if r == 0 {
						ctl = math.Abs(float64(q8Logits(bad8, shape.rows, xr)[0] - want[0]))
					}
					for k, v := range want {
						maxDiff = max(maxDiff, math.Abs(float64(got[r*shape.rows+k]-v)))
						span = max(span, math.Abs(float64(v)))
					}
				}
				t.Logf("%d x %d, %d rows, repack=%v (%d weight bytes): largest product %.3g, largest difference %.2g; one wrong fifth bit: %.2g",
					shape.rows, shape.cols, n, repack, wbytes, span, maxDiff, ctl)
				if ctl <= 1e-5*span {
					t.Fatalf("the control moved the first product by %.2g only, within the tolerance", ctl)
				}
				if maxDiff > 1e-5*span {
					t.Errorf("%d x %d, %d rows, repack=%v: products differ from the reference by up to %.3g (largest %.3g)",
						shape.rows, shape.cols, n, repack, maxDiff, span)
				}
			}
		}
	}
}

// TestQ5_0Model checks Qwen2.5-Coder 0.5B, whose Q4_K_M file holds most block
// weights (attention Q, K, output, FFN gate and up) in Q5_0, end to end: the
// model loaded as by default (on CPUs with AVX-512 VNNI, Q5_0 taken as Q8_0)
// against NoRepack (llama.cpp's own Q5_0 kernels, and none of the other
// repacked ones), for one, five and eight prompts in a batch. Both compute
// the same integer block products in a different float order (and the
// repacked Q8_0 kernels quantize four activation rows at a time with a
// different rounding), which 24 layers amplify: the final hidden states
// measured 2.2-3.4% apart (relative L2), and as far, 2.0-3.0%, in a build
// without the Q5_0 path, where only the Q8_0 and Q4_K repacking differ; the
// batch alone moves them 1.6%. So they must agree within 5%, and the greedy
// token must be the same wherever NoRepack's best logit leads the second by
// more than 0.5 (near-ties flip with any change of order: without the Q5_0
// path, "The chemical symbol for gold is" did). TestQ5_0MulMat is the exact
// check of the kernels; this one shows the model runs through them.
func TestQ5_0Model(t *testing.T) {
	path := testutil.DefaultModels(t).Path("qwen2.5-coder-0.5b-instruct")
	gf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if ti, ok := gf.Tensor("blk.0.ffn_gate.weight"); !ok || ti.Type != gguf.TypeQ5_0 {
		t.Fatalf("blk.0.ffn_gate.weight: %+v, want a Q5_0 matrix", ti)
	}
	prompts := modelPrompts
	var logits, hidden [2][][][]float32 // [NoRepack][n index][prompt]
	for mi, mp := range []llamacpp.ModelParams{{}, {NoRepack: true}} {
		m, err := llamacpp.LoadModel(path, mp)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 5, 8} {
			l, h := outputs(t, m, prompts[:n])
			logits[mi] = append(logits[mi], l)
			hidden[mi] = append(hidden[mi], h)
		}
		m.Free()
	}
	for ni, n := range []int{1, 5, 8} {
		for i := 0; i < n; i++ {
			a, b := hidden[0][ni][i], hidden[1][ni][i]
			var d2, b2 float64
			for k := range a {
				d := float64(a[k] - b[k])
				d2 += d * d
				b2 += float64(b[k]) * float64(b[k])
			}
			rel := math.Sqrt(d2 / b2)
			ta, tb := argmax(logits[0][ni][i]), argmax(logits[1][ni][i])
			lead := math.Inf(1) // NoRepack's best logit over its second
			for k, v := range logits[1][ni][i] {
				if k != tb {
					lead = min(lead, float64(logits[1][ni][i][tb]-v))
				}
			}
			t.Logf("%d prompts, prompt %d: hidden states apart by %.2g relative L2; greedy token %d and %d (NoRepack's lead %.2f)", n, i, rel, ta, tb, lead)
			if rel > 0.05 {
				t.Errorf("%d prompts, prompt %d %q: hidden states differ from llama.cpp's Q5_0 kernels' by %.3g relative L2", n, i, prompts[i], rel)
			}
			if ta != tb && lead > 0.5 {
				t.Errorf("%d prompts, prompt %d %q: greedy token %d, llama.cpp's Q5_0 kernels give %d, ahead by %.2f", n, i, prompts[i], ta, tb, lead)
			}
		}
	}
	// The batch alone, for scale: prompt 0 by itself and beside four others.
	a, b := hidden[1][0][0], hidden[1][1][0]
	var d2, b2 float64
	for k := range a {
		d2 += float64(a[k]-b[k]) * float64(a[k]-b[k])
		b2 += float64(b[k]) * float64(b[k])
	}
	t.Logf("NoRepack, prompt 0 alone and in a batch of 5: hidden states apart by %.2g relative L2", math.Sqrt(d2/b2))
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
