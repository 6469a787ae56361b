package libdir_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
	"github.com/sovereign-ai/sovereign/internal/bundle/libdir/libdirtest"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// The libraries of a portable layout, each once under the name the loader
// looks for; copied there (and nothing else), the binary runs.
func TestReadAndRunFromShippedNames(t *testing.T) {
	p := libdirtest.Build(t)
	dir, libs, err := libdir.Of(p.Bin)
	if err != nil {
		t.Fatal(err)
	}
	if dir != p.LibDir {
		t.Errorf("Dir %s, want %s", dir, p.LibDir)
	}
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	if want := []string{libdirtest.Module, libdirtest.Library}; !slices.Equal(names, want) {
		t.Fatalf("libraries %q, want %q", names, want)
	}
	lib, mod := libs[1], libs[0]
	if lib.SONAME != libdirtest.Library || lib.Module() || filepath.Base(lib.Path) != libdirtest.Library+".1.0" {
		t.Errorf("library %+v", lib)
	}
	if !slices.Contains(lib.Needed, "libstdc++.so.6") || !slices.Contains(mod.Needed, libdirtest.Library) || !mod.Module() {
		t.Errorf("needed: library %q, module %q", lib.Needed, mod.Needed)
	}
	if len(lib.SHA256) != 64 || lib.Size == 0 {
		t.Errorf("library %+v: no hash or size", lib)
	}

	// Another prefix with the shipped names only, regular files.
	other := t.TempDir()
	bin := filepath.Join(other, "bin", "sovereign")
	for _, l := range libs {
		copyFile(t, l.Path, filepath.Join(other, "lib", "sovereign", l.Name))
	}
	copyFile(t, p.Bin, bin)
	os.Chmod(bin, 0o755)
	out, err := exec.Command(bin, filepath.Join(other, "lib", "sovereign", libdirtest.Module)).CombinedOutput()
	if err != nil || string(out) != "sovtest 42\nmodule 43\n" {
		t.Fatalf("the binary with the shipped libraries: %v\n%s", err, out)
	}
	// Without them, it does not: the test above proves something.
	os.RemoveAll(filepath.Join(other, "lib"))
	if out, err := exec.Command(bin).CombinedOutput(); err == nil {
		t.Fatalf("ran without its libraries: %s", out)
	}
}

func TestDir(t *testing.T) {
	p := libdirtest.Build(t)

	// A binary without a run path (a Go test binary: static, or linked
	// without one) has no library directory, even beside a lib/sovereign.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if dir, err := libdir.Dir(exe); err != nil || dir != "" {
		t.Errorf("Dir(test binary) = %q, %v", dir, err)
	}
	script := filepath.Join(p.Dir, "bin", "script")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if dir, err := libdir.Dir(script); err != nil || dir != "" {
		t.Errorf("Dir(script) = %q, %v", dir, err)
	}

	// Through a symbolic link to the binary, as the loader's $ORIGIN.
	link := filepath.Join(t.TempDir(), "sovereign")
	os.Symlink(p.Bin, link)
	if dir, err := libdir.Dir(link); err != nil || dir != p.LibDir {
		t.Errorf("Dir(link) = %q, %v; want %s", dir, err, p.LibDir)
	}

	// A portable binary whose directory is missing cannot run: an error.
	moved := filepath.Join(t.TempDir(), "bin", "sovereign")
	copyFile(t, p.Bin, moved)
	if _, err := libdir.Dir(moved); err == nil || !strings.Contains(err.Error(), "lib/sovereign") {
		t.Errorf("Dir without the directory: %v", err)
	}
}

func TestReadRefuses(t *testing.T) {
	p := libdirtest.Build(t)
	for name, setup := range map[string]func(dir string){
		"a file that is not a library": func(dir string) { os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644) },
		"a directory":                  func(dir string) { os.Mkdir(filepath.Join(dir, "sub"), 0o755) },
		"two files with one SONAME and no link of that name": func(dir string) {
			os.Remove(filepath.Join(dir, libdirtest.Library))
			os.Remove(filepath.Join(dir, "libsovtest.so"))
			copyFile(t, filepath.Join(dir, libdirtest.Library+".1.0"), filepath.Join(dir, libdirtest.Library+".2.0"))
			f, _ := os.OpenFile(filepath.Join(dir, libdirtest.Library+".2.0"), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{0})
			f.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out, err := exec.Command("cp", "-a", p.LibDir+"/.", dir).CombinedOutput()
			if err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			if _, err := libdir.Read(dir); err != nil {
				t.Fatalf("the copy before the change: %v", err)
			}
			setup(dir)
			_, err = libdir.Read(dir)
			t.Logf("Read: %v", err)
			if err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"libllama.so.0": true, "libggml-cpu-zen4.so": true, "libllama-common.so.0": true, "libstdc++.so.6": true,
		"libx.so.0.6.0": true, "../libx.so": false, "lib/x.so": false, "libx.so.a": false, "x.so": false, "lib.so": false,
		"libx.so\n": false, "": false,
	} {
		if got := libdir.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// The real portable build, where make build made one (SOVEREIGN_BIN, else
// the checkout's bin/sovereign): llama.cpp's four libraries by SONAME and
// ggml's CPU variants, each needing only its siblings and the system's C
// and C++ runtime.
func TestPortableBuild(t *testing.T) {
	bin := testutil.Binary(t)
	dir, libs, err := libdir.Of(bin)
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		// A build for one CPU (MARCH=native): everything linked in,
		// nothing to ship.
		if len(libs) != 0 {
			t.Errorf("%s has no run path %s but %d libraries", bin, libdir.RunPath, len(libs))
		}
		return
	}
	names := libdir.Names(libs)
	var modules int
	for _, l := range libs {
		if l.Module() {
			modules++
			if !strings.HasPrefix(l.Name, "libggml-cpu-") {
				t.Errorf("a library without a SONAME that is no CPU variant: %s", l.Name)
			}
		}
		for _, n := range l.Needed {
			system := slices.Contains([]string{"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"}, n)
			if !names[n] && !system {
				t.Errorf("%s needs %s, which is neither shipped nor the system's C or C++ runtime", l.Name, n)
			}
		}
	}
	for _, want := range []string{"libllama.so.0", "libllama-common.so.0", "libggml.so.0", "libggml-base.so.0", "libggml-cpu-sse42.so"} {
		if !names[want] {
			t.Errorf("%s lacks %s (has %v)", dir, want, names)
		}
	}
	if modules < 2 {
		t.Errorf("%d CPU variants", modules)
	}
	t.Logf("%s: %d libraries, %d of them CPU variants", dir, len(libs), modules)
}
