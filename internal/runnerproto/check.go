package runnerproto

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// CheckModelFile verifies that path is a readable GGUF file before llama.cpp
// sees it, so that a missing, truncated or foreign file is reported in plain
// words naming the file.
func CheckModelFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("model file %s: %w", path, err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return fmt.Errorf("model file %s is not a GGUF file: too short", path)
	}
	if !bytes.Equal(magic, []byte("GGUF")) {
		return fmt.Errorf("model file %s is not a GGUF file (bad magic %q)", path, magic)
	}
	return nil
}
