package models

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ImportOptions tunes [Store.Import].
type ImportOptions struct {
	// ID is the model id in the store; empty derives one from the
	// directory's name.
	ID string
	// Progress receives human progress output; nil is quiet.
	Progress io.Writer
}

// Import converts a local Hugging Face model directory (config.json,
// model.safetensors, tokenizer.json; today BERT-family sentence encoders
// such as all-MiniLM-L6-v2) to GGUF and adds it to the store as opts.ID,
// replacing a model of the same id. The conversion is staged like a pull,
// so a failure leaves nothing in the store. It returns an error if srcDir is
// not a directory, if the converter rejects it, if the result is not a
// readable GGUF (wrapping [ErrInvalidGGUF]) or if the id is invalid
// (wrapping [ErrInvalidID]).
func (s *Store) Import(ctx context.Context, srcDir string, opts ImportOptions) (Manifest, error) {
	abs, err := filepath.Abs(srcDir)
	if err != nil {
		return Manifest{}, fmt.Errorf("import %s: %w", srcDir, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return Manifest{}, fmt.Errorf("import %s: %w", srcDir, err)
	}
	if !info.IsDir() {
		return Manifest{}, fmt.Errorf("import %s: not a directory (import takes a Hugging Face model directory; pull a .gguf file with `models pull file://…`)", srcDir)
	}
	id := opts.ID
	if id == "" {
		id = sanitizeID(filepath.Base(abs))
	}
	if err := ValidateID(id); err != nil {
		return Manifest{}, fmt.Errorf("import %s: %w", srcDir, err)
	}
	st, err := s.newStaging(id)
	if err != nil {
		return Manifest{}, err
	}
	defer st.cleanup()
	res, err := convertDir(ctx, st, abs, abs, opts.Progress)
	if err != nil {
		return Manifest{}, fmt.Errorf("import %s: %w", srcDir, err)
	}
	m, err := st.finish(id, "file://"+filepath.ToSlash(abs), res, "", nil)
	if err != nil {
		return Manifest{}, fmt.Errorf("import %s: %w", srcDir, err)
	}
	return m, nil
}

// convertDir converts the Hugging Face directory src (known to the user as
// name) into the staging model file and returns its checksum.
func convertDir(ctx context.Context, st *staging, src, name string, progress io.Writer) (fetched, error) {
	if err := ctx.Err(); err != nil {
		return fetched{}, err
	}
	if _, err := os.Stat(filepath.Join(src, "config.json")); err != nil {
		return fetched{}, fmt.Errorf("%s is not a Hugging Face model directory (no config.json)", name)
	}
	cp := newCountProgress(progress, "convert to GGUF", "tensors")
	if err := convertBERT(src, st.modelPath(), cp.update); err != nil {
		return fetched{}, fmt.Errorf("convert %s to GGUF: %w", name, err)
	}
	cp.finish()
	sum, n, err := fileSHA256(st.modelPath())
	if err != nil {
		return fetched{}, fmt.Errorf("convert %s: %w", name, err)
	}
	return fetched{name: name + " (converted to GGUF)", sha256: sum, size: n}, nil
}

// countProgress shows "label  done/total unit" for a step-counted task, on
// the same schedule as Progress (redrawn on a terminal, periodic lines
// otherwise).
type countProgress struct {
	mu          sync.Mutex
	w           io.Writer
	label, unit string
	tty         bool
	last        time.Time
	done, total int
	started     bool
}

func newCountProgress(w io.Writer, label, unit string) *countProgress {
	return &countProgress{w: w, label: label, unit: unit, tty: isTerminal(w)}
}

func (c *countProgress) update(done, total int) {
	if c.w == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done, c.total, c.started = done, total, true
	every := 2 * time.Second
	if c.tty {
		every = 100 * time.Millisecond
	}
	if now := time.Now(); now.Sub(c.last) >= every {
		c.last = now
		c.draw(false)
	}
}

func (c *countProgress) finish() {
	if c.w == nil || !c.started {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draw(true)
}

func (c *countProgress) draw(final bool) {
	line := fmt.Sprintf("%s  %d/%d %s", c.label, c.done, c.total, c.unit)
	switch {
	case c.tty && final:
		fmt.Fprintf(c.w, "\r%s\x1b[K\n", line)
	case c.tty:
		fmt.Fprintf(c.w, "\r%s\x1b[K", line)
	default:
		fmt.Fprintln(c.w, line)
	}
}
