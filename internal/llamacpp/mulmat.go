package llamacpp

/*
#include <string.h>
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

// sov_mul_mat computes out (n x rows) = x (n x cols) times the weight matrix
// w (rows x cols of ggml type typ, in the file's layout) as one MUL_MAT on
// ggml's CPU backend. With repack the weight is put in the CPU device's
// CPU_REPACK buffer type, as llama.cpp puts a model's weights by default;
// *wbytes is set to the bytes it took there. Returns 0, or -1 when the
// CPU_REPACK type is missing, -2 when it does not take this weight (as
// llama.cpp would then keep it in a plain buffer), -3 on allocation failure,
// -4 when wlen is not the matrix's size in its type.
static int sov_mul_mat(void *set_threads, int typ, const void *w, size_t wlen, int64_t cols, int64_t rows, const float *x, int64_t n,
		float *out, int threads, int repack, size_t *wbytes) {
	ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
	ggml_backend_buffer_type_t wbuft = ggml_backend_dev_buffer_type(dev);
	if (repack) {
		ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
		ggml_backend_dev_get_extra_bufts_t get = (ggml_backend_dev_get_extra_bufts_t)
			ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
		wbuft = NULL;
		for (ggml_backend_buffer_type_t *b = get ? get(dev) : NULL; b && *b; b++) {
			if (strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) {
				wbuft = *b;
			}
		}
		if (wbuft == NULL) {
			return -1;
		}
	}
	struct ggml_init_params ip = { ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true };
	struct ggml_context *wctx = ggml_init(ip), *ctx = ggml_init(ip);
	struct ggml_tensor *W = ggml_new_tensor_2d(wctx, (enum ggml_type)typ, cols, rows);
	struct ggml_tensor *X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, cols, n);
	struct ggml_tensor *Y = ggml_mul_mat(ctx, W, X);
	ggml_backend_t be = NULL;
	ggml_backend_buffer_t wbuf = NULL, buf = NULL;
	int rc = -4;
	if (wlen != ggml_nbytes(W)) {
		goto done;
	}
	rc = -3;
	wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, wbuft);
	buf = ggml_backend_alloc_ctx_tensors(ctx, be = ggml_backend_dev_init(dev, NULL));
	if (wbuf == NULL || buf == NULL || be == NULL) {
		goto done;
	}
	*wbytes = ggml_backend_buft_get_alloc_size(wbuft, W);
	// The check llama.cpp makes before it puts a weight in an extra buffer.
	if (repack && !ggml_backend_dev_supports_op(dev, Y)) {
		rc = -2;
		goto done;
	}
	ggml_backend_tensor_set(W, w, 0, ggml_nbytes(W));
	ggml_backend_tensor_set(X, x, 0, ggml_nbytes(X));
	((void (*)(ggml_backend_t, int))set_threads)(be, threads);
	struct ggml_cgraph *gf = ggml_new_graph(ctx);
	ggml_build_forward_expand(gf, Y);
	if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) {
		goto done;
	}
	ggml_backend_tensor_get(Y, out, 0, ggml_nbytes(Y));
	rc = 0;
done:
	if (buf) ggml_backend_buffer_free(buf);
	if (wbuf) ggml_backend_buffer_free(wbuf);
	if (be) ggml_backend_free(be);
	ggml_free(ctx);
	ggml_free(wctx);
	return rc;
}
*/
import "C"

import (
	"fmt"
	"slices"
	"unsafe"
)

// MulMat multiplies a weight matrix by activations the way a model's
// MUL_MAT runs on ggml's CPU backend, for tests of the matrix kernels: w holds
// rows rows of cols values of ggml type typ (gguf.GGMLType's numbering) in the
// GGUF file's layout, x holds n rows of cols float32 activations, and the
// result holds n rows of rows products. With repack the weight goes to the
// repacking buffer type LoadModel uses by default (see ModelParams.NoRepack),
// which lays out the types it has kernels for; without, it stays as in the
// file. weightBytes is what the weight took in its buffer (more than the
// file's bytes where the layout widens it, as Q5_0 held as Q8_0 does).
func MulMat(typ int, w []byte, cols, rows int, x []float32, n, threads int, repack bool) (out []float32, weightBytes int, err error) {
	if _, err := Init(); err != nil {
		return nil, 0, err
	}
	if len(x) != n*cols || len(w) == 0 || rows <= 0 || n <= 0 {
		return nil, 0, fmt.Errorf("llamacpp.MulMat: %d activations for %d x %d, %d weight bytes", len(x), n, cols, len(w))
	}
	out = make([]float32, n*rows)
	var wb C.size_t
	rp := 0
	if repack {
		rp = 1
	}
	switch rc := C.sov_mul_mat(cpuProc("ggml_backend_set_n_threads"), C.int(typ), unsafe.Pointer(&w[0]), C.size_t(len(w)), C.int64_t(cols), C.int64_t(rows),
		(*C.float)(unsafe.Pointer(&x[0])), C.int64_t(n), (*C.float)(unsafe.Pointer(&out[0])), C.int(threads), C.int(rp), &wb); rc {
	case 0:
		return out, int(wb), nil
	case -1:
		return nil, 0, fmt.Errorf("llamacpp.MulMat: the CPU backend has no CPU_REPACK buffer type")
	case -2:
		return nil, int(wb), fmt.Errorf("llamacpp.MulMat: CPU_REPACK does not take a %d x %d matrix of type %d", rows, cols, typ)
	case -4:
		return nil, 0, fmt.Errorf("llamacpp.MulMat: %d weight bytes are not a %d x %d matrix of type %d", len(w), rows, cols, typ)
	default:
		return nil, 0, fmt.Errorf("llamacpp.MulMat: ggml failed (%d)", int(rc))
	}
}

// HasAVX512VNNI reports whether the CPU backend in use was compiled for
// AVX-512 VNNI (and this CPU has it), the variants where
// scripts/llama-cpp/patch.py's kernels are built in.
func HasAVX512VNNI() bool {
	if _, err := Init(); err != nil {
		return false
	}
	return slices.Contains(CPUFeatures(), "AVX512_VNNI")
}
