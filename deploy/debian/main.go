// Command debian builds Sovereign's Debian package, dist/sovereign_<version>_amd64.deb,
// with nfpm used as a library: no dpkg-deb, no hand-made control files.
//
//	go run -C deploy/debian . -bin $PWD/bin/sovereign -version 0.1.0 -out $PWD/dist
//
// (`make package` runs it.) The package installs /usr/bin/sovereign (with, for
// the default portable build, its libraries in /usr/lib/sovereign: llama.cpp,
// ggml and ggml's CPU variants, which the binary loads through its run path
// $ORIGIN/../lib/sovereign), a hardened systemd unit,
// /etc/sovereign/sovereign.yaml and /etc/default/sovereign (conffiles), and
// maintainer scripts that create the sovereign system user and the first admin
// key; docs/debian.md describes it. Its Depends are computed from the dynamic
// sections of the binary and of its libraries (DT_NEEDED and the highest
// GLIBC_ / GLIBCXX_ symbol versions), so a binary or library that links
// another library gets the right package or a build error, never a package
// that cannot start.
//
// This is a module of its own (deploy/debian/go.mod) so nfpm and its
// dependencies stay out of the server's module.
package main

import (
	"debug/elf"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
)

//go:embed files
var packageFiles embed.FS

// Options are what a build takes; zero fields get the defaults of main.
type Options struct {
	Binary  string    // the sovereign binary to package (a portable build's libraries come from ../lib/sovereign beside it)
	Version string    // Debian version, e.g. 0.1.0 or 0.1.0~git20261128.528addf
	Doc     string    // docs/debian.md, installed as /usr/share/doc/sovereign/debian.md ("" to leave out)
	OutDir  string    // where sovereign_<version>_amd64.deb is written
	MTime   time.Time // timestamp of every file (reproducible builds)
}

func main() {
	var o Options
	flag.StringVar(&o.Binary, "bin", "../../bin/sovereign", "sovereign binary to package (with its libraries from ../lib/sovereign beside it, for a portable build)")
	flag.StringVar(&o.Version, "version", "", "Debian package version (required; must start with a digit)")
	flag.StringVar(&o.Doc, "doc", "../../docs/debian.md", "docs/debian.md, shipped in /usr/share/doc/sovereign (\"\" to leave out)")
	flag.StringVar(&o.OutDir, "out", "../../dist", "output directory")
	epoch := flag.Int64("mtime", envInt64("SOURCE_DATE_EPOCH"), "Unix time stamped on every file (default $SOURCE_DATE_EPOCH, else now)")
	flag.Parse()
	if *epoch > 0 {
		o.MTime = time.Unix(*epoch, 0).UTC()
	}
	path, err := Build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "debian:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

func envInt64(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}

// Build writes the package and returns its path.
func Build(o Options) (string, error) {
	if o.Version == "" || o.Version[0] < '0' || o.Version[0] > '9' {
		return "", fmt.Errorf("-version %q: a Debian version starting with a digit is required (e.g. 0.1.0)", o.Version)
	}
	if o.MTime.IsZero() {
		o.MTime = time.Now().UTC().Truncate(time.Second)
	}
	libs, err := ownLibraries(o.Binary)
	if err != nil {
		return "", err
	}
	depends, err := Depends(o.Binary)
	if err != nil {
		return "", err
	}
	// The embedded files go to a temporary directory: nfpm reads sources from disk.
	tmp, err := os.MkdirTemp("", "sovereign-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := func(name string) string { return filepath.Join(tmp, name) }
	err = fs.WalkDir(packageFiles, "files", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := packageFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(src(filepath.Base(p)), b, 0o644)
	})
	if err != nil {
		return "", err
	}

	file := func(source, dest string, mode os.FileMode) *files.Content {
		return &files.Content{Source: source, Destination: dest, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: o.MTime}}
	}
	conffile := func(source, dest string, mode os.FileMode) *files.Content {
		c := file(source, dest, mode)
		c.Type = files.TypeConfig
		return c
	}
	contents := files.Contents{
		file(o.Binary, "/usr/bin/sovereign", 0o755),
		file(src("sovereign.service"), "/usr/lib/systemd/system/sovereign.service", 0o644),
		// Read by the service as root:sovereign 0640 (postinst sets the group,
		// which does not exist when dpkg unpacks).
		conffile(src("sovereign.yaml"), "/etc/sovereign/sovereign.yaml", 0o640),
		// Read by systemd (root) only: it may hold secrets.
		conffile(src("default"), "/etc/default/sovereign", 0o600),
	}
	// The libraries as the loader opens them (see ownLibraries): regular
	// files, 0644 as Debian wants shared libraries. No ldconfig trigger:
	// /usr/lib/sovereign is private to the binary, found through its run
	// path, not in the loader's search path.
	for _, l := range libs {
		contents = append(contents, file(l.path, LibDir+"/"+l.name, 0o644))
	}
	if o.Doc != "" {
		contents = append(contents, file(o.Doc, "/usr/share/doc/sovereign/debian.md", 0o644))
	}

	info := nfpm.WithDefaults(&nfpm.Info{
		Name:          "sovereign",
		Arch:          "amd64",
		Platform:      "linux",
		Version:       o.Version,
		VersionSchema: "none", // the Debian version as given, not reparsed as semver
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "Sovereign maintainers <sovereign@localhost>",
		Homepage:      "https://github.com/sovereign-ai/sovereign",
		Description: "self-hosted OpenAI-compatible inference server\n" +
			"Sovereign runs models itself (llama.cpp, continuous batching on CPU) and\n" +
			"fronts OpenAI-compatible upstreams under one API, with keys, teams,\n" +
			"policies, limits, a tamper-evident request log and a web console.\n" +
			"This package runs it as a hardened systemd service (sovereign.service).",
		MTime: o.MTime,
		Overridables: nfpm.Overridables{
			Depends:  depends,
			Contents: contents,
			Umask:    0o022,
			Scripts: nfpm.Scripts{
				PostInstall: src("postinst"),
				PreRemove:   src("prerm"),
				PostRemove:  src("postrm"),
			},
			Deb: nfpm.Deb{Compression: "zstd"},
		},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", err
	}
	pkger, err := nfpm.Get("deb")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(o.OutDir, pkger.ConventionalFileName(info))
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if err := pkger.Package(info, f); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return out, os.Rename(f.Name(), out)
}

// sonamePackages maps the shared libraries a sovereign binary may link to
// the Debian (bookworm and later) packages that ship them.
var sonamePackages = map[string]string{
	"libc.so.6":            "libc6",
	"libm.so.6":            "libc6",
	"libpthread.so.0":      "libc6",
	"libdl.so.2":           "libc6",
	"librt.so.1":           "libc6",
	"ld-linux-x86-64.so.2": "libc6",
	"libstdc++.so.6":       "libstdc++6",
	"libgcc_s.so.1":        "libgcc-s1",
	"libgomp.so.1":         "libgomp1",
}

// glibcxxGCC is the GCC release that introduced each GLIBCXX_3.4.N symbol
// version (libstdc++6's Debian version follows GCC's).
var glibcxxGCC = map[int]string{
	20: "5", 21: "5", 22: "6", 23: "7", 24: "7", 25: "8", 26: "9", 27: "10",
	28: "10", 29: "11", 30: "12", 31: "13", 32: "13.2", 33: "14",
}

// Depends returns the package's Depends: the packages of the DT_NEEDED
// libraries of the binary and of its own libraries (ownLibraries: those
// need each other, which the package ships, and the C and C++ runtime),
// with minimum versions from the highest GLIBC_ and GLIBCXX_ symbol
// versions any of them imports, then adduser (postinst) and
// ca-certificates (HTTPS to model sources and upstreams).
func Depends(binary string) ([]string, error) {
	libs, err := ownLibraries(binary)
	if err != nil {
		return nil, err
	}
	objects := []string{binary}
	shipped := map[string]bool{}
	for _, l := range libs {
		objects = append(objects, l.path)
		shipped[l.name] = true
	}
	deps, err := dependsOf(objects, shipped)
	if err != nil {
		return nil, err
	}
	return append(deps, "adduser", "ca-certificates"), nil
}

// dependsOf is the Depends the ELF files need, the libraries named in
// shipped (the package's own) left out.
func dependsOf(objects []string, shipped map[string]bool) ([]string, error) {
	var glibc, glibcxx []int
	pkgs := map[string]string{}
	for _, obj := range objects {
		f, err := elf.Open(obj)
		if err != nil {
			return nil, err
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", obj, err)
		}
		syms, err := f.DynamicSymbols()
		f.Close()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return nil, fmt.Errorf("%s: %w", obj, err)
		}
		for _, s := range syms {
			switch {
			case strings.HasPrefix(s.Version, "GLIBC_2."):
				glibc = maxVersion(glibc, s.Version[len("GLIBC_"):])
			case strings.HasPrefix(s.Version, "GLIBCXX_3.4"):
				glibcxx = maxVersion(glibcxx, s.Version[len("GLIBCXX_"):])
			}
		}
		for _, lib := range libs {
			if shipped[lib] {
				continue
			}
			p, ok := sonamePackages[lib]
			if !ok {
				return nil, fmt.Errorf("%s links %s, which deploy/debian does not know the package of: add it to sonamePackages", obj, lib)
			}
			pkgs[p] = p
		}
	}
	if _, ok := pkgs["libc6"]; ok && len(glibc) > 0 {
		pkgs["libc6"] = "libc6 (>= " + joinVersion(glibc) + ")"
	}
	if _, ok := pkgs["libstdc++6"]; ok && len(glibcxx) == 3 {
		if gcc, ok := glibcxxGCC[glibcxx[2]]; ok {
			pkgs["libstdc++6"] = "libstdc++6 (>= " + gcc + ")"
		} else if glibcxx[2] > 33 {
			return nil, fmt.Errorf("%s need GLIBCXX_%s: add its GCC release to glibcxxGCC", strings.Join(objects, ", "), joinVersion(glibcxx))
		}
	}
	var out []string
	for _, d := range pkgs {
		out = append(out, d)
	}
	sort.Strings(out)
	return out, nil
}

func maxVersion(cur []int, v string) []int {
	var n []int
	for _, p := range strings.Split(v, ".") {
		i, err := strconv.Atoi(p)
		if err != nil {
			return cur
		}
		n = append(n, i)
	}
	for i := 0; i < len(n) && i < len(cur); i++ {
		if n[i] != cur[i] {
			if n[i] > cur[i] {
				return n
			}
			return cur
		}
	}
	if len(n) > len(cur) {
		return n
	}
	return cur
}

func joinVersion(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ".")
}

// LibDir is where the package puts the binary's libraries: its run path,
// $ORIGIN/../lib/sovereign, seen from /usr/bin.
const LibDir = "/usr/lib/sovereign"

// runPath is the run path entry of a portable binary.
const runPath = "$ORIGIN/../lib/sovereign"

// ownLib is one of the binary's own libraries as the package ships it.
type ownLib struct {
	name string // its SONAME, or its own name when it has none (a CPU module)
	path string // the regular file, links resolved
}

// ownLibraries returns the libraries the binary loads from its own lib
// directory, ../lib/sovereign beside it, when its run path names
// $ORIGIN/../lib/sovereign (the portable build); none when it has no run
// path (a build with llama.cpp linked in, even beside a lib/sovereign left
// from an earlier build). Each is shipped once, as a regular file under
// the name the loader opens: its SONAME, or its own name for the CPU
// modules, which have none and are opened by path. The development links
// (libllama.so) and versioned names (libllama.so.0.6.0) of the build tree
// are left out: nothing opens them at run time, and Debian keeps such
// links out of runtime packages. These are the rules of the server
// module's internal/bundle/libdir (the bundle and the image lay the
// directory out the same way), which this module cannot import.
func ownLibraries(binary string) ([]ownLib, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, err
	}
	var entries []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, err := f.DynString(tag)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", binary, err)
		}
		for _, v := range vals {
			entries = append(entries, strings.Split(v, ":")...)
		}
	}
	f.Close()
	found := false
	for _, e := range entries {
		switch strings.TrimSuffix(strings.ReplaceAll(e, "${ORIGIN}", "$ORIGIN"), "/") {
		case "":
		case runPath:
			found = true
		default:
			return nil, fmt.Errorf("%s has the run path %q: the package puts its libraries only at %s (%s)", binary, e, LibDir, runPath)
		}
	}
	if !found {
		return nil, nil
	}
	real, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(filepath.Dir(real), "..", "lib", "sovereign")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s loads its libraries from %s: %w (run make build)", binary, dir, err)
	}
	type cand struct{ entry, real string }
	byName := map[string][]cand{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file (a library directory holds libraries only)", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		lf, err := elf.Open(real)
		if err != nil {
			return nil, fmt.Errorf("%s: not an ELF shared library: %w", p, err)
		}
		soname, err := lf.DynString(elf.DT_SONAME)
		typ := lf.Type
		lf.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if typ != elf.ET_DYN {
			return nil, fmt.Errorf("%s: not an ELF shared library (type %v)", p, typ)
		}
		name := e.Name()
		if len(soname) > 0 {
			name = soname[0]
		}
		byName[name] = append(byName[name], cand{e.Name(), real})
	}
	var libs []ownLib
	for name, cs := range byName {
		if strings.ContainsAny(name, "/\x00") || !strings.HasPrefix(name, "lib") {
			return nil, fmt.Errorf("%s: a library named %q", dir, name)
		}
		pick := cs[0].real
		named := false
		for _, c := range cs {
			if c.entry == name {
				pick, named = c.real, true
			}
		}
		for _, c := range cs {
			if !named && c.real != pick {
				return nil, fmt.Errorf("%s: %s and %s both have the SONAME %s and no %s says which is used", dir, cs[0].entry, c.entry, name, name)
			}
		}
		libs = append(libs, ownLib{name: name, path: pick})
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("%s loads its libraries from %s, which is empty (run make build)", binary, dir)
	}
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	return libs, nil
}
