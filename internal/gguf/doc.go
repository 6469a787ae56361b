// Package gguf reads and writes GGUF files, the model container format used
// by llama.cpp.
//
// Reading (Open, Read) parses the header only: version, metadata key/value
// pairs of every GGUF type (arrays included) and the tensor directory. It
// validates the file the way llama.cpp does — magic, version 2 or 3, sane
// counts, known tensor types, row lengths that are whole quantization
// blocks, aligned and contiguous tensor data lying entirely inside the file —
// so that a file it accepts will not be rejected by llama.cpp for structural
// reasons. Every error names the file and what is wrong. The reader never
// allocates much more memory than the file's size, however corrupt the
// header is (see FuzzRead).
//
// Writing (Writer) produces a GGUF v3 file with typed metadata and F32/F16
// (or pre-encoded) tensors, aligned to 32 bytes, streaming tensor data so
// large models need not be held in memory.
package gguf
