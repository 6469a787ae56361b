package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// The unit must carry every hardening setting docs/debian.md promises.
func TestUnitHardening(t *testing.T) {
	unit, err := packageFiles.ReadFile("files/sovereign.service")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(unit), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{
		"User=sovereign", "Group=sovereign", "StateDirectory=sovereign",
		"Environment=SOVEREIGN_DATA_DIR=/var/lib/sovereign",
		"ExecStart=/usr/bin/sovereign serve", "KillMode=mixed", "KillSignal=SIGTERM",
		"UMask=0077", "NoNewPrivileges=yes", "CapabilityBoundingSet=", "AmbientCapabilities=",
		"ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes",
		"PrivateUsers=yes", "ProtectKernelTunables=yes", "ProtectKernelModules=yes",
		"ProtectKernelLogs=yes", "ProtectControlGroups=yes", "ProtectClock=yes", "ProtectHostname=yes",
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "RestrictNamespaces=yes",
		"RestrictRealtime=yes", "RestrictSUIDSGID=yes", "LockPersonality=yes",
		"MemoryDenyWriteExecute=yes", "SystemCallArchitectures=native",
		"SystemCallFilter=@system-service",
	} {
		if !lines[want] {
			t.Errorf("unit lacks %q", want)
		}
	}
	// No writable path beyond the state directory.
	if bytes.Contains(unit, []byte("ReadWritePaths=")) {
		t.Error("unit has ReadWritePaths=: the state directory is the only writable path")
	}
	// TimeoutStopSec above the server's default shutdown_timeout (60s) and
	// the one the packaged sovereign.yaml sets.
	stop := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)s$`).FindSubmatch(unit)
	yaml, _ := packageFiles.ReadFile("files/sovereign.yaml")
	shut := regexp.MustCompile(`(?m)^shutdown_timeout: (\d+)s$`).FindSubmatch(yaml)
	if stop == nil || shut == nil {
		t.Fatalf("TimeoutStopSec=%q shutdown_timeout=%q: want both in seconds", stop, shut)
	}
	s, _ := strconv.Atoi(string(stop[1]))
	d, _ := strconv.Atoi(string(shut[1]))
	if s <= d || s <= 60 {
		t.Errorf("TimeoutStopSec=%ds must exceed shutdown_timeout %ds (and the default 60s)", s, d)
	}
}

// `systemd-analyze security` must rate the unit OK or better: an overall
// exposure below 5.0 (its scale: 0 PERFECT, 0.1–0.9 SAFE, 1.0–4.9 OK,
// 5.0–7.4 MEDIUM, 7.5–8.9 EXPOSED, 9.0–9.9 UNSAFE, 10 DANGEROUS).
func TestUnitSecurityRating(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed (scripts/deb-test.sh checks the live unit in a container)")
	}
	unit, _ := packageFiles.ReadFile("files/sovereign.service")
	path := filepath.Join(t.TempDir(), "sovereign.service")
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", path).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "offline") {
			t.Skipf("this systemd-analyze has no --offline: %s", out)
		}
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for sovereign\.service: (\d+\.\d) (\w+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no rating in:\n%s", out)
	}
	exposure, _ := strconv.ParseFloat(m[1], 64)
	t.Logf("systemd-analyze security: exposure %s, %s", m[1], m[2])
	if ok := map[string]bool{"OK": true, "SAFE": true, "PERFECT": true}[m[2]]; !ok || exposure >= 5.0 {
		t.Errorf("rating %s %s, want OK or better (below 5.0):\n%s", m[1], m[2], out)
	}
	// The same bound through systemd-analyze's own threshold (tenths).
	if out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--threshold=49", path).CombinedOutput(); err != nil {
		t.Errorf("--threshold=49: %v\n%s", err, out)
	}
}

func TestMaintainerScriptsParse(t *testing.T) {
	for _, name := range []string{"postinst", "prerm", "postrm"} {
		b, _ := packageFiles.ReadFile("files/" + name)
		cmd := exec.Command("sh", "-n")
		cmd.Stdin = bytes.NewReader(b)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

// The package holds what docs/debian.md lists, with the modes it gives,
// the conffiles, the scripts and computed Depends; two builds of the same
// input are identical bytes.
func TestPackage(t *testing.T) {
	bin, err := os.Executable() // any ELF binary stands in for sovereign
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "debian.md")
	os.WriteFile(doc, []byte("# doc\n"), 0o644)
	o := Options{Binary: bin, Version: "1.2.3~rc1", Doc: doc, OutDir: t.TempDir(), MTime: time.Unix(1795000000, 0)}
	path, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "sovereign_1.2.3~rc1_amd64.deb" {
		t.Errorf("file name %s", filepath.Base(path))
	}
	deb, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o.OutDir = t.TempDir()
	path2, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if deb2, _ := os.ReadFile(path2); !bytes.Equal(deb, deb2) {
		t.Error("two builds of the same input differ")
	}

	members := readAr(t, deb)
	if string(members["debian-binary"]) != "2.0\n" {
		t.Errorf("debian-binary %q", members["debian-binary"])
	}
	gz, err := gzip.NewReader(bytes.NewReader(members["control.tar.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	control := readTar(t, gz)
	ctl := string(control["./control"].data)
	for _, want := range []string{"Package: sovereign\n", "Version: 1.2.3~rc1\n", "Architecture: amd64\n", "Depends: "} {
		if !strings.Contains(ctl, want) {
			t.Errorf("control lacks %q:\n%s", want, ctl)
		}
	}
	if !regexp.MustCompile(`(?m)^Depends: .*adduser, ca-certificates$`).MatchString(ctl) {
		t.Errorf("Depends:\n%s", ctl)
	}
	if got := string(control["./conffiles"].data); got != "/etc/sovereign/sovereign.yaml\n/etc/default/sovereign\n" &&
		got != "/etc/default/sovereign\n/etc/sovereign/sovereign.yaml\n" {
		t.Errorf("conffiles %q", got)
	}
	for _, s := range []string{"./postinst", "./prerm", "./postrm"} {
		if f, ok := control[s]; !ok || f.mode != 0o755 {
			t.Errorf("control %s: present %v mode %o", s, ok, f.mode)
		}
	}

	zr, err := zstd.NewReader(bytes.NewReader(members["data.tar.zst"]))
	if err != nil {
		t.Fatalf("data.tar.zst: %v (members %v)", err, keys(members))
	}
	defer zr.Close()
	data := readTar(t, zr)
	for path, mode := range map[string]int64{
		"./usr/bin/sovereign":                        0o755,
		"./usr/lib/systemd/system/sovereign.service": 0o644,
		"./etc/sovereign/sovereign.yaml":             0o640,
		"./etc/default/sovereign":                    0o600,
		"./usr/share/doc/sovereign/debian.md":        0o644,
	} {
		f, ok := data[path]
		switch {
		case !ok:
			t.Errorf("package lacks %s", path)
		case f.mode != mode:
			t.Errorf("%s mode %o, want %o", path, f.mode, mode)
		case f.uid != 0 || f.gid != 0:
			t.Errorf("%s owned by %d:%d", path, f.uid, f.gid)
		case !f.mtime.Equal(o.MTime):
			t.Errorf("%s mtime %v, want %v", path, f.mtime, o.MTime)
		}
	}
	for path := range data {
		if strings.HasPrefix(path, "./var/") {
			t.Errorf("package ships %s: /var/lib/sovereign is made by postinst and systemd", path)
		}
		// The test binary has no run path: no libraries of its own.
		if strings.HasPrefix(path, "./usr/lib/sovereign") {
			t.Errorf("package ships %s for a binary without libraries of its own", path)
		}
	}
}

// A portable binary (a stand-in built with cc, laid out as make build
// lays out the real one): its libraries in /usr/lib/sovereign as regular
// 0644 files under the names the loader opens, no development links, and
// Depends covering what the libraries need (here libstdc++, which the
// binary itself does not link).
func TestPackagePortable(t *testing.T) {
	bin := fakePortable(t)
	o := Options{Binary: bin, Version: "1.2.3", OutDir: t.TempDir(), MTime: time.Unix(1795000000, 0)}
	path, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	deb, _ := os.ReadFile(path)
	members := readAr(t, deb)
	gz, err := gzip.NewReader(bytes.NewReader(members["control.tar.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	ctl := string(readTar(t, gz)["./control"].data)
	if !regexp.MustCompile(`(?m)^Depends: libc6 \(>= 2\.\d+\), .*libstdc\+\+6.*, adduser, ca-certificates$`).MatchString(ctl) {
		t.Errorf("Depends does not cover the library's libstdc++:\n%s", ctl)
	}
	zr, err := zstd.NewReader(bytes.NewReader(members["data.tar.zst"]))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	data := readTar(t, zr)
	var shipped []string
	for p, f := range data {
		name, ok := strings.CutPrefix(p, "./usr/lib/sovereign/")
		if !ok || name == "" {
			continue
		}
		shipped = append(shipped, name)
		if f.typ != tar.TypeReg || f.mode != 0o644 || f.uid != 0 || f.gid != 0 || !f.mtime.Equal(o.MTime) {
			t.Errorf("%s: type %c mode %o owner %d:%d mtime %v, want a regular root 0644 file", p, f.typ, f.mode, f.uid, f.gid, f.mtime)
		}
	}
	sort.Strings(shipped)
	if want := []string{"libsovtest-cpu-x.so", "libsovtest.so.0"}; strings.Join(shipped, " ") != strings.Join(want, " ") {
		t.Errorf("/usr/lib/sovereign holds %q, want %q", shipped, want)
	}
	if f, ok := data["./usr/bin/sovereign"]; !ok || f.mode != 0o755 {
		t.Errorf("/usr/bin/sovereign: %+v", f)
	}

	// Without the library the binary links, the package is not built.
	dir := filepath.Join(filepath.Dir(filepath.Dir(bin)), "lib", "sovereign")
	for _, n := range []string{"libsovtest.so.0", "libsovtest.so.0.1.0", "libsovtest.so"} {
		os.Remove(filepath.Join(dir, n))
	}
	if _, err := Build(o); err == nil || !strings.Contains(err.Error(), "libsovtest.so.0") {
		t.Errorf("a package of a portable binary without its library: %v", err)
	}
}

// fakePortable builds, with cc, a binary whose run path is
// $ORIGIN/../lib/sovereign and which links libsovtest.so.0 from there (the
// file libsovtest.so.0.1.0 with the links libsovtest.so.0 and
// libsovtest.so, as make build copies llama.cpp's), a library that needs
// libstdc++, and a module without a SONAME, as ggml's CPU variants are.
// (The server module's internal/bundle/libdir/libdirtest makes the same.)
func fakePortable(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) to build stand-in shared libraries: the build needs one for cgo anyway")
	}
	prefix := t.TempDir()
	lib := filepath.Join(prefix, "lib", "sovereign")
	bin := filepath.Join(prefix, "bin", "sovereign")
	src := t.TempDir()
	os.MkdirAll(lib, 0o755)
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(filepath.Join(src, "lib.c"), []byte("int sovtest_value(void) { return 42; }\n"), 0o644)
	os.WriteFile(filepath.Join(src, "mod.c"), []byte("int sovtest_value(void);\nint sovtest_module(void) { return sovtest_value() + 1; }\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.c"), []byte("#include <stdio.h>\nint sovtest_value(void);\nint main(void) { printf(\"%d\\n\", sovtest_value()); return 0; }\n"), 0o644)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(cc, args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("-shared", "-fPIC", "-o", filepath.Join(lib, "libsovtest.so.0.1.0"), "-Wl,-soname,libsovtest.so.0",
		"-Wl,-rpath,$ORIGIN", "lib.c", "-Wl,--no-as-needed", "-lstdc++")
	os.Symlink("libsovtest.so.0.1.0", filepath.Join(lib, "libsovtest.so.0"))
	os.Symlink("libsovtest.so.0", filepath.Join(lib, "libsovtest.so"))
	run("-shared", "-fPIC", "-o", filepath.Join(lib, "libsovtest-cpu-x.so"), "mod.c", "-L"+lib, "-l:libsovtest.so.0", "-Wl,-rpath,$ORIGIN")
	run("-o", bin, "main.c", "-L"+lib, "-l:libsovtest.so.0", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib/sovereign")
	if out, err := exec.Command(bin).CombinedOutput(); err != nil || string(out) != "42\n" {
		t.Fatalf("the stand-in binary does not run: %v %s", err, out)
	}
	return bin
}

// The Depends of the real binary, when it is built: libc6 and libstdc++6
// with minimum versions, and nothing unknown; for a portable build, the
// minimum versions are at least what each of its libraries needs (they
// need a newer libstdc++ than the binary).
func TestDependsOfSovereign(t *testing.T) {
	bin := os.Getenv("SOVEREIGN_BIN")
	if bin == "" {
		bin = "../../bin/sovereign"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run make build (make test-package does)", err)
	}
	deps, err := Depends(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Depends: %s", strings.Join(deps, ", "))
	joined := strings.Join(deps, ", ")
	for _, re := range []string{`libc6 \(>= 2\.\d+\)`, `libstdc\+\+6 \(>= \d+`, `adduser`, `ca-certificates`} {
		if !regexp.MustCompile(re).MatchString(joined) {
			t.Errorf("Depends %q lacks %s", joined, re)
		}
	}
	libs, err := ownLibraries(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d libraries of its own", len(libs))
	shipped := map[string]bool{}
	for _, l := range libs {
		shipped[l.name] = true
	}
	min := minVersions(deps)
	for _, l := range append([]ownLib{{name: filepath.Base(bin), path: bin}}, libs...) {
		own, err := dependsOf([]string{l.path}, shipped)
		if err != nil {
			t.Fatal(err)
		}
		for pkg, v := range minVersions(own) {
			if joinVersion(maxVersion(min[pkg], joinVersion(v))) != joinVersion(min[pkg]) {
				t.Errorf("%s needs %s (>= %s), the package's Depends says %q", l.name, pkg, joinVersion(v), joined)
			}
		}
	}
}

// minVersions maps "pkg (>= V)" entries to V.
func minVersions(deps []string) map[string][]int {
	m := map[string][]int{}
	for _, d := range deps {
		if pkg, v, ok := strings.Cut(d, " (>= "); ok {
			m[pkg] = maxVersion(nil, strings.TrimSuffix(v, ")"))
		}
	}
	return m
}

func TestVersionRequired(t *testing.T) {
	for _, v := range []string{"", "v1.0.0", "dev"} {
		if _, err := Build(Options{Binary: "/nonexistent", Version: v}); err == nil || !strings.Contains(err.Error(), "-version") {
			t.Errorf("version %q: err %v", v, err)
		}
	}
}

type tarFile struct {
	data     []byte
	typ      byte
	mode     int64
	uid, gid int
	mtime    time.Time
}

func readTar(t *testing.T, r io.Reader) map[string]tarFile {
	t.Helper()
	out := map[string]tarFile{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var b []byte
		if h.Typeflag == tar.TypeReg && h.Size < 1<<20 {
			b, _ = io.ReadAll(tr)
		}
		out[h.Name] = tarFile{data: b, typ: h.Typeflag, mode: h.Mode & 0o7777, uid: h.Uid, gid: h.Gid, mtime: h.ModTime}
	}
}

// readAr splits a Debian package (an ar archive) into its members.
func readAr(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	magic := make([]byte, 8)
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != "!<arch>\n" {
		t.Fatalf("not an ar archive: %q", magic)
	}
	out := map[string][]byte{}
	for {
		h := make([]byte, 60)
		if _, err := io.ReadFull(r, h); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(strings.TrimSpace(string(h[0:16])), "/")
		size, err := strconv.Atoi(strings.TrimSpace(string(h[48:58])))
		if err != nil {
			t.Fatalf("ar header %q", h)
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatal(err)
		}
		if size%2 == 1 {
			r.ReadByte()
		}
		out[name] = data
	}
}

func keys(m map[string][]byte) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}
