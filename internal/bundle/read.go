package bundle

import (
	"archive/tar"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/models"
)

// Contents is what [Read] found in a bundle that verified.
type Contents struct {
	// Manifest is the signed manifest, with each member's SHA256 filled in.
	Manifest Manifest
	// ManifestJSON is manifest.json as signed.
	ManifestJSON []byte
	// KeyID is the id of the key that signed it (the one given to Read).
	KeyID string
	// ModelManifests are the models' manifest.json, by model id.
	ModelManifests map[string]models.Manifest
}

// ReadOptions tune [Read].
type ReadOptions struct {
	// Sink, if set, is called for each payload member before its bytes
	// are read and returns where to write them (install writes them to a
	// temporary directory); nil writers and a nil Sink discard the bytes.
	// The bytes written are not yet verified: the caller must discard
	// them unless Read returns nil.
	Sink func(Member) (io.Writer, error)
	// Authenticated, if set, is called once the manifest's signature has
	// been checked and before any payload is read; an error stops Read
	// (install refuses another platform's binary here, before writing).
	Authenticated func(*Contents) error
	// Progress receives progress lines for large members; nil is quiet.
	Progress io.Writer
}

// Read reads a bundle from r as a stream and verifies it against pub:
// the signature over the manifest and checksums; then that the payload is
// exactly the manifest's members, each once, each a regular file of the
// size declared and the sha256 listed; that each model's manifest matches
// its weights; and that nothing but zero padding follows the archive's end.
// Any failure of these is an error wrapping [ErrRefused]; the reader never
// needs to seek, and holds no member in memory but the small metadata.
func Read(r io.Reader, pub ed25519.PublicKey, opts ReadOptions) (*Contents, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("bundle: no valid public key")
	}
	tr := tar.NewReader(r)

	// The metadata members, in order.
	var meta [3][]byte
	limits := [3]int64{maxManifest, maxSums, maxSignature}
	for i, want := range []string{ManifestName, SumsName, SignatureName} {
		hdr, name, err := next(tr)
		if err == io.EOF {
			return nil, refuse("the archive ends before %s: not a sovereign bundle, or truncated", want)
		}
		if err != nil {
			return nil, err
		}
		if name != want {
			return nil, refuse("member %d is %q, want %s%s: not a sovereign bundle, or reordered", i+1, hdr.Name, Root, want)
		}
		if hdr.Size > limits[i] {
			return nil, refuse("%s is %d bytes, more than the %d allowed", want, hdr.Size, limits[i])
		}
		b, err := io.ReadAll(io.LimitReader(tr, limits[i]))
		if err != nil {
			return nil, readErr(want, err)
		}
		meta[i] = b
	}
	manBytes, sumsBytes, sigBytes := meta[0], meta[1], meta[2]

	keyID, sig, err := parseSignature(sigBytes)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if want := KeyID(pub); keyID != want {
		return nil, refuse("signed by key %s, not by the key given (%s): use the public key of whoever made the bundle", keyID, want)
	}
	if !ed25519.Verify(pub, signedMessage(manBytes, sumsBytes), sig) {
		return nil, refuse("the signature does not verify: %s or %s was changed after signing, or another key signed them", ManifestName, SumsName)
	}
	// From here on the metadata is the signer's; still parse it strictly.
	man, err := parseManifest(manBytes)
	if err != nil {
		return nil, refuse("%v", err)
	}
	_, sums, err := parseSums(sumsBytes)
	if err != nil {
		return nil, refuse("%v", err)
	}
	manSum := sha256.Sum256(manBytes)
	if err := checkAgainstSums(&man, hexSum(manSum[:]), sums); err != nil {
		return nil, refuse("%v", err)
	}
	c := &Contents{Manifest: man, ManifestJSON: manBytes, KeyID: keyID, ModelManifests: map[string]models.Manifest{}}
	if opts.Authenticated != nil {
		if err := opts.Authenticated(c); err != nil {
			return nil, err
		}
	}

	// The payload.
	byPath := make(map[string]int, len(man.Members))
	for i, m := range man.Members {
		byPath[m.Path] = i
	}
	done := make([]bool, len(man.Members))
	modelManifests := map[string][]byte{}
	for {
		hdr, name, err := next(tr)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		i, ok := byPath[name]
		if !ok {
			return nil, refuse("member %q is not in the signed manifest: something was added to the bundle", hdr.Name)
		}
		if done[i] {
			return nil, refuse("member %q appears twice", hdr.Name)
		}
		done[i] = true
		m := man.Members[i]
		if hdr.Size != m.Size {
			return nil, refuse("member %q is %d bytes, the signed manifest says %d", hdr.Name, hdr.Size, m.Size)
		}
		var w io.Writer
		if opts.Sink != nil {
			if w, err = opts.Sink(m); err != nil {
				return nil, err
			}
		}
		var keep *bytes.Buffer
		if m.Type == TypeModelManifest {
			if m.Size > maxModelManifest {
				return nil, refuse("%s is %d bytes, more than the %d allowed for a model manifest", m.Path, m.Size, maxModelManifest)
			}
			keep = &bytes.Buffer{}
		}
		if err := copyMember(tr, m, w, keep, opts.Progress); err != nil {
			return nil, err
		}
		if keep != nil {
			modelManifests[m.Model] = keep.Bytes()
		}
	}
	var missing []string
	for i, ok := range done {
		if !ok {
			missing = append(missing, man.Members[i].Path)
		}
	}
	if len(missing) > 0 {
		return nil, refuse("members missing from the archive: %s (truncated, or removed)", strings.Join(missing, ", "))
	}
	if err := checkPadding(r); err != nil {
		return nil, err
	}
	for _, m := range man.Members {
		if m.Type != TypeModel {
			continue
		}
		mm, err := checkModelManifest(m, modelManifests[m.Model])
		if err != nil {
			return nil, refuse("%v", err)
		}
		c.ModelManifests[m.Model] = mm
	}
	return c, nil
}

// next returns the next archive entry and its name under [Root], refusing
// anything but a regular file with a clean name: directories, symbolic and
// hard links, devices, FIFOs, and names that are absolute, contain "..", or
// lie outside Root.
func next(tr *tar.Reader) (*tar.Header, string, error) {
	hdr, err := tr.Next()
	if err == io.EOF {
		return nil, "", io.EOF
	}
	if err != nil {
		return nil, "", readErr("the archive", err)
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeSymlink:
		return nil, "", refuse("member %q is a symbolic link (to %q): a bundle holds only regular files", hdr.Name, hdr.Linkname)
	case tar.TypeLink:
		return nil, "", refuse("member %q is a hard link (to %q): a bundle holds only regular files", hdr.Name, hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return nil, "", refuse("member %q is a device or FIFO: a bundle holds only regular files", hdr.Name)
	case tar.TypeDir:
		return nil, "", refuse("member %q is a directory entry: a bundle holds only regular files", hdr.Name)
	default:
		return nil, "", refuse("member %q has tar type %q: a bundle holds only regular files", hdr.Name, hdr.Typeflag)
	}
	if err := checkName(hdr.Name); err != nil {
		return nil, "", refuse("%v", err)
	}
	name, ok := strings.CutPrefix(hdr.Name, Root)
	if !ok {
		return nil, "", refuse("member %q is outside %s", hdr.Name, Root)
	}
	if hdr.Size < 0 {
		return nil, "", refuse("member %q has a negative size", hdr.Name)
	}
	return hdr, name, nil
}

// readErr classifies an error from the tar reader: a malformed or cut-short
// archive is refused; anything else (a disk error) is reported as it is.
func readErr(what string, err error) error {
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrFieldTooLong) || errors.Is(err, tar.ErrInsecurePath) {
		return refuse("reading %s: %v (the archive is damaged or truncated)", what, err)
	}
	return fmt.Errorf("bundle: reading %s: %w", what, err)
}

// copyMember streams one member from the archive to w (and keep), hashing
// it, and checks the hash.
func copyMember(tr *tar.Reader, m Member, w io.Writer, keep *bytes.Buffer, progress io.Writer) error {
	h := sha256.New()
	ws := []io.Writer{h}
	if w != nil {
		ws = append(ws, w)
	}
	if keep != nil {
		ws = append(ws, keep)
	}
	var p *models.Progress
	if progress != nil && m.Size >= 16<<20 {
		p = models.NewProgress(progress, "verifying "+m.Path, m.Size)
		ws = append(ws, progressWriter{p})
	}
	n, err := io.Copy(io.MultiWriter(ws...), tr)
	p.Finish()
	if err != nil {
		// A failing writer (a full disk) is not tampering.
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return refuse("%s is cut short (the archive is truncated)", m.Path)
		}
		return fmt.Errorf("bundle: %s: %w", m.Path, err)
	}
	if n != m.Size {
		return refuse("%s is cut short: %d of %d bytes", m.Path, n, m.Size)
	}
	if got := hexSum(h.Sum(nil)); got != m.SHA256 {
		return refuse("%s is damaged or was changed: sha256 %s, the signed checksums say %s", m.Path, got, m.SHA256)
	}
	return nil
}

// checkPadding refuses data after the archive's end other than zero
// blocks: nothing may ride along with a signed bundle, even where tar
// itself would not look.
func checkPadding(r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return refuse("data follows the end of the archive: something was appended to the bundle")
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("bundle: reading past the archive's end: %w", err)
		}
	}
}

// parseSignature decodes SIGNATURE.
func parseSignature(b []byte) (keyID string, sig []byte, err error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) != 4 || lines[0] != "sovereign-bundle-signature v1" || lines[3] != "" {
		return "", nil, fmt.Errorf("%s: not a sovereign-bundle-signature v1 file", SignatureName)
	}
	keyID, ok := strings.CutPrefix(lines[1], "key-id: ")
	if !ok || !strings.HasPrefix(keyID, "sha256:") {
		return "", nil, fmt.Errorf("%s: no key-id line", SignatureName)
	}
	enc, ok := strings.CutPrefix(lines[2], "ed25519: ")
	if !ok {
		return "", nil, fmt.Errorf("%s: no ed25519 line", SignatureName)
	}
	sig, err = base64.StdEncoding.DecodeString(enc)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return "", nil, fmt.Errorf("%s: the signature is not %d bytes of base64", SignatureName, ed25519.SignatureSize)
	}
	return keyID, sig, nil
}

// checkModelManifest checks that a model's manifest.json describes the
// weights beside it: its id, file name, size and sha256. The signature
// already covers both; this catches a bundle made from a damaged store,
// which would otherwise install a model the server then refuses.
func checkModelManifest(weights Member, raw []byte) (models.Manifest, error) {
	var mm models.Manifest
	if err := json.Unmarshal(raw, &mm); err != nil {
		return models.Manifest{}, fmt.Errorf("models/%s/%s: %v", weights.Model, models.ManifestFile, err)
	}
	file := mm.File
	if file == "" {
		file = models.ModelFile
	}
	switch {
	case mm.ID != weights.Model:
		return models.Manifest{}, fmt.Errorf("models/%s/%s: id %q", weights.Model, models.ManifestFile, mm.ID)
	case "models/"+weights.Model+"/"+file != weights.Path:
		return models.Manifest{}, fmt.Errorf("models/%s/%s names weights %q, the bundle has %s", weights.Model, models.ManifestFile, file, weights.Path)
	case mm.Size != 0 && mm.Size != weights.Size:
		return models.Manifest{}, fmt.Errorf("models/%s/%s: size %d, the weights are %d bytes", weights.Model, models.ManifestFile, mm.Size, weights.Size)
	case mm.SHA256 != "" && mm.SHA256 != weights.SHA256:
		return models.Manifest{}, fmt.Errorf("models/%s/%s: sha256 %s, the weights' is %s", weights.Model, models.ManifestFile, mm.SHA256, weights.SHA256)
	}
	return mm, nil
}
