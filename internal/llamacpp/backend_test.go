package llamacpp_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/llamacpp"
)

// TestChooseCPU: a portable build picks the runnable variant with the
// highest score, SOVEREIGN_CPU_VARIANT picks another runnable one, and an
// unknown or unrunnable name is refused with the names that would work. A
// build for one CPU reports its kernels as built in.
func TestChooseCPU(t *testing.T) {
	t.Setenv(llamacpp.VariantEnv, "")
	b, err := llamacpp.ChooseCPU()
	if err != nil {
		t.Fatal(err)
	}
	if !llamacpp.Portable() {
		if b.Variant != "built-in" || b.Path != "" || !strings.HasPrefix(b.String(), "built-in") {
			t.Fatalf("a static build: %+v (%s)", b, b)
		}
		return
	}
	if len(b.Candidates) < 2 || b.Path == "" || b.Variant != b.Candidates[0].Name || b.Candidates[0].Score <= 0 {
		t.Fatalf("chose %+v", b)
	}
	for _, c := range b.Candidates[1:] {
		if c.Score > b.Candidates[0].Score {
			t.Errorf("%s scores %d, more than the chosen %s", c.Name, c.Score, b.Variant)
		}
	}
	if !strings.Contains(b.String(), b.Variant) || !strings.Contains(b.String(), "best of") {
		t.Errorf("String: %s", b)
	}
	// sse42 (x86-64-v2) runs on every CPU the portable build supports.
	t.Setenv(llamacpp.VariantEnv, "sse42")
	if f, err := llamacpp.ChooseCPU(); err != nil || f.Variant != "sse42" || !f.Forced || !strings.Contains(f.String(), llamacpp.VariantEnv) {
		t.Errorf("forced sse42: %+v, %v", f, err)
	}
	t.Setenv(llamacpp.VariantEnv, "pentium4")
	if _, err := llamacpp.ChooseCPU(); err == nil || !strings.Contains(err.Error(), "no such CPU variant") || !strings.Contains(err.Error(), "sse42") {
		t.Errorf("unknown variant: %v", err)
	}
	for _, c := range b.Candidates {
		if c.Score == 0 {
			t.Setenv(llamacpp.VariantEnv, c.Name)
			if _, err := llamacpp.ChooseCPU(); err == nil || !strings.Contains(err.Error(), "lacks a feature") {
				t.Errorf("unrunnable %s: %v", c.Name, err)
			}
		}
	}
}

// TestEveryVariantComputes runs the exact kernel check (TestQ5_0MulMat:
// Q5_0 matrices, repacked and not, against a reference) and the argmax
// once under each other CPU variant that runs on this CPU, each in a
// process of its own (a process loads one variant). In the AVX-512 VNNI
// variants the repacked Q5_0 is held as Q8_0 and goes through Sovereign's
// Q8_0 kernels; the others refuse to repack it and check ggml's own Q5_0
// kernels. (TestQ8_0OutputLayer, whose Go reference takes a minute under
// -race, runs in this process only.)
func TestEveryVariantComputes(t *testing.T) {
	if !llamacpp.Portable() {
		t.Log("a build for one CPU: its kernels are the ones the other tests run")
		return
	}
	if os.Getenv(llamacpp.VariantEnv) != "" {
		return // a child of this test
	}
	b, err := llamacpp.ChooseCPU()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range b.Candidates {
		if c.Score == 0 || c.Name == b.Variant {
			continue // the chosen one runs the package's tests in this process
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^(TestQ5_0MulMat|TestArgmaxMatchesTheScalarLoop|TestVariantInUse)$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), llamacpp.VariantEnv+"="+c.Name)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestQ5_0MulMat") || !strings.Contains(string(out), "variant in use: "+c.Name) {
				t.Fatalf("under %s: %v\n%s", c.Name, err, out)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no other variant runs on this CPU, not even sse42")
	}
}

// TestVariantInUse: Init loads the chosen variant, and the CPU backend's
// features are the variant's (the AVX-512 VNNI kernels exactly where
// the feature is).
func TestVariantInUse(t *testing.T) {
	b, err := llamacpp.Init()
	if err != nil {
		t.Fatal(err)
	}
	feats := llamacpp.CPUFeatures()
	t.Logf("variant in use: %s, features %v", b.Variant, feats)
	if len(feats) == 0 {
		t.Fatal("the CPU backend lists no features")
	}
	vnni := strings.Contains(" "+strings.Join(feats, " ")+" ", " AVX512_VNNI ")
	if llamacpp.HasAVX512VNNI() != vnni {
		t.Errorf("HasAVX512VNNI %v, features %v", llamacpp.HasAVX512VNNI(), feats)
	}
	switch b.Variant {
	case "sse42", "haswell", "skylakex":
		if vnni {
			t.Errorf("%s has AVX512_VNNI: %v", b.Variant, feats)
		}
	case "cascadelake", "icelake", "zen4":
		if !vnni {
			t.Errorf("%s lacks AVX512_VNNI: %v", b.Variant, feats)
		}
	}
}
