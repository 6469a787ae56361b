// Package bundle writes, verifies and installs Sovereign's offline bundles:
// one signed tar archive that carries everything an air-gapped machine
// needs to run Sovereign — the binary and, for the portable build, its
// shared libraries, models from the models store, a CycloneDX SBOM of the
// binary — so that installing it needs no network and no trust in whoever
// carried the file.
//
// # Archive format (format versions 1 and 2)
//
// An uncompressed tar (POSIX ustar, with PAX records only where a member is
// too large for ustar) whose members all sit under "sovereign-bundle/" and
// are plain files, in this order:
//
//	sovereign-bundle/manifest.json   what the bundle holds (see [Manifest])
//	sovereign-bundle/SHA256SUMS      sha256 of every other member, `sha256sum -c` format
//	sovereign-bundle/SIGNATURE       ed25519 signature over manifest.json and SHA256SUMS
//	sovereign-bundle/sbom.cdx.json   CycloneDX 1.5 SBOM of the binary
//	sovereign-bundle/bin/sovereign   the binary
//	sovereign-bundle/lib/sovereign/NAME
//	                                 its libraries, for a portable build (version 2)
//	sovereign-bundle/models/ID/manifest.json, sovereign-bundle/models/ID/model.gguf
//	                                 each model, as laid out in the models store
//
// A portable build's binary loads llama.cpp and ggml's CPU variants from
// $ORIGIN/../lib/sovereign (package libdir): the bundle carries them there,
// each a regular file under the name the loader opens, so that the binary
// of an unpacked bundle runs as it is, and install puts them beside the
// binary it installs. Version 2 is version 1 plus these members; a bundle
// without libraries is written as version 1, which older readers accept.
//
// The three metadata members come first so that a reader authenticates the
// list of members and their checksums before it reads (or writes to disk) a
// single byte of payload: every later member must be named in the signed
// manifest, have the size it declares and the hash SHA256SUMS gives, and
// appear once. Uncompressed because models (most of the bytes) do not
// compress, and a plain tar can be inspected and checked with tar, sha256sum
// and openssl alone (docs/bundle.md shows how).
//
// # Signature
//
// SIGNATURE holds an ed25519 signature of the message
//
//	"sovereign-bundle-signature v1 <len(manifest.json)> <len(SHA256SUMS)>\n" || manifest.json || SHA256SUMS
//
// (lengths in decimal bytes, so that no byte can move from one file to the
// other), with the signing key's id. Since SHA256SUMS lists the hash of
// manifest.json and of every payload member, the signature covers every
// byte of the bundle except itself.
package bundle

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
	"github.com/sovereign-ai/sovereign/internal/models"
)

// FormatVersion is the newest version of the archive layout, which this
// package writes when a bundle holds libraries (TypeLibrary members, new in
// version 2); it reads every version from 1 to this one.
const FormatVersion = 2

// minFormatVersion is the oldest version read, and what Create writes for
// a bundle without libraries (a build with llama.cpp linked in), so that a
// sovereign that reads version 1 only still installs it.
const minFormatVersion = 1

// libraryFormatVersion is the first version with library members.
const libraryFormatVersion = 2

// FormatName is the manifest's "format" value.
const FormatName = "sovereign-bundle"

// Root is the directory every member of the archive sits under.
const Root = "sovereign-bundle/"

// Names of the members inside [Root].
const (
	ManifestName  = "manifest.json"
	SumsName      = "SHA256SUMS"
	SignatureName = "SIGNATURE"
	SBOMName      = "sbom.cdx.json"
	BinaryName    = "bin/sovereign"
	// LibraryDir holds the binary's libraries: bin/sovereign's run path,
	// $ORIGIN/../lib/sovereign.
	LibraryDir = "lib/sovereign/"
)

// Member types, as in [Member.Type].
const (
	TypeSBOM          = "sbom"
	TypeBinary        = "binary"
	TypeModelManifest = "model-manifest"
	TypeModel         = "model"
	TypeLibrary       = "library" // format version 2
)

// Limits on what a reader holds in memory before it has authenticated it:
// the metadata members are read whole, so a hostile archive must not be
// able to make them large.
const (
	maxManifest  = 4 << 20
	maxSums      = 4 << 20
	maxSignature = 4 << 10
	// maxModelManifest bounds a model's manifest.json, which the reader
	// keeps to check against its weights (chat templates make it a few kB).
	maxModelManifest = 4 << 20
	maxMembers       = 10000
)

// ErrRefused is wrapped by every error that says an archive is not a valid,
// intact bundle signed by the expected key (as opposed to an I/O error):
// tampering, corruption, a wrong key, a member that does not belong.
var ErrRefused = errors.New("bundle refused")

// refuse returns an error wrapping [ErrRefused].
func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Manifest is the content of manifest.json: what the bundle holds.
type Manifest struct {
	// Format is always [FormatName].
	Format string `json:"format"`
	// FormatVersion is the archive layout's version ([FormatVersion]).
	FormatVersion int `json:"format_version"`
	// SovereignVersion is the version of the bundled binary.
	SovereignVersion string `json:"sovereign_version"`
	// Platform is the binary's GOOS/GOARCH; install refuses another.
	Platform string `json:"platform"`
	// Created is when the bundle was made (UTC).
	Created time.Time `json:"created"`
	// Members lists every payload member (all but manifest.json,
	// SHA256SUMS and SIGNATURE), in archive order.
	Members []Member `json:"members"`
}

// Member is one payload member of a bundle.
type Member struct {
	// Path is the member's name under [Root].
	Path string `json:"path"`
	// Type is one of the Type* constants.
	Type string `json:"type"`
	// Size is the member's size in bytes.
	Size int64 `json:"size"`
	// Model is the model id, for model and model-manifest members.
	Model string `json:"model,omitempty"`
	// SHA256 is the member's hash; it is not written into manifest.json
	// (SHA256SUMS is the one list of hashes) and is filled in by readers.
	SHA256 string `json:"-"`
}

var ggufName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.gguf$`)

// checkMember validates a manifest entry: its path must be the one its type
// and model dictate. Paths are checked here, in the signed manifest, and
// every archive member must then match one exactly, so nothing a reader
// writes can land outside the directory it chose, signed or not.
func checkMember(m Member) error {
	if err := checkName(m.Path); err != nil {
		return err
	}
	if m.Size < 0 {
		return fmt.Errorf("member %q: negative size", m.Path)
	}
	switch m.Type {
	case TypeSBOM:
		if m.Path != SBOMName || m.Model != "" {
			return fmt.Errorf("member %q: an sbom member must be %s", m.Path, SBOMName)
		}
	case TypeBinary:
		if m.Path != BinaryName || m.Model != "" {
			return fmt.Errorf("member %q: a binary member must be %s", m.Path, BinaryName)
		}
	case TypeLibrary:
		dir, file := path.Split(m.Path)
		if dir != LibraryDir || !libdir.ValidName(file) || m.Model != "" {
			return fmt.Errorf("member %q: a library must be %slib….so[.N…]", m.Path, LibraryDir)
		}
	case TypeModelManifest, TypeModel:
		if err := models.ValidateID(m.Model); err != nil {
			return fmt.Errorf("member %q: %w", m.Path, err)
		}
		dir, file := path.Split(m.Path)
		if dir != "models/"+m.Model+"/" {
			return fmt.Errorf("member %q: model %q must be under models/%s/", m.Path, m.Model, m.Model)
		}
		if m.Type == TypeModelManifest && file != models.ManifestFile {
			return fmt.Errorf("member %q: a model manifest must be named %s", m.Path, models.ManifestFile)
		}
		if m.Type == TypeModel && !ggufName.MatchString(file) {
			return fmt.Errorf("member %q: a model must be a .gguf file", m.Path)
		}
	default:
		return fmt.Errorf("member %q: unknown type %q", m.Path, m.Type)
	}
	return nil
}

// checkName rejects a member name that is not a clean relative path of
// plain components: absolute, "..", ".", empty components, backslashes or
// control characters.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty member name")
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("member %q: absolute path", name)
	case len(name) > 1024:
		return fmt.Errorf("member %.40q…: name too long", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return fmt.Errorf("member %q: path escapes the bundle (\"..\")", name)
		}
	}
	if path.Clean(name) != name {
		return fmt.Errorf("member %q: not a clean path", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("member %q: forbidden character %q", name, r)
		}
	}
	return nil
}

// parseManifest decodes and validates manifest.json.
func parseManifest(b []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", ManifestName, err)
	}
	if dec.More() {
		return Manifest{}, fmt.Errorf("%s: data after the JSON object", ManifestName)
	}
	if m.Format != FormatName {
		return Manifest{}, fmt.Errorf("%s: format %q, want %q", ManifestName, m.Format, FormatName)
	}
	if m.FormatVersion < minFormatVersion || m.FormatVersion > FormatVersion {
		return Manifest{}, fmt.Errorf("%s: format version %d; this sovereign reads versions %d to %d", ManifestName, m.FormatVersion, minFormatVersion, FormatVersion)
	}
	if len(m.Members) > maxMembers {
		return Manifest{}, fmt.Errorf("%s: %d members, more than %d", ManifestName, len(m.Members), maxMembers)
	}
	seen := map[string]bool{}
	var binaries, sboms int
	for _, mem := range m.Members {
		if err := checkMember(mem); err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", ManifestName, err)
		}
		if seen[mem.Path] {
			return Manifest{}, fmt.Errorf("%s: member %q listed twice", ManifestName, mem.Path)
		}
		seen[mem.Path] = true
		switch mem.Type {
		case TypeBinary:
			binaries++
		case TypeSBOM:
			sboms++
		case TypeLibrary:
			if m.FormatVersion < libraryFormatVersion {
				return Manifest{}, fmt.Errorf("%s: member %q: libraries need format version %d, the manifest says %d", ManifestName, mem.Path, libraryFormatVersion, m.FormatVersion)
			}
		}
	}
	if binaries != 1 || sboms != 1 {
		return Manifest{}, fmt.Errorf("%s: want one binary and one sbom, have %d and %d", ManifestName, binaries, sboms)
	}
	// Every model needs its manifest and exactly one GGUF.
	type pair struct{ manifest, weights int }
	perModel := map[string]*pair{}
	for _, mem := range m.Members {
		if mem.Model == "" {
			continue
		}
		p := perModel[mem.Model]
		if p == nil {
			p = &pair{}
			perModel[mem.Model] = p
		}
		if mem.Type == TypeModelManifest {
			p.manifest++
		} else {
			p.weights++
		}
	}
	for id, p := range perModel {
		if p.manifest != 1 || p.weights != 1 {
			return Manifest{}, fmt.Errorf("%s: model %q needs one manifest and one .gguf member", ManifestName, id)
		}
	}
	return m, nil
}

// Models returns the ids of the bundle's models, in manifest order.
func (m Manifest) Models() []string {
	var ids []string
	for _, mem := range m.Members {
		if mem.Type == TypeModel {
			ids = append(ids, mem.Model)
		}
	}
	return ids
}

// Libraries returns the bundle's library members, in manifest order.
func (m Manifest) Libraries() []Member {
	var libs []Member
	for _, mem := range m.Members {
		if mem.Type == TypeLibrary {
			libs = append(libs, mem)
		}
	}
	return libs
}

// formatSums renders SHA256SUMS: "<hex>  <path>\n" per member, the format
// of GNU sha256sum, so `sha256sum -c SHA256SUMS` checks an unpacked bundle.
func formatSums(paths []string, sums map[string]string) []byte {
	var b bytes.Buffer
	for _, p := range paths {
		fmt.Fprintf(&b, "%s  %s\n", sums[p], p)
	}
	return b.Bytes()
}

var sumLine = regexp.MustCompile(`^([0-9a-f]{64})  ([^\n]+)$`)

// parseSums decodes SHA256SUMS strictly: lower-case hex, two spaces, a
// valid member name, every line ended by a newline, no name twice. It
// returns the names in file order and the map of hashes.
func parseSums(b []byte) ([]string, map[string]string, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, nil, fmt.Errorf("%s: empty or not ended by a newline", SumsName)
	}
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	if len(lines) > maxMembers+1 {
		return nil, nil, fmt.Errorf("%s: too many lines", SumsName)
	}
	sums := make(map[string]string, len(lines))
	var order []string
	for i, l := range lines {
		mt := sumLine.FindStringSubmatch(l)
		if mt == nil {
			return nil, nil, fmt.Errorf("%s line %d: want \"<sha256 hex>  <path>\"", SumsName, i+1)
		}
		if err := checkName(mt[2]); err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", SumsName, i+1, err)
		}
		if _, dup := sums[mt[2]]; dup {
			return nil, nil, fmt.Errorf("%s: %q listed twice", SumsName, mt[2])
		}
		sums[mt[2]] = mt[1]
		order = append(order, mt[2])
	}
	return order, sums, nil
}

// signedMessage is what the signature signs; see the package comment.
func signedMessage(manifest, sums []byte) []byte {
	head := "sovereign-bundle-signature v1 " + strconv.Itoa(len(manifest)) + " " + strconv.Itoa(len(sums)) + "\n"
	msg := make([]byte, 0, len(head)+len(manifest)+len(sums))
	msg = append(msg, head...)
	msg = append(msg, manifest...)
	return append(msg, sums...)
}

// checkAgainstSums checks that SHA256SUMS lists exactly manifest.json and
// the manifest's members, that manifest.json's hash is right, and fills in
// each member's SHA256.
func checkAgainstSums(m *Manifest, manifestSHA string, sums map[string]string) error {
	if got, ok := sums[ManifestName]; !ok || got != manifestSHA {
		return fmt.Errorf("%s does not list the manifest's sha256", SumsName)
	}
	if len(sums) != len(m.Members)+1 {
		var extra []string
		for p := range sums {
			if p != ManifestName && !slices.ContainsFunc(m.Members, func(mem Member) bool { return mem.Path == p }) {
				extra = append(extra, p)
			}
		}
		slices.Sort(extra)
		if len(extra) > 0 {
			return fmt.Errorf("%s lists members the manifest does not: %s", SumsName, strings.Join(extra, ", "))
		}
	}
	for i := range m.Members {
		h, ok := sums[m.Members[i].Path]
		if !ok {
			return fmt.Errorf("%s has no sha256 for %s", SumsName, m.Members[i].Path)
		}
		m.Members[i].SHA256 = h
	}
	return nil
}

// hexSum renders a sha256 digest.
func hexSum(b []byte) string { return hex.EncodeToString(b) }
