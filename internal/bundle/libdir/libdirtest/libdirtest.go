// Package libdirtest builds, for tests, a small prefix laid out as a
// portable build's (libdir): bin/sovereign, a C program whose run path is
// $ORIGIN/../lib/sovereign and which links lib/sovereign/libsovtest.so.0,
// a library that needs libstdc++ (the file libsovtest.so.0.1.0 with the
// links libsovtest.so.0 and libsovtest.so, as make build copies them),
// and lib/sovereign/libsovtest-cpu-x.so, a module without a SONAME that
// needs the library and is opened by path, as ggml's CPU variants are.
// The program prints "sovtest 42", then, given a module's path, opens it
// and prints "module 43": it runs only where the loader finds both.
//
// It is built with the system's C compiler (cc) in a few hundred
// milliseconds; tests that use it skip where there is none.
package libdirtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Prefix is a built prefix.
type Prefix struct {
	Dir    string // the prefix
	Bin    string // Dir/bin/sovereign
	LibDir string // Dir/lib/sovereign
}

// Module and Library are the names the two libraries are shipped under.
const (
	Library = "libsovtest.so.0"
	Module  = "libsovtest-cpu-x.so"
)

const (
	libC = `int sovtest_value(void) { return 42; }
`
	modC = `int sovtest_value(void);
int sovtest_module(void) { return sovtest_value() + 1; }
`
	mainC = `#include <dlfcn.h>
#include <stdio.h>
int sovtest_value(void);
int main(int argc, char **argv) {
	printf("sovtest %d\n", sovtest_value());
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (h == NULL) { fprintf(stderr, "%s\n", dlerror()); return 1; }
		int (*m)(void) = (int (*)(void))dlsym(h, "sovtest_module");
		if (m == NULL) { fprintf(stderr, "no sovtest_module\n"); return 1; }
		printf("module %d\n", m());
	}
	return 0;
}
`
)

// Build makes a prefix in a new temporary directory of t, or skips t
// where there is no C compiler.
func Build(t testing.TB) Prefix {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) to build stand-in shared libraries: the build needs one for cgo anyway")
	}
	p := Prefix{Dir: t.TempDir()}
	p.Bin = filepath.Join(p.Dir, "bin", "sovereign")
	p.LibDir = filepath.Join(p.Dir, "lib", "sovereign")
	src := t.TempDir()
	for name, body := range map[string]string{"lib.c": libC, "mod.c": modC, "main.c": mainC} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Dir(p.Bin), p.LibDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(cc, args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// --no-as-needed: the library records libstdc++ as it uses none of it,
	// like llama.cpp's, so that packaging must resolve it.
	run("-shared", "-fPIC", "-o", filepath.Join(p.LibDir, Library+".1.0"), "-Wl,-soname,"+Library,
		"-Wl,-rpath,$ORIGIN", "lib.c", "-Wl,--no-as-needed", "-lstdc++")
	for link, target := range map[string]string{Library: Library + ".1.0", "libsovtest.so": Library} {
		if err := os.Symlink(target, filepath.Join(p.LibDir, link)); err != nil {
			t.Fatal(err)
		}
	}
	run("-shared", "-fPIC", "-o", filepath.Join(p.LibDir, Module), "mod.c", "-L"+p.LibDir, "-l:"+Library, "-Wl,-rpath,$ORIGIN")
	run("-o", p.Bin, "main.c", "-L"+p.LibDir, "-l:"+Library, "-ldl", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib/sovereign")
	return p
}
