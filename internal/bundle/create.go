package bundle

import (
	"archive/tar"
	"crypto/ed25519"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
	"github.com/sovereign-ai/sovereign/internal/models"
)

// CreateOptions says what goes into a bundle.
type CreateOptions struct {
	// BinaryPath is the sovereign binary to carry (the CLI passes
	// os.Executable: the binary that makes the bundle).
	BinaryPath string
	// LibDir is the binary's library directory, whose libraries the
	// bundle carries in lib/sovereign; empty is the one the binary's run
	// path names ($ORIGIN/../lib/sovereign: a portable build's), none for
	// a binary without one (libdir.Of).
	LibDir string
	// Build is the binary's Go build information for the SBOM; nil reads
	// it from BinaryPath (tests pass their own with a stand-in binary).
	Build *debug.BuildInfo
	// Version is the binary's Sovereign version.
	Version string
	// Platform is the binary's GOOS/GOARCH; empty is this process's.
	Platform string
	// Store and Models are the models to carry: ids in Store.
	Store  *models.Store
	Models []string
	// Key signs the bundle.
	Key ed25519.PrivateKey
	// Created is the bundle's time; zero is now. It is also every
	// member's modification time, so the same inputs at the same time
	// give the same bytes.
	Created time.Time
	// Progress receives progress lines for the long copies; nil is quiet.
	Progress io.Writer
}

// source is one payload member and where its bytes come from.
type source struct {
	member Member
	file   string // read from this file, or
	data   []byte // these bytes
	mode   int64
	// sha256 is known before the copy (hashed, or from the models store's
	// manifest) and checked again while the bytes are copied.
	sha256 string
}

// Created describes a bundle [Create] wrote.
type Created struct {
	Manifest Manifest
	KeyID    string
	// Size is the archive's size in bytes.
	Size int64
}

// Create writes a signed bundle to w. It streams every member: the binary
// and its libraries are hashed once before and once while they are
// written, and a model's weights
// only while they are written, checked against the sha256 the models store
// recorded when it verified the model at pull time — so a model of many
// GB is read once and never held in memory. If a file changes between the
// two (a model replaced during the copy), Create fails: the caller must
// then delete what it wrote, since the archive would not verify.
func Create(w io.Writer, opts CreateOptions) (*Created, error) {
	if opts.Key == nil {
		return nil, fmt.Errorf("create: no signing key")
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	created = created.UTC().Truncate(time.Second)
	platform := opts.Platform
	if platform == "" {
		platform = runtime.GOOS + "/" + runtime.GOARCH
	}

	// The binary, and its SBOM.
	binSum, binSize, err := hashFile(opts.BinaryPath, opts.Progress, "hashing the binary")
	if err != nil {
		return nil, fmt.Errorf("create: binary: %w", err)
	}
	bi := opts.Build
	if bi == nil {
		bi, err = buildinfo.ReadFile(opts.BinaryPath)
		if err != nil {
			return nil, fmt.Errorf("create: reading the Go build information of %s: %w", opts.BinaryPath, err)
		}
	}
	// The binary's own libraries (hashed as they are listed, and again
	// while they are copied, like the binary).
	var libs []libdir.Lib
	if opts.LibDir != "" {
		libs, err = libdir.Read(opts.LibDir)
	} else {
		_, libs, err = libdir.Of(opts.BinaryPath)
	}
	if err != nil {
		return nil, fmt.Errorf("create: the binary's libraries: %w", err)
	}
	sbom, err := SBOM(SBOMInput{Build: bi, Version: opts.Version, BinarySHA256: binSum, Created: created, Libraries: libs})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	sbomSum := sha256.Sum256(sbom)
	srcs := []source{
		{member: Member{Path: SBOMName, Type: TypeSBOM, Size: int64(len(sbom))}, data: sbom, mode: 0o644, sha256: hexSum(sbomSum[:])},
		{member: Member{Path: BinaryName, Type: TypeBinary, Size: binSize}, file: opts.BinaryPath, mode: 0o755, sha256: binSum},
	}
	for _, l := range libs {
		srcs = append(srcs, source{member: Member{Path: LibraryDir + l.Name, Type: TypeLibrary, Size: l.Size}, file: l.Path, mode: 0o644, sha256: l.SHA256})
	}

	// The models, as the store holds them.
	seen := map[string]bool{}
	for _, id := range opts.Models {
		if seen[id] {
			continue
		}
		seen[id] = true
		if opts.Store == nil {
			return nil, fmt.Errorf("create: models given but no models store")
		}
		m, err := opts.Store.Get(id)
		if err != nil {
			return nil, fmt.Errorf("create: model %s: %w", id, err)
		}
		dir := filepath.Join(opts.Store.Dir(), id)
		man, err := os.ReadFile(filepath.Join(dir, models.ManifestFile))
		if err != nil {
			return nil, fmt.Errorf("create: model %s: %w", id, err)
		}
		file := m.File
		if file == "" {
			file = models.ModelFile
		}
		weights := filepath.Join(dir, file)
		st, err := os.Stat(weights)
		if err != nil {
			return nil, fmt.Errorf("create: model %s: %w", id, err)
		}
		if m.Size != 0 && st.Size() != m.Size {
			return nil, fmt.Errorf("create: model %s: %s is %d bytes, its manifest says %d: the store is damaged; pull the model again", id, weights, st.Size(), m.Size)
		}
		sum := m.SHA256
		if sum == "" {
			if sum, _, err = hashFile(weights, opts.Progress, "hashing "+id); err != nil {
				return nil, fmt.Errorf("create: model %s: %w", id, err)
			}
		}
		manSum := sha256.Sum256(man)
		srcs = append(srcs,
			source{member: Member{Path: "models/" + id + "/" + models.ManifestFile, Type: TypeModelManifest, Model: id, Size: int64(len(man))}, data: man, mode: 0o644, sha256: hexSum(manSum[:])},
			source{member: Member{Path: "models/" + id + "/" + file, Type: TypeModel, Model: id, Size: st.Size()}, file: weights, mode: 0o644, sha256: sum},
		)
	}

	// The metadata: manifest, checksums, signature.
	// The oldest version that can describe the bundle: one without
	// libraries stays readable by a sovereign that knows only version 1.
	version := minFormatVersion
	if len(libs) > 0 {
		version = libraryFormatVersion
	}
	man := Manifest{Format: FormatName, FormatVersion: version, SovereignVersion: opts.Version, Platform: platform, Created: created}
	sums := map[string]string{}
	var order []string
	for _, s := range srcs {
		if err := checkMember(s.member); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		man.Members = append(man.Members, s.member)
		sums[s.member.Path] = s.sha256
	}
	manBytes, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("create: encode manifest: %w", err)
	}
	manBytes = append(manBytes, '\n')
	manSum := sha256.Sum256(manBytes)
	sums[ManifestName] = hexSum(manSum[:])
	order = append(order, ManifestName)
	for _, s := range srcs {
		order = append(order, s.member.Path)
	}
	sumsBytes := formatSums(order, sums)
	pub := opts.Key.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(opts.Key, signedMessage(manBytes, sumsBytes))
	sigBytes := formatSignature(KeyID(pub), sig)

	// The archive. archive/tar writes each header as plain ustar where it
	// fits (any tar reads it) and adds PAX records only where it must: a
	// member of 8 GiB or more, which ustar cannot describe.
	cw := &countWriter{w: w}
	tw := tar.NewWriter(cw)
	put := func(name string, size, mode int64) error {
		return tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg, Name: Root + name, Size: size, Mode: mode,
			ModTime: created,
		})
	}
	for _, meta := range []struct {
		name string
		data []byte
	}{{ManifestName, manBytes}, {SumsName, sumsBytes}, {SignatureName, sigBytes}} {
		if err := put(meta.name, int64(len(meta.data)), 0o644); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		if _, err := tw.Write(meta.data); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
	}
	for _, s := range srcs {
		if err := put(s.member.Path, s.member.Size, s.mode); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		if s.file == "" {
			if _, err := tw.Write(s.data); err != nil {
				return nil, fmt.Errorf("create: %w", err)
			}
			continue
		}
		if err := copyChecked(tw, s, opts.Progress); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	for i := range man.Members {
		man.Members[i].SHA256 = sums[man.Members[i].Path]
	}
	return &Created{Manifest: man, KeyID: KeyID(pub), Size: cw.n}, nil
}

// copyChecked copies a file member into the archive, hashing it as it goes,
// and fails if the file is not the size and hash already recorded.
func copyChecked(tw *tar.Writer, s source, progress io.Writer) error {
	f, err := os.Open(s.file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	var p *models.Progress
	if progress != nil && s.member.Size >= 16<<20 {
		p = models.NewProgress(progress, "adding "+s.member.Path, s.member.Size)
	}
	n, err := io.Copy(io.MultiWriter(tw, h, progressWriter{p}), io.LimitReader(f, s.member.Size+1))
	p.Finish()
	if err != nil {
		return fmt.Errorf("%s: %w", s.member.Path, err)
	}
	if n != s.member.Size {
		return fmt.Errorf("%s: %s changed size while it was copied (%d bytes, was %d)", s.member.Path, s.file, n, s.member.Size)
	}
	if got := hexSum(h.Sum(nil)); got != s.sha256 {
		what := "changed while it was copied"
		if s.member.Type == TypeModel {
			what = "does not match the sha256 in its models-store manifest (the file changed or is damaged; pull the model again)"
		}
		return fmt.Errorf("%s: %s %s: sha256 %s, expected %s", s.member.Path, s.file, what, got, s.sha256)
	}
	return nil
}

// progressWriter counts into a Progress that may be nil.
type progressWriter struct{ p *models.Progress }

func (w progressWriter) Write(b []byte) (int, error) {
	w.p.Add(int64(len(b)))
	return len(b), nil
}

// hashFile returns the hex sha256 and size of a file, streaming it.
func hashFile(path string, progress io.Writer, label string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !st.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", path)
	}
	var p *models.Progress
	if progress != nil && st.Size() >= 256<<20 {
		p = models.NewProgress(progress, label, st.Size())
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, progressWriter{p}), f)
	p.Finish()
	if err != nil {
		return "", 0, err
	}
	return hexSum(h.Sum(nil)), n, nil
}

// formatSignature renders SIGNATURE: a header line, the key id, and the
// signature in base64.
func formatSignature(keyID string, sig []byte) []byte {
	return []byte("sovereign-bundle-signature v1\nkey-id: " + keyID + "\ned25519: " + base64.StdEncoding.EncodeToString(sig) + "\n")
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
