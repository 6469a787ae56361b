// Command mkmodel writes a tiny random-weight chat model (internal/gguf/testmodel:
// a ChatML llama model of a few hundred KiB that llama.cpp runs in milliseconds)
// for scripts/deb-test.sh, which installs it into the packaged service's data
// directory to check that the service answers a chat under its hardened unit.
//
//	go run ./tests/deb/mkmodel OUT.gguf
package main

import (
	"fmt"
	"os"

	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mkmodel OUT.gguf")
		os.Exit(2)
	}
	if err := testmodel.Write(os.Args[1], testmodel.Options{Name: "deb-test-tiny"}); err != nil {
		fmt.Fprintln(os.Stderr, "mkmodel:", err)
		os.Exit(1)
	}
}
