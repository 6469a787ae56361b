package runner

import "github.com/sovereign-ai/sovereign/internal/llamacpp"

// CPUKernels says which CPU kernels this binary computes with here: in the
// portable build, the ggml CPU variant chosen for this CPU (or named by
// SOVEREIGN_CPU_VARIANT), e.g. "zen4 (best of 7 for this CPU)"; in a build
// for one CPU, "built-in (-march=native)". The error says why none can
// run. For `sovereign version` and the server's start-up banner; the
// runner logs the same when it loads a model.
func CPUKernels() (string, error) {
	b, err := llamacpp.ChooseCPU()
	if err != nil {
		return "", err
	}
	return b.String(), nil
}
