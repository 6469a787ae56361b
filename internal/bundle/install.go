package bundle

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
)

// stagingPrefix matches the models store's own staging prefix
// (internal/models): the store's List skips such directories and its Open
// removes day-old ones, so an install that dies midway leaves nothing a
// server would read, and nothing forever.
const stagingPrefix = ".staging-bundle-"

// InstallOptions say where [Install] puts a bundle.
type InstallOptions struct {
	// BinDir receives the binary as BinDir/sovereign.
	BinDir string
	// LibDir receives the binary's libraries, when the bundle holds
	// any (a portable build); empty is BinDir/../lib/sovereign, where
	// the binary's run path ($ORIGIN/../lib/sovereign) looks for them.
	LibDir string
	// ModelsDir is the models store the models go into (the server's
	// SOVEREIGN_MODELS_DIR, by default $SOVEREIGN_DATA_DIR/models).
	ModelsDir string
	// ShareDir receives sbom.cdx.json and the bundle's manifest.json
	// (as bundle-manifest.json), a record of what was installed.
	ShareDir string
	// AnyPlatform installs a binary made for another GOOS/GOARCH.
	AnyPlatform bool
	// Progress receives progress lines; nil is quiet.
	Progress io.Writer
}

// Installed describes what [Install] installed.
type Installed struct {
	Contents *Contents
	Binary   string
	// LibDir holds the libraries installed; empty when the bundle has
	// none.
	LibDir    string
	Libraries []string // their paths
	Models    []string // model directories
	SBOM      string
}

// Install verifies a bundle while it unpacks it into temporary files next
// to their destinations, and only once every check of [Read] has passed
// moves them into place with renames: the library directory (replaced
// whole, so that no library of an earlier version stays behind; before
// the binary, which must not appear without them), the binary, each model
// directory (a model of the same id is replaced), the SBOM and manifest. A
// refused or failed install leaves the destinations as they were. Each
// rename is atomic; the set is not, so a crash between renames leaves some
// parts new and some old, and running the install again completes it.
func Install(r io.Reader, pub ed25519.PublicKey, opts InstallOptions) (*Installed, error) {
	if opts.LibDir == "" && opts.BinDir != "" {
		opts.LibDir = filepath.Join(filepath.Dir(filepath.Clean(opts.BinDir)), "lib", "sovereign")
	}
	for _, d := range []string{opts.BinDir, opts.ModelsDir, opts.ShareDir} {
		if d == "" {
			return nil, errors.New("install: a destination directory is empty")
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
	}
	modelStage, err := os.MkdirTemp(opts.ModelsDir, stagingPrefix)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	defer os.RemoveAll(modelStage)
	shareStage, err := os.MkdirTemp(opts.ShareDir, stagingPrefix)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	defer os.RemoveAll(shareStage)
	binTmp := filepath.Join(opts.BinDir, ".sovereign"+stagingPrefix+filepath.Base(modelStage))
	defer os.Remove(binTmp)
	// The libraries' stage is made beside the library directory (the
	// same file system, for the rename) on the first library: a bundle
	// without any creates no directory for them.
	var libStage string
	defer func() {
		if libStage != "" {
			os.RemoveAll(libStage)
		}
	}()

	var open []*os.File
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	sink := func(m Member) (io.Writer, error) {
		var dst string
		mode := os.FileMode(0o644)
		switch m.Type {
		case TypeBinary:
			dst, mode = binTmp, 0o755
		case TypeSBOM:
			dst = filepath.Join(shareStage, SBOMName)
		case TypeLibrary:
			if libStage == "" {
				parent := filepath.Dir(opts.LibDir)
				if err := os.MkdirAll(parent, 0o755); err != nil {
					return nil, fmt.Errorf("install: %w", err)
				}
				stage, err := os.MkdirTemp(parent, stagingPrefix)
				if err != nil {
					return nil, fmt.Errorf("install: %w", err)
				}
				libStage = stage
				if err := os.Mkdir(filepath.Join(libStage, "lib"), 0o755); err != nil {
					return nil, fmt.Errorf("install: %w", err)
				}
			}
			// m.Path is lib/sovereign/<a library's plain name>,
			// checked against the signed manifest's rules.
			dst = filepath.Join(libStage, "lib", path.Base(m.Path))
		case TypeModel, TypeModelManifest:
			// m.Path was checked against the signed manifest's rules
			// (models/<valid id>/<plain name>): it stays in the stage.
			dst = filepath.Join(modelStage, filepath.FromSlash(m.Path))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, fmt.Errorf("install: %w", err)
			}
		default:
			return nil, fmt.Errorf("install: no place for member %s of type %s", m.Path, m.Type)
		}
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
		open = append(open, f)
		return f, nil
	}
	c, err := Read(r, pub, ReadOptions{
		Sink:     sink,
		Progress: opts.Progress,
		Authenticated: func(c *Contents) error {
			here := runtime.GOOS + "/" + runtime.GOARCH
			if !opts.AnyPlatform && c.Manifest.Platform != here {
				return fmt.Errorf("install: the bundle's binary is for %s, this machine is %s", c.Manifest.Platform, here)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	// Durable before visible: a crash after a rename must not leave an
	// installed file whose blocks never reached the disk.
	for _, f := range open {
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("install: %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("install: %s: %w", f.Name(), err)
		}
	}
	open = nil
	if err := os.WriteFile(filepath.Join(shareStage, "bundle-manifest.json"), c.ManifestJSON, 0o644); err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}

	out := &Installed{Contents: c, Binary: filepath.Join(opts.BinDir, "sovereign"), SBOM: filepath.Join(opts.ShareDir, SBOMName)}
	if libs := c.Manifest.Libraries(); len(libs) > 0 {
		// The stage's mode is MkdirTemp's 0700; the installed
		// directory must be readable by the service's user.
		if err := os.Chmod(filepath.Join(libStage, "lib"), 0o755); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
		if err := replaceDir(filepath.Join(libStage, "lib"), opts.LibDir, libStage); err != nil {
			return nil, fmt.Errorf("install: libraries: %w", err)
		}
		out.LibDir = opts.LibDir
		for _, l := range libs {
			out.Libraries = append(out.Libraries, filepath.Join(opts.LibDir, path.Base(l.Path)))
		}
	}
	if err := os.Rename(binTmp, out.Binary); err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	for _, id := range c.Manifest.Models() {
		final := filepath.Join(opts.ModelsDir, id)
		if err := replaceDir(filepath.Join(modelStage, "models", id), final, modelStage); err != nil {
			return nil, fmt.Errorf("install: model %s: %w", id, err)
		}
		out.Models = append(out.Models, final)
	}
	for _, name := range []string{SBOMName, "bundle-manifest.json"} {
		if err := os.Rename(filepath.Join(shareStage, name), filepath.Join(opts.ShareDir, name)); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
	}
	dirs := []string{opts.BinDir, opts.ModelsDir, opts.ShareDir}
	if out.LibDir != "" {
		dirs = append(dirs, out.LibDir, filepath.Dir(out.LibDir))
	}
	for _, d := range dirs {
		syncDir(d)
	}
	return out, nil
}

// replaceDir moves src to dst, replacing a directory already there: the old
// one is first renamed into trash (inside the same stage) so that dst is
// never missing for longer than between two renames, and is restored if
// the second rename fails.
func replaceDir(src, dst, trash string) error {
	var old string
	if _, err := os.Lstat(dst); err == nil {
		old = filepath.Join(trash, "old-"+filepath.Base(dst))
		if err := os.Rename(dst, old); err != nil {
			return err
		}
	}
	if err := os.Rename(src, dst); err != nil {
		if old != "" {
			os.Rename(old, dst)
		}
		return err
	}
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
