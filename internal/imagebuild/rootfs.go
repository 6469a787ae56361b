package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
)

// NonRoot is the uid and gid the server runs as (distroless' "nonroot").
const NonRoot = 65532

// File is one entry of a layer. A regular file's content is Data, or the
// file at Src when Data is nil.
type File struct {
	Path     string // absolute: /usr/lib/x86_64-linux-gnu/libc.so.6
	Type     byte   // tar.TypeReg, tar.TypeDir, tar.TypeSymlink
	Mode     int64
	UID, GID int
	Link     string // symlink target
	Data     []byte
	Src      string
	Size     int64
}

// Tree is the content of one layer: files by path, written in path order
// with every parent directory.
type Tree struct {
	files map[string]*File
}

func NewTree() *Tree { return &Tree{files: map[string]*File{}} }

// Add puts f in the tree (replacing what was at its path) and the
// directories above it (root-owned, 0755) where missing.
func (t *Tree) Add(f *File) {
	f.Path = path.Clean("/" + f.Path)
	for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
		if _, ok := t.files[dir]; !ok {
			t.files[dir] = &File{Path: dir, Type: tar.TypeDir, Mode: 0o755}
		}
	}
	if f.Type == tar.TypeReg && f.Data != nil {
		f.Size = int64(len(f.Data))
	}
	t.files[f.Path] = f
}

// Get returns the entry at p, nil if none.
func (t *Tree) Get(p string) *File { return t.files[path.Clean("/"+p)] }

// Files returns every entry in path order.
func (t *Tree) Files() []*File {
	out := make([]*File, 0, len(t.files))
	for _, f := range t.files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Opener returns a function that writes the tree as an uncompressed tar:
// path order, every mtime at epoch, numeric owners only, no user or group
// names, no access or change times.
func (t *Tree) Opener(epoch time.Time) func() (io.ReadCloser, error) {
	files := t.Files()
	return func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, files, epoch)) }()
		return pr, nil
	}
}

func writeTar(w io.Writer, files []*File, epoch time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		h := &tar.Header{
			Name:     strings.TrimPrefix(f.Path, "/"),
			Typeflag: f.Type,
			Mode:     f.Mode,
			Uid:      f.UID,
			Gid:      f.GID,
			ModTime:  epoch,
			Linkname: f.Link,
		}
		if f.Type == tar.TypeDir {
			h.Name += "/"
		}
		var r io.Reader
		if f.Type == tar.TypeReg {
			h.Size = f.Size
			if f.Data != nil {
				r = bytes.NewReader(f.Data)
			} else {
				src, err := os.Open(f.Src)
				if err != nil {
					return err
				}
				defer src.Close()
				r = src
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if r != nil {
			n, err := io.Copy(tw, r)
			if err != nil {
				return err
			}
			if n != f.Size {
				return fmt.Errorf("%s: %d bytes, want %d (changed while building?)", f.Path, n, f.Size)
			}
		}
	}
	return tw.Close()
}

// usrMerged maps a package's /lib, /lib64, /bin and /sbin paths under /usr,
// as on a Debian 12 system (the image has /lib -> usr/lib, /lib64 -> usr/lib64).
func usrMerged(p string) string {
	for _, top := range []string{"/lib/", "/lib64/", "/bin/", "/sbin/"} {
		if strings.HasPrefix(p, top) {
			return "/usr" + p
		}
	}
	return p
}

// wanted says whether the image keeps the file at p (usr-merged) of
// package pkg: shared libraries and the loader, zoneinfo, os-release,
// the packages' copyright files. Everything else (programs, ldconfig,
// gconv modules, manuals, docs) stays out.
func wanted(pkg, p string) bool {
	switch {
	case strings.HasPrefix(p, "/usr/lib/") || strings.HasPrefix(p, "/usr/lib64/"):
		if pkg == "base-files" {
			return p == "/usr/lib/os-release"
		}
		base := path.Base(p)
		return strings.Contains(base, ".so") && !strings.Contains(p, "/gconv/") && !strings.Contains(p, "/audit/") &&
			!strings.HasSuffix(base, ".py")
	case strings.HasPrefix(p, "/usr/share/zoneinfo/") || p == "/usr/share/zoneinfo":
		return pkg == "tzdata"
	case p == "/usr/share/doc/"+pkg+"/copyright" || p == "/usr/share/doc/"+pkg:
		return true
	case p == "/etc/os-release" || p == "/etc/debian_version":
		return pkg == "base-files"
	}
	return false
}

// DebianTree is the first layer: the wanted files of debs, the CA bundle
// (what update-ca-certificates would write: the certificates in name order),
// passwd and group with root and nonroot (65532), nsswitch.conf, a
// status.d stanza per package for scanners, /data owned by nonroot, and
// the usr-merge links.
func DebianTree(ctx context.Context, debs []Deb) (*Tree, error) {
	t := NewTree()
	certs := map[string][]byte{}
	for _, d := range debs {
		type hardlink struct{ name, target string }
		var links []hardlink
		err := debFiles(ctx, d.Path, func(h *tar.Header, r io.Reader) error {
			p := usrMerged(path.Clean("/" + h.Name))
			if d.Package == "ca-certificates" && strings.HasPrefix(p, "/usr/share/ca-certificates/") &&
				strings.HasSuffix(p, ".crt") && h.Typeflag == tar.TypeReg {
				b, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				certs[p] = b
				return nil
			}
			if !wanted(d.Package, p) {
				return nil
			}
			mode := h.Mode & 0o777
			switch h.Typeflag {
			case tar.TypeDir:
				t.Add(&File{Path: p, Type: tar.TypeDir, Mode: 0o755})
			case tar.TypeSymlink:
				link := h.Linkname
				if strings.HasPrefix(link, "/") {
					link = usrMerged(link)
				}
				t.Add(&File{Path: p, Type: tar.TypeSymlink, Mode: 0o777, Link: link})
			case tar.TypeLink:
				links = append(links, hardlink{p, usrMerged(path.Clean("/" + h.Linkname))})
			case tar.TypeReg:
				b, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				t.Add(&File{Path: p, Type: tar.TypeReg, Mode: mode, Data: b})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Path, err)
		}
		// Hard links become copies: the layer holds no links between files.
		for _, l := range links {
			src := t.Get(l.target)
			if src == nil || src.Type != tar.TypeReg {
				return nil, fmt.Errorf("%s: hard link %s to %s, which the image does not hold", d.Path, l.name, l.target)
			}
			t.Add(&File{Path: l.name, Type: tar.TypeReg, Mode: src.Mode, Data: src.Data})
		}
		t.Add(&File{Path: "/var/lib/dpkg/status.d/" + d.Package, Type: tar.TypeReg, Mode: 0o644, Data: d.Control})
	}
	if len(certs) > 0 {
		names := make([]string, 0, len(certs))
		for n := range certs {
			names = append(names, n)
		}
		sort.Strings(names)
		var bundle bytes.Buffer
		for _, n := range names {
			b := certs[n]
			bundle.Write(b)
			if len(b) > 0 && b[len(b)-1] != '\n' {
				bundle.WriteByte('\n')
			}
		}
		t.Add(&File{Path: "/etc/ssl/certs/ca-certificates.crt", Type: tar.TypeReg, Mode: 0o644, Data: bundle.Bytes()})
	}
	t.Add(&File{Path: "/etc/passwd", Type: tar.TypeReg, Mode: 0o644, Data: []byte(
		"root:x:0:0:root:/root:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")})
	t.Add(&File{Path: "/etc/group", Type: tar.TypeReg, Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")})
	t.Add(&File{Path: "/etc/nsswitch.conf", Type: tar.TypeReg, Mode: 0o644, Data: []byte(
		"passwd: files\ngroup: files\nhosts: files dns\n")})
	t.Add(&File{Path: "/lib", Type: tar.TypeSymlink, Mode: 0o777, Link: "usr/lib"})
	t.Add(&File{Path: "/lib64", Type: tar.TypeSymlink, Mode: 0o777, Link: "usr/lib64"})
	t.Add(&File{Path: "/usr/bin", Type: tar.TypeDir, Mode: 0o755})
	t.Add(&File{Path: "/root", Type: tar.TypeDir, Mode: 0o700})
	t.Add(&File{Path: "/home/nonroot", Type: tar.TypeDir, Mode: 0o700, UID: NonRoot, GID: NonRoot})
	t.Add(&File{Path: "/data", Type: tar.TypeDir, Mode: 0o700, UID: NonRoot, GID: NonRoot})
	// Mount points the container engine binds over (so that it need not
	// create them in a read-only root, which `podman diff` would show).
	for _, d := range []string{"/dev", "/proc", "/sys", "/run"} {
		t.Add(&File{Path: d, Type: tar.TypeDir, Mode: 0o755})
	}
	t.Add(&File{Path: "/etc/mtab", Type: tar.TypeSymlink, Mode: 0o777, Link: "/proc/mounts"})
	for _, f := range []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/.containerenv"} {
		t.Add(&File{Path: f, Type: tar.TypeReg, Mode: 0o644, Data: []byte{}})
	}
	return t, nil
}

// CheckLibraries verifies that every shared library the ELF file bin
// needs (and those they need, in turn) is in t, as the loader would find
// it, or among bin's own libraries (libdir: a portable build's
// lib/sovereign, which Build puts in LibDir), whose needs, and those of the
// CPU modules the binary opens at run time, are checked the same way.
func CheckLibraries(t *Tree, bin string) error {
	_, libs, err := libdir.Of(bin)
	if err != nil {
		return err
	}
	return checkLibraries(t, bin, libs)
}

func checkLibraries(t *Tree, bin string, own []libdir.Lib) error {
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	libs, err := f.ImportedLibraries()
	f.Close()
	if err != nil {
		return err
	}
	if interp != "" {
		if t.resolve(interp) == nil {
			return fmt.Errorf("the loader %s is not in the image", interp)
		}
	}
	// needer says who needs a library, for the error message.
	needer := map[string]string{}
	for _, l := range libs {
		needer[l] = filepath.Base(bin)
	}
	shipped := libdir.Names(own)
	for _, l := range own {
		for _, n := range l.Needed {
			if _, ok := needer[n]; !ok {
				needer[n] = LibDir + "/" + l.Name
			}
			libs = append(libs, n)
		}
	}
	seen := map[string]bool{}
	for len(libs) > 0 {
		lib := libs[0]
		libs = libs[1:]
		if seen[lib] || shipped[lib] {
			continue
		}
		seen[lib] = true
		var file *File
		for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"} {
			if file = t.resolve(dir + "/" + lib); file != nil {
				break
			}
		}
		if file == nil {
			if w := needer[lib]; w != "" {
				return fmt.Errorf("%s, which %s needs, is not in the image", lib, w)
			}
			return fmt.Errorf("%s is not in the image", lib)
		}
		ef, err := elf.NewFile(bytes.NewReader(file.Data))
		if err != nil {
			return fmt.Errorf("%s: %w", lib, err)
		}
		more, _ := ef.ImportedLibraries()
		for _, m := range more {
			if _, ok := needer[m]; !ok {
				needer[m] = file.Path
			}
		}
		libs = append(libs, more...)
	}
	return nil
}

// resolve follows symlinks (and the usr-merge links) to a regular file.
func (t *Tree) resolve(p string) *File {
	for i := 0; i < 16; i++ {
		p = usrMerged(path.Clean(p))
		f := t.files[p]
		if f == nil {
			return nil
		}
		if f.Type != tar.TypeSymlink {
			if f.Type == tar.TypeReg {
				return f
			}
			return nil
		}
		if strings.HasPrefix(f.Link, "/") {
			p = f.Link
		} else {
			p = path.Join(path.Dir(p), f.Link)
		}
	}
	return nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
