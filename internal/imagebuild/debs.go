package imagebuild

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
)

// BasePackages are the Debian packages whose files every image holds: the C
// library and dynamic loader, the C++ runtime, OpenMP (llama.cpp builds that
// use it), CA certificates, time zones, and base-files for /etc/os-release
// (which scanners read to know the distribution of the packages recorded in
// /var/lib/dpkg/status.d).
var BasePackages = []string{"base-files", "libc6", "libgcc-s1", "libstdc++6", "libgomp1", "ca-certificates", "tzdata"}

// Deb is one Debian package the image takes files from.
type Deb struct {
	Package  string
	Version  string
	Arch     string
	Source   string // source package, when it differs from Package
	Homepage string
	Path     string // the .deb file
	Control  []byte // its control file (the stanza written to status.d)
	SHA256   string // of the .deb file
}

// FetchDebs resolves each package to the version apt would install
// (`apt-cache show --no-all-versions`) and downloads the .deb into cacheDir
// with `apt-get download` unless it is there already. Packages that the
// .debs' /usr/share/doc links point at (libgcc-s1's to gcc-12-base, which
// holds the copyright) come too. The result is sorted by package name.
func FetchDebs(ctx context.Context, names []string, cacheDir string, log io.Writer) ([]Deb, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	return withDocLinks(ctx, names, func(todo []string) ([]Deb, error) {
		// One apt-cache call for all: each call reads the whole cache.
		show, err := exec.CommandContext(ctx, "apt-cache", append([]string{"show", "--no-all-versions"}, todo...)...).Output()
		if err != nil {
			return nil, fmt.Errorf("apt-cache show %s: %w", strings.Join(todo, " "), exitErr(err))
		}
		stanzas := map[string]map[string]string{}
		for _, st := range strings.Split(string(show), "\n\n") {
			f := controlFields([]byte(st))
			if p := f["Package"]; p != "" && stanzas[p] == nil {
				stanzas[p] = f
			}
		}
		var round []Deb
		for _, name := range todo {
			f := stanzas[name]
			ver, arch := f["Version"], f["Architecture"]
			if ver == "" || arch == "" {
				return nil, fmt.Errorf("apt-cache show %s: no Version or Architecture", name)
			}
			file := filepath.Join(cacheDir, fmt.Sprintf("%s_%s_%s.deb", name, strings.ReplaceAll(ver, ":", "%3a"), arch))
			if _, err := os.Stat(file); err != nil {
				if err := aptDownload(ctx, name, ver, cacheDir, file, log); err != nil {
					return nil, err
				}
			}
			d, err := ReadDeb(ctx, file)
			if err != nil {
				return nil, err
			}
			if d.Package != name || d.Version != ver {
				return nil, fmt.Errorf("%s: holds %s %s, want %s %s", file, d.Package, d.Version, name, ver)
			}
			round = append(round, d)
		}
		return round, nil
	})
}

// withDocLinks gets the packages names with get, one round at a time, then
// the packages their /usr/share/doc links point at that no round got yet,
// until none is left; the result is sorted by package name.
func withDocLinks(ctx context.Context, names []string, get func(todo []string) ([]Deb, error)) ([]Deb, error) {
	have := map[string]bool{}
	var out []Deb
	for todo := uniqueSorted(names); len(todo) > 0; {
		for _, n := range todo {
			have[n] = true
		}
		round, err := get(todo)
		if err != nil {
			return nil, err
		}
		out = append(out, round...)
		more, err := docLinkPackages(ctx, round)
		if err != nil {
			return nil, err
		}
		todo = nil
		for _, m := range more {
			if !have[m] {
				todo = append(todo, m)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Package < out[j].Package })
	return out, nil
}

func aptDownload(ctx context.Context, name, ver, cacheDir, file string, log io.Writer) error {
	tmp, err := os.MkdirTemp(cacheDir, ".download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if log != nil {
		fmt.Fprintf(log, "apt-get download %s=%s\n", name, ver)
	}
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", name+"="+ver)
	cmd.Dir = tmp
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get download %s=%s: %w: %s", name, ver, err, bytes.TrimSpace(b))
	}
	got, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(got) != 1 {
		return fmt.Errorf("apt-get download %s=%s: want one .deb, got %d", name, ver, len(got))
	}
	return os.Rename(got[0], file)
}

// DebsFromDir reads every .deb in dir (an offline build: the packages were
// downloaded beforehand) and keeps those named and those their doc links
// point at, the last file per name in file name order.
func DebsFromDir(ctx context.Context, dir string, names []string) ([]Deb, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	byName := map[string]Deb{}
	for _, f := range files {
		d, err := ReadDeb(ctx, f)
		if err != nil {
			return nil, err
		}
		byName[d.Package] = d
	}
	return withDocLinks(ctx, names, func(todo []string) ([]Deb, error) {
		var round []Deb
		for _, n := range todo {
			d, ok := byName[n]
			if !ok {
				return nil, fmt.Errorf("no .deb for %s in %s", n, dir)
			}
			round = append(round, d)
		}
		return round, nil
	})
}

// ReadDeb reads a .deb's control fields with dpkg-deb.
func ReadDeb(ctx context.Context, path string) (Deb, error) {
	ctl, err := exec.CommandContext(ctx, "dpkg-deb", "-f", path).Output()
	if err != nil {
		return Deb{}, fmt.Errorf("dpkg-deb -f %s: %w", path, exitErr(err))
	}
	f := controlFields(ctl)
	d := Deb{Package: f["Package"], Version: f["Version"], Arch: f["Architecture"], Homepage: f["Homepage"], Path: path, Control: ctl}
	if src := f["Source"]; src != "" {
		// "gcc-12 (12.2.0-14)": the name only.
		d.Source = strings.TrimSpace(strings.SplitN(src, " ", 2)[0])
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Deb{}, err
	}
	d.SHA256 = sum
	return d, nil
}

// debFiles streams the data archive of a .deb (dpkg-deb --fsys-tarfile) to fn.
func debFiles(ctx context.Context, path string, fn func(h *tar.Header, r io.Reader) error) error {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(bufio.NewReader(out))
	var ferr error
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			ferr = err
			break
		}
		if err := fn(h, tr); err != nil {
			ferr = err
			break
		}
	}
	io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if ferr != nil {
		return ferr
	}
	if werr != nil {
		return fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w: %s", path, werr, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// NeededPackages returns the Debian packages that hold the shared libraries
// the ELF file bin needs on this machine (what ldd shows, found with
// dpkg -S), and those its own libraries need (a portable build's
// lib/sovereign, the CPU modules included: libdir), which themselves ship
// with the binary and need no package.
func NeededPackages(ctx context.Context, bin string) ([]string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, err
	}
	needer := map[string]string{}
	for _, l := range libs {
		needer[l] = bin
	}
	dir, own, err := libdir.Of(bin)
	if err != nil {
		return nil, err
	}
	shipped := libdir.Names(own)
	for _, l := range own {
		for _, n := range l.Needed {
			if _, ok := needer[n]; !ok {
				needer[n] = filepath.Join(dir, l.Name)
				libs = append(libs, n)
			}
		}
	}
	var pkgs []string
	for _, lib := range uniqueSorted(libs) {
		if shipped[lib] {
			continue
		}
		var found string
		for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"} {
			p := filepath.Join(dir, lib)
			if _, err := os.Stat(p); err == nil {
				found = p
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("%s needs %s, not found on this machine", needer[lib], lib)
		}
		pkg, err := ownerPackage(ctx, found)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, pkg)
	}
	return uniqueSorted(pkgs), nil
}

func ownerPackage(ctx context.Context, path string) (string, error) {
	candidates := []string{path}
	// usrmerge: dpkg knows /lib/… where the file is /usr/lib/… and back.
	if strings.HasPrefix(path, "/usr/lib") {
		candidates = append(candidates, strings.TrimPrefix(path, "/usr"))
	} else if strings.HasPrefix(path, "/lib") {
		candidates = append(candidates, "/usr"+path)
	}
	for _, p := range candidates {
		out, err := exec.CommandContext(ctx, "dpkg", "-S", p).Output()
		if err != nil {
			continue
		}
		line := strings.SplitN(string(out), "\n", 2)[0]
		pkg := strings.SplitN(line, ":", 2)[0]
		// "libc6:amd64: /lib/…" → libc6
		return strings.TrimSpace(pkg), nil
	}
	return "", fmt.Errorf("dpkg -S %s: no package holds it", path)
}

func controlFields(b []byte) map[string]string {
	f := map[string]string{}
	var last string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			if len(f) > 0 {
				break // the first stanza only
			}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last != "" {
				f[last] += "\n" + line
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		last = k
		f[k] = strings.TrimSpace(v)
	}
	return f
}

func uniqueSorted(in []string) []string {
	m := map[string]bool{}
	var out []string
	for _, s := range in {
		if !m[s] {
			m[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}

// docLinkPackages returns the packages that debs' /usr/share/doc/<pkg>
// links point at and that debs do not include.
func docLinkPackages(ctx context.Context, debs []Deb) ([]string, error) {
	have := map[string]bool{}
	for _, d := range debs {
		have[d.Package] = true
	}
	var more []string
	for _, d := range debs {
		err := debFiles(ctx, d.Path, func(h *tar.Header, r io.Reader) error {
			if h.Typeflag == tar.TypeSymlink && filepath.Clean("/"+h.Name) == "/usr/share/doc/"+d.Package {
				target := filepath.Base(h.Linkname)
				if !have[target] {
					have[target] = true
					more = append(more, target)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(more)
	return more, nil
}
