// Package libdir reads the private library directory of a sovereign
// binary: in the portable build (make build, MARCH=portable) llama.cpp and
// ggml are shared libraries, and ggml's CPU backend is one module per CPU
// family that the binary loads at start, all in lib/sovereign beside bin/.
// The binary finds them through its run path, $ORIGIN/../lib/sovereign,
// so every way Sovereign is shipped (the offline bundle, the OCI image,
// the Debian package) puts them at <prefix>/lib/sovereign beside
// <prefix>/bin/sovereign; this package says which files those are. A build
// for one CPU (MARCH=native) links everything in and has no run path: no
// directory, nothing to ship.
//
// Every library is shipped as one regular file under the name the dynamic
// loader looks for: its SONAME (libllama.so.0) when it has one, its own
// name otherwise (the CPU modules, which are opened by path). The
// development links of the build tree (libllama.so) and the versioned file
// names (libllama.so.0.6.0) are not needed at run time, and a bundle holds
// no symbolic links; so all three packagings lay the directory out the
// same way.
//
// It uses the standard library only: the server binary (bundle create and
// install) and the image builder both import it. deploy/debian, a module
// of its own, follows the same rules in its own code.
package libdir

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// RunPath is the run path entry of a portable binary, and Rel the same
// directory relative to the binary's own.
const (
	RunPath = "$ORIGIN/../lib/sovereign"
	Rel     = "../lib/sovereign"
)

// Lib is one library as it is shipped.
type Lib struct {
	// Name is the file name it is installed under: its SONAME, or its
	// own name when it has none.
	Name string
	// Path is the regular file that holds it (symbolic links resolved).
	Path   string
	Size   int64
	SHA256 string // hex
	// SONAME is the library's DT_SONAME; empty for the CPU modules.
	SONAME string
	// Needed are its DT_NEEDED entries: the other libraries of the
	// directory, and the C and C++ runtime the system provides.
	Needed []string
}

// Module reports whether the library is a module loaded by path (a ggml
// CPU backend variant) rather than one linked by SONAME.
func (l Lib) Module() bool { return l.SONAME == "" }

// nameRE is what a shipped library may be called: the bundle format allows
// these names only, so that a member name cannot be a path.
var nameRE = regexp.MustCompile(`^lib[A-Za-z0-9_+-][A-Za-z0-9_.+-]*\.so(\.[0-9]+)*$`)

// ValidName reports whether name is a file name a library may be shipped
// under (lib….so, lib….so.N…).
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Dir returns the directory the ELF binary bin loads its own libraries from
// (bin's directory, symbolic links resolved as the loader does for
// $ORIGIN, joined with ../lib/sovereign) when its run path names
// $ORIGIN/../lib/sovereign, and "" when bin has no run path (a build with
// llama.cpp linked in: a lib/sovereign left over from an earlier build is
// not its own) or is not an ELF file. A run path entry of any other kind is
// an error: an installed binary would look for libraries there, where no
// packaging puts them.
func Dir(bin string) (string, error) {
	if ok, err := isELF(bin); err != nil || !ok {
		return "", err // a script or other stand-in: no libraries
	}
	f, err := elf.Open(bin)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var entries []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, err := f.DynString(tag)
		if err != nil { // (none, and no error, for a static binary)
			return "", fmt.Errorf("%s: %w", bin, err)
		}
		for _, v := range vals {
			entries = append(entries, strings.Split(v, ":")...)
		}
	}
	found := false
	for _, e := range entries {
		switch strings.TrimSuffix(strings.ReplaceAll(e, "${ORIGIN}", "$ORIGIN"), "/") {
		case "":
		case RunPath:
			found = true
		default:
			return "", fmt.Errorf("%s has the run path %q: the packaging puts its libraries only at %s", bin, e, RunPath)
		}
	}
	if !found {
		return "", nil
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(real), filepath.FromSlash(Rel))
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%s loads its libraries from %s (run path %s): %w", bin, dir, RunPath, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s: %s is not a directory", bin, dir)
	}
	return dir, nil
}

// Read returns the libraries in dir, sorted by name. Each regular file
// must be an ELF shared object; symbolic links are other names of the
// files they point to. Files with the same SONAME are one library: the
// file the link named after the SONAME points to (what the loader opens),
// or the only one there is.
func Read(dir string) ([]Lib, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type cand struct {
		entry string // the directory entry's name
		real  string // the file it is, links resolved
		lib   Lib
	}
	byName := map[string][]cand{}
	parsed := map[string]Lib{} // by real path
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		st, err := os.Stat(p) // follows links
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file (a library directory holds libraries only)", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		lib, ok := parsed[real]
		if !ok {
			if lib, err = readLib(real, st.Size()); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			parsed[real] = lib
		}
		name := lib.SONAME
		if name == "" {
			name = e.Name()
		}
		byName[name] = append(byName[name], cand{entry: e.Name(), real: real, lib: lib})
	}
	var out []Lib
	for name, cs := range byName {
		pick := -1
		for i, c := range cs {
			if c.entry == name {
				pick = i
			}
		}
		if pick < 0 {
			pick = 0
			for _, c := range cs[1:] {
				if c.real != cs[0].real {
					return nil, fmt.Errorf("%s: %s and %s both have the SONAME %s and no %s says which is used", dir, cs[0].entry, c.entry, name, name)
				}
			}
		}
		if !ValidName(name) {
			return nil, fmt.Errorf("%s: library %s: not a name a library may be shipped under (lib….so[.N…])", dir, name)
		}
		lib := cs[pick].lib
		lib.Name = name
		out = append(out, lib)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Of returns bin's library directory and its libraries; "" and none for a
// binary without one (Dir).
func Of(bin string) (string, []Lib, error) {
	dir, err := Dir(bin)
	if err != nil || dir == "" {
		return "", nil, err
	}
	libs, err := Read(dir)
	if err != nil {
		return "", nil, err
	}
	if len(libs) == 0 {
		return "", nil, fmt.Errorf("%s loads its libraries from %s, which is empty (run make build)", bin, dir)
	}
	return dir, libs, nil
}

// Names returns the set of the libraries' names.
func Names(libs []Lib) map[string]bool {
	m := make(map[string]bool, len(libs))
	for _, l := range libs {
		m[l.Name] = true
	}
	return m
}

// isELF reports whether the file at p starts with the ELF magic number.
func isELF(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	magic := make([]byte, len(elf.ELFMAG))
	if _, err := io.ReadFull(f, magic); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		return false, err
	}
	return string(magic) == elf.ELFMAG, nil
}

func readLib(path string, size int64) (Lib, error) {
	f, err := elf.Open(path)
	if err != nil {
		return Lib{}, fmt.Errorf("not an ELF shared library: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_DYN {
		return Lib{}, fmt.Errorf("not an ELF shared library (type %v)", f.Type)
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return Lib{}, err
	}
	soname, err := f.DynString(elf.DT_SONAME)
	if err != nil {
		return Lib{}, err
	}
	lib := Lib{Path: path, Size: size, Needed: needed}
	if len(soname) > 0 {
		lib.SONAME = soname[0]
	}
	h := sha256.New()
	r, err := os.Open(path)
	if err != nil {
		return Lib{}, err
	}
	defer r.Close()
	n, err := io.Copy(h, r)
	if err != nil {
		return Lib{}, err
	}
	if n != size {
		return Lib{}, fmt.Errorf("changed while it was read (%d bytes, then %d)", size, n)
	}
	lib.SHA256 = hex.EncodeToString(h.Sum(nil))
	return lib, nil
}
