//go:build ggml_dl

package llamacpp

// The portable build (make build, MARCH=portable): llama.cpp and ggml are
// shared libraries, found through the binary's run path
// ($ORIGIN/../lib/sovereign, set by the Makefile), and the CPU backend is
// one of the libggml-cpu-*.so variants beside them, chosen at start
// (ChooseCPU).

/*
#cgo LDFLAGS: -lllama-common -lllama -lggml -lggml-base -lstdc++ -lm -lpthread -ldl
*/
import "C"

const dynamicCPU = true
