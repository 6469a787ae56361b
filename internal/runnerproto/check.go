package runnerproto

import (
	"github.com/sovereign-ai/sovereign/internal/gguf"
)

// CheckModelFile verifies that path is a complete, readable GGUF file before
// llama.cpp sees it, so that a missing, truncated or foreign file is
// reported in plain words naming the file (gguf's errors name it).
func CheckModelFile(path string) error {
	_, err := gguf.Open(path)
	return err
}
