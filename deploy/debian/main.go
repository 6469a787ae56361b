// Command debian builds Sovereign's Debian package, dist/sovereign_<version>_amd64.deb,
// with nfpm used as a library: no dpkg-deb, no hand-made control files.
//
//	go run -C deploy/debian . -bin $PWD/bin/sovereign -version 0.1.0 -out $PWD/dist
//
// (`make package` runs it.) The package installs /usr/bin/sovereign, a hardened
// systemd unit, /etc/sovereign/sovereign.yaml and /etc/default/sovereign
// (conffiles), and maintainer scripts that create the sovereign system user and
// the first admin key; docs/debian.md describes it. Its Depends are computed
// from the binary's dynamic section (DT_NEEDED and the highest GLIBC_ /
// GLIBCXX_ symbol versions), so a binary that links another library gets the
// right package or a build error, never a package that cannot start.
//
// This is a module of its own (deploy/debian/go.mod) so nfpm and its
// dependencies stay out of the server's module.
package main

import (
	"debug/elf"
	"embed"
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
	Binary  string    // the sovereign binary to package
	Version string    // Debian version, e.g. 0.1.0 or 0.1.0~git20261128.528addf
	Doc     string    // docs/debian.md, installed as /usr/share/doc/sovereign/debian.md ("" to leave out)
	OutDir  string    // where sovereign_<version>_amd64.deb is written
	MTime   time.Time // timestamp of every file (reproducible builds)
}

func main() {
	var o Options
	flag.StringVar(&o.Binary, "bin", "../../bin/sovereign", "sovereign binary to package")
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

// Depends returns the package's Depends: the packages of the binary's
// DT_NEEDED libraries, with minimum versions from the highest GLIBC_ and
// GLIBCXX_ symbol versions it imports, then adduser (postinst) and
// ca-certificates (HTTPS to model sources and upstreams).
func Depends(binary string) ([]string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", binary, err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", binary, err)
	}
	var glibc, glibcxx []int
	for _, s := range syms {
		switch {
		case strings.HasPrefix(s.Version, "GLIBC_2."):
			glibc = maxVersion(glibc, s.Version[len("GLIBC_"):])
		case strings.HasPrefix(s.Version, "GLIBCXX_3.4"):
			glibcxx = maxVersion(glibcxx, s.Version[len("GLIBCXX_"):])
		}
	}
	pkgs := map[string]string{}
	for _, lib := range libs {
		p, ok := sonamePackages[lib]
		if !ok {
			return nil, fmt.Errorf("%s links %s, which deploy/debian does not know the package of: add it to sonamePackages", binary, lib)
		}
		pkgs[p] = p
	}
	if _, ok := pkgs["libc6"]; ok && len(glibc) > 0 {
		pkgs["libc6"] = "libc6 (>= " + joinVersion(glibc) + ")"
	}
	if _, ok := pkgs["libstdc++6"]; ok && len(glibcxx) == 3 {
		if gcc, ok := glibcxxGCC[glibcxx[2]]; ok {
			pkgs["libstdc++6"] = "libstdc++6 (>= " + gcc + ")"
		} else if glibcxx[2] > 33 {
			return nil, fmt.Errorf("%s needs GLIBCXX_%s: add its GCC release to glibcxxGCC", binary, joinVersion(glibcxx))
		}
	}
	var out []string
	for _, d := range pkgs {
		out = append(out, d)
	}
	sort.Strings(out)
	return append(out, "adduser", "ca-certificates"), nil
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
