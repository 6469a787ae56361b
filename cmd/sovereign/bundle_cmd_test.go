package main

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// procNetDev matches an interface's line in /proc/net/dev: its name and
// sixteen counters.
var procNetDev = regexp.MustCompile(`(?m)^\s*([^\s:|]+):(?:\s+\d+){16}\s*$`)

// TestBundleOfflineInNetworkNamespace makes a bundle with the built binary
// (and, for the portable build, its libraries) and then verifies and
// installs it, and runs what it installed, inside a
// network namespace that has only a loopback interface (`unshare -n`): the
// air-gapped half of the workflow must need no network at all; the
// installed server then answers a chat request there (with `ip` to bring
// up lo and `curl`). It needs permission to create network namespaces
// (root, as in CI); without it the test fails, since skipping would hide
// that the property went unchecked.
func TestBundleOfflineInNetworkNamespace(t *testing.T) {
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Fatalf("cannot create a network namespace with `unshare -n` (%v: %s); this test needs it "+
			"(run as root, or with CAP_SYS_ADMIN, or where unprivileged user namespaces allow `unshare -rn`)", err, out)
	}
	bin := testutil.Binary(t)
	dir := t.TempDir()
	// A portable build (make build's default) carries its libraries.
	libDir, libs, err := libdir.Of(bin)
	if err != nil {
		t.Fatal(err)
	}
	portable := libDir != ""
	t.Logf("%s: portable %v (%d libraries)", bin, portable, len(libs))

	// A tiny model in a models store.
	store, err := models.Open(filepath.Join(dir, "models"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "tiny.gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: 7, Vocab: testmodel.MinVocab}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pull(context.Background(), src, models.PullOptions{ID: "tiny-chat"}); err != nil {
		t.Fatal(err)
	}

	run := func(wantOK bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		// Nothing from the test's environment may point the binary at
		// a network service.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if wantOK && err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		if !wantOK && err == nil {
			t.Fatalf("%s succeeded, want a failure\n%s", strings.Join(args, " "), stdout.String())
		}
		return stdout.String() + stderr.String()
	}

	// The connected half.
	run(true, bin, "bundle", "keygen", "--out", "signing.key")
	out := run(true, bin, "bundle", "create", "--out", "sovereign.tar", "--key", "signing.key",
		"--models", "tiny-chat", "--models-dir", store.Dir())
	if !strings.Contains(out, "models/tiny-chat/model.gguf") {
		t.Errorf("create's output does not list the model:\n%s", out)
	}

	// The SBOM describes the real binary: its Go modules with purls and
	// hashes, and the llama.cpp it links (recorded in its cgo flags) and,
	// for a portable build, the library files the bundle carries.
	sbom := tarMember(t, filepath.Join(dir, "sovereign.tar"), "sovereign-bundle/sbom.cdx.json")
	wants := []string{`"specVersion": "1.5"`, `"purl": "pkg:golang/github.com/jackc/pgx/v5@v`, `"name": "std"`,
		`"purl": "pkg:github/ggml-org/llama.cpp@b`, `"alg": "SHA-256"`}
	if portable {
		wants = append(wants, "shared libraries", `"name": "lib/sovereign/libllama.so.0"`)
		for _, l := range libs {
			if !strings.Contains(out, "lib/sovereign/"+l.Name) {
				t.Errorf("create's output does not list the library %s:\n%s", l.Name, out)
			}
		}
	}
	for _, want := range wants {
		if !strings.Contains(sbom, want) {
			t.Errorf("the SBOM lacks %s", want)
		}
	}

	// The air-gapped half: the namespace has a loopback interface and
	// nothing else, which the first command shows.
	offline := func(wantOK bool, args ...string) string {
		t.Helper()
		script := `cat /proc/net/dev && exec "$@"`
		return run(wantOK, append([]string{"unshare", "-n", "--", "sh", "-c", script, "sh"}, args...)...)
	}
	out = offline(true, bin, "bundle", "verify", "sovereign.tar", "--pub", "signing.key.pub")
	var ifaces []string
	for _, m := range procNetDev.FindAllStringSubmatch(out, -1) {
		ifaces = append(ifaces, m[1])
	}
	if strings.Join(ifaces, ",") != "lo" {
		t.Fatalf("the namespace's interfaces are %v, want only lo:\n%s", ifaces, out)
	}
	if !strings.Contains(out, "sovereign.tar: OK: signed by sha256:") || !strings.Contains(out, "model tiny-chat: llama") {
		t.Errorf("verify's output:\n%s", out)
	}

	prefix := filepath.Join(dir, "opt", "sovereign")
	out = offline(true, bin, "bundle", "install", "sovereign.tar", "--pub", "signing.key.pub", "--prefix", prefix)
	if !strings.Contains(out, "Next: start the server") || !strings.Contains(out, "SOVEREIGN_DATA_DIR="+filepath.Join(prefix, "data")) {
		t.Errorf("install's output does not say how to start:\n%s", out)
	}
	installedBin := filepath.Join(prefix, "bin", "sovereign")
	// The installed binary runs with no network and nothing from the
	// build tree (a portable one: its libraries from
	// PREFIX/lib/sovereign), and has CPU kernels it can run here.
	out = offline(true, installedBin, "version")
	if !strings.Contains(out, "sovereign ") || !strings.Contains(out, "\nCPU kernels: ") {
		t.Errorf("installed binary's version:\n%s", out)
	}
	if portable {
		if !regexp.MustCompile(`(?m)^CPU kernels: \w+ \(best of \d+ for this CPU\)$`).MatchString(out) {
			t.Errorf("the installed portable binary chose no CPU variant:\n%s", out)
		}
		for _, l := range libs {
			st, err := os.Lstat(filepath.Join(prefix, "lib", "sovereign", l.Name))
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
				t.Errorf("installed library %s: %v %v", l.Name, st, err)
			}
		}
	}
	out = offline(true, installedBin, "models", "list", "--models-dir", filepath.Join(prefix, "data", "models"))
	if !strings.Contains(out, "tiny-chat") {
		t.Errorf("installed models:\n%s", out)
	}

	// The installed server starts and answers a chat request from the
	// installed model, still with no network but loopback (brought up:
	// a new namespace's lo is down).
	const key = "sk-sov-bundletestbundletestbundletest123"
	serve := `ip link set lo up || exit 1
SOVEREIGN_DATA_DIR="$2" SOVEREIGN_BOOTSTRAP_KEY="$3" SOVEREIGN_ADDR=127.0.0.1:18080 "$1" serve >"$2/serve.log" 2>&1 &
pid=$!
ok=
for i in $(seq 300); do curl -sf 127.0.0.1:18080/readyz >/dev/null && ok=1 && break; sleep 0.1; done
if [ -z "$ok" ]; then kill $pid; cat "$2/serve.log"; exit 1; fi
curl -sSf -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
  -d '{"model":"tiny-chat","messages":[{"role":"user","content":"hello"}],"max_tokens":4}' \
  127.0.0.1:18080/v1/chat/completions
rc=$?
kill $pid
wait $pid
exit $rc`
	out = run(true, "unshare", "-n", "--", "sh", "-c", serve, "sh", installedBin, filepath.Join(prefix, "data"), key)
	if !strings.Contains(out, `"chat.completion"`) || !strings.Contains(out, `"model":"tiny-chat"`) {
		t.Errorf("chat with the installed server:\n%s", out)
	}

	// A tampered copy is refused, with a non-zero exit and a clear message.
	b, err := os.ReadFile(filepath.Join(dir, "sovereign.tar"))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-4096] ^= 0x01 // inside the last member, the model's weights
	if err := os.WriteFile(filepath.Join(dir, "tampered.tar"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out = offline(false, bin, "bundle", "verify", "tampered.tar", "--pub", "signing.key.pub")
	if !strings.Contains(out, "tampered.tar is NOT a valid bundle signed by this key") || !strings.Contains(out, "damaged or was changed") {
		t.Errorf("verify of a tampered bundle:\n%s", out)
	}
	out = offline(false, bin, "bundle", "install", "tampered.tar", "--pub", "signing.key.pub", "--prefix", filepath.Join(dir, "opt2"))
	if !strings.Contains(out, "nothing was installed") {
		t.Errorf("install of a tampered bundle:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "opt2", "bin", "sovereign")); err == nil {
		t.Error("a tampered bundle installed a binary")
	}
}

// tarMember returns one member of a tar file.
func tarMember(t *testing.T, file, name string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s (%v)", file, name, err)
		}
		if hdr.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// The CLI's own checks, in process: usage errors and the messages that
// tell a person what to do.
func TestBundleCommandErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOVEREIGN_MODELS_DIR", filepath.Join(dir, "models"))
	cmd := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := bundleCommand(context.Background(), args, strings.NewReader(""), &out, &out)
		return out.String(), err
	}
	key := filepath.Join(dir, "k")
	if _, err := cmd("keygen", "--out", key); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd("keygen", "--out", key); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("keygen over a key: %v", err)
	}
	if _, err := cmd("create", "--out", filepath.Join(dir, "b.tar")); err == nil || !strings.Contains(err.Error(), "--key") {
		t.Errorf("create without a key: %v", err)
	}
	// The default models are not in this empty store.
	_, err := cmd("create", "--out", filepath.Join(dir, "b.tar"), "--key", key)
	if err == nil || !strings.Contains(err.Error(), "sovereign models pull qwen2.5-coder-0.5b-instruct all-minilm-l6-v2") {
		t.Errorf("create with missing default models: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.tar")); err == nil {
		t.Error("a failed create left b.tar")
	}
	if _, err := cmd("create", "--out", filepath.Join(dir, "b.tar"), "--key", key+".pub", "--models", "none"); err == nil || !strings.Contains(err.Error(), "did you give the .pub file") {
		t.Errorf("create with the public key: %v", err)
	}
	if _, err := cmd("verify", filepath.Join(dir, "b.tar")); err == nil || !strings.Contains(err.Error(), "--pub") {
		t.Errorf("verify without --pub: %v", err)
	}
	if _, err := cmd("verify", filepath.Join(dir, "missing.tar"), "--pub", key+".pub"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("verify of a missing file: %v", err)
	}
	if _, err := cmd("frobnicate"); err == nil || !strings.Contains(err.Error(), "unknown subcommand") {
		t.Errorf("unknown subcommand: %v", err)
	}
	if out, err := cmd("help"); err != nil || !strings.Contains(out, "bundle install FILE.tar") {
		t.Errorf("help: %v\n%s", err, out)
	}
}
