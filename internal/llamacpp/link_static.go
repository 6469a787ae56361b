//go:build !ggml_dl

package llamacpp

// A build for one CPU (make build MARCH=native or a -march level): llama.cpp
// and ggml's CPU backend are static libraries linked into the binary.

/*
#cgo LDFLAGS: -lllama-common -lcpp-httplib -lllama-common-base -lllama -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lpthread -ldl
*/
import "C"

const dynamicCPU = false
