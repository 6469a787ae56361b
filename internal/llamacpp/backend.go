package llamacpp

/*
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml-backend.h"

// sov_ggml_path writes the path of the object that holds ggml's backend
// registry: libggml.so in a portable build, the executable when ggml is
// linked in. The CPU variants are looked for beside it.
static int sov_ggml_path(char *out, int n) {
	Dl_info info;
	if (!dladdr((void *)ggml_backend_load, &info) || info.dli_fname == NULL) {
		return -1;
	}
	snprintf(out, n, "%s", info.dli_fname);
	return 0;
}

// sov_variant_score opens a CPU backend module, asks it how well it fits
// this CPU (ggml_backend_score: 0 when the CPU lacks a feature it was
// compiled for, more for more features), and closes it, as ggml's own
// ggml_backend_load_best does. Opening a module compiled for a CPU this
// one is not runs none of its kernels. -1: it cannot be opened (the
// error in err); -2: it is not a ggml backend.
static int sov_variant_score(const char *path, char *err, int n) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e ? e : "dlopen failed");
		return -1;
	}
	int (*score)(void) = (int (*)(void))dlsym(h, "ggml_backend_score");
	int s = score ? score() : -2;
	dlclose(h);
	return s;
}

static int sov_load_backend(const char *path) { return ggml_backend_load(path) != NULL; }

// sov_cpu_proc finds a function of the CPU backend by name through its
// registry entry, so that the binding calls the variant loaded at run
// time (or the one linked in) the same way.
static void *sov_cpu_proc(const char *name) {
	ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
	if (dev == NULL) {
		return NULL;
	}
	return ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), name);
}

// sov_cpu_features lists the CPU backend's features ("AVX2", "AVX512_VNNI",
// ...) with value "1", space separated, into out.
static void sov_cpu_features(char *out, int n) {
	out[0] = 0;
	struct feature { const char *name; const char *value; };
	struct feature *(*get)(ggml_backend_reg_t) = NULL;
	ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
	if (dev == NULL) {
		return;
	}
	ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
	get = (struct feature *(*)(ggml_backend_reg_t))ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
	if (get == NULL) {
		return;
	}
	int used = 0;
	for (struct feature *f = get(reg); f && f->name; f++) {
		if (strcmp(f->value, "1") != 0) {
			continue;
		}
		int w = snprintf(out + used, n - used, "%s%s", used ? " " : "", f->name);
		if (w < 0 || w >= n - used) {
			break;
		}
		used += w;
	}
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"
)

// VariantEnv names the environment variable that picks a CPU variant of a
// portable build by name instead of the best one for the CPU (for
// comparing kernels, or to step around one).
const VariantEnv = "SOVEREIGN_CPU_VARIANT"

// march is the -march a build for one CPU was compiled with; the Makefile
// sets it (-X). Empty in a portable build and under go test.
var march string

// CPUBackend is the CPU backend this process computes with.
type CPUBackend struct {
	// Variant is the chosen variant's name (sse42, haswell, alderlake,
	// skylakex, cascadelake, icelake, zen4: ggml's names for the feature
	// sets) in a portable build, or "built-in" when the build was compiled
	// for one CPU (make build MARCH=native).
	Variant string
	// March is the build's -march when the kernels are built in.
	March string
	// Path is the chosen variant's module; empty when built in.
	Path string
	// Candidates are the variants found beside the libraries with their
	// scores on this CPU (0: it cannot run here), best first.
	Candidates []Candidate
	// Forced says the variant was picked by SOVEREIGN_CPU_VARIANT.
	Forced bool
}

// Candidate is one CPU variant of a portable build.
type Candidate struct {
	Name  string
	Path  string
	Score int
}

// String is what `sovereign version` and the start-up banner print.
func (b CPUBackend) String() string {
	if b.Path == "" {
		if b.March != "" {
			return fmt.Sprintf("built-in (-march=%s)", b.March)
		}
		return "built-in"
	}
	how := fmt.Sprintf("best of %d for this CPU", len(b.Candidates))
	if b.Forced {
		how = "set by " + VariantEnv
	}
	return fmt.Sprintf("%s (%s)", b.Variant, how)
}

// Portable reports whether this build loads its CPU backend at run time.
func Portable() bool { return dynamicCPU }

// ChooseCPU finds the CPU backend this process would use, without loading
// it: in a portable build the variant with the highest score on this CPU
// (or the one SOVEREIGN_CPU_VARIANT names), from the libggml-cpu-*.so
// modules beside libggml.so.
func ChooseCPU() (CPUBackend, error) {
	if !dynamicCPU {
		return CPUBackend{Variant: "built-in", March: march}, nil
	}
	buf := make([]byte, 4096)
	if C.sov_ggml_path((*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))) != 0 {
		return CPUBackend{}, errors.New("llamacpp: cannot tell where libggml is loaded from")
	}
	dir := filepath.Dir(C.GoString((*C.char)(unsafe.Pointer(&buf[0]))))
	paths, _ := filepath.Glob(filepath.Join(dir, "libggml-cpu-*.so"))
	if len(paths) == 0 {
		return CPUBackend{}, fmt.Errorf("llamacpp: no CPU backend (libggml-cpu-*.so) in %s, beside libggml.so", dir)
	}
	var b CPUBackend
	var failed []string
	for _, p := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "libggml-cpu-"), ".so")
		cp := C.CString(p)
		s := int(C.sov_variant_score(cp, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))))
		C.free(unsafe.Pointer(cp))
		switch s {
		case -1:
			failed = append(failed, fmt.Sprintf("%s: %s", name, C.GoString((*C.char)(unsafe.Pointer(&buf[0])))))
			continue
		case -2:
			failed = append(failed, name+": not a ggml backend")
			continue
		}
		b.Candidates = append(b.Candidates, Candidate{Name: name, Path: p, Score: s})
	}
	slices.SortStableFunc(b.Candidates, func(x, y Candidate) int { return y.Score - x.Score })
	if want := os.Getenv(VariantEnv); want != "" {
		i := slices.IndexFunc(b.Candidates, func(c Candidate) bool { return c.Name == want })
		switch {
		case i < 0:
			return CPUBackend{}, fmt.Errorf("llamacpp: %s=%s, but there is no such CPU variant in %s (there are: %s)", VariantEnv, want, dir, names(b.Candidates))
		case b.Candidates[i].Score == 0:
			return CPUBackend{}, fmt.Errorf("llamacpp: %s=%s, but this CPU lacks a feature that variant was compiled for (it can run: %s)", VariantEnv, want, names(runnable(b.Candidates)))
		}
		b.Variant, b.Path, b.Forced = want, b.Candidates[i].Path, true
		return b, nil
	}
	if len(b.Candidates) == 0 || b.Candidates[0].Score == 0 {
		return CPUBackend{}, fmt.Errorf("llamacpp: none of the CPU variants in %s runs on this CPU (%s); the portable build needs x86-64-v2 (SSE4.2) or later",
			dir, strings.Join(append(failed, names(b.Candidates)), "; "))
	}
	b.Variant, b.Path = b.Candidates[0].Name, b.Candidates[0].Path
	return b, nil
}

func runnable(cs []Candidate) []Candidate {
	var out []Candidate
	for _, c := range cs {
		if c.Score > 0 {
			out = append(out, c)
		}
	}
	return out
}

func names(cs []Candidate) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.Name
	}
	return strings.Join(s, ", ")
}

// loadCPU loads the chosen CPU variant into ggml's registry (a portable
// build has no CPU backend until then).
func loadCPU() (CPUBackend, error) {
	b, err := ChooseCPU()
	if err != nil || b.Path == "" {
		return b, err
	}
	cp := C.CString(b.Path)
	defer C.free(unsafe.Pointer(cp))
	if C.sov_load_backend(cp) == 0 {
		return CPUBackend{}, fmt.Errorf("llamacpp: loading the CPU variant %s (%s) failed", b.Variant, b.Path)
	}
	return b, nil
}

// CPUFeatures lists the features the CPU backend in use was compiled with
// and this CPU has (ggml's names: AVX2, AVX512, AVX512_VNNI, ...). Init
// must have succeeded.
func CPUFeatures() []string {
	buf := make([]byte, 1024)
	C.sov_cpu_features((*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	return strings.Fields(C.GoString((*C.char)(unsafe.Pointer(&buf[0]))))
}

// cpuProc is sov_cpu_proc for Go: nil when the CPU backend lacks name.
func cpuProc(name string) unsafe.Pointer {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.sov_cpu_proc(cn)
}
