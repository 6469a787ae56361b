// Package imagebuild assembles Sovereign's OCI image without a daemon and
// without a base image: the root filesystem is the sovereign binary, its
// own shared libraries when it is a portable build (llama.cpp and ggml's
// CPU variants, from lib/sovereign beside bin/; internal/bundle/libdir),
// plus the files they need from Debian's packages, and every byte of the
// result follows from the inputs (the binary and its libraries, the .deb
// files, the models, the version strings and SOURCE_DATE_EPOCH), so
// building twice gives the same digests. See docs/image.md.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
)

// Options are the inputs of an image.
type Options struct {
	Binary    string    // the sovereign ELF binary
	Debs      []Deb     // the Debian packages (FetchDebs or DebsFromDir)
	Epoch     time.Time // SOURCE_DATE_EPOCH: every mtime and "created"
	Name      string    // image name, "sovereign"
	Version   string    // the tag and org.opencontainers.image.version
	Revision  string    // the git commit
	SourceURL string    // org.opencontainers.image.source
	Licenses  string    // org.opencontainers.image.licenses (SPDX)
	// ModelsDir and Models: the models baked into the "-models" tag
	// (directories ModelsDir/<id> holding manifest.json and the weights).
	// No Models: no second tag.
	ModelsDir string
	Models    []string
}

// Image is one tagged image of a build.
type Image struct {
	Tag    string // "sovereign:v1.2.3"
	Image  v1.Image
	Digest v1.Hash // of its manifest
}

// Result is a build: the base image, and the models image when asked for.
type Result struct {
	Options Options
	Base    Image
	Models  *Image
	Files   *Tree // the Debian layer, for the SBOM and checks
	// Libs are the binary's own libraries, in LibDir; none for a build
	// with llama.cpp linked in.
	Libs []libdir.Lib
}

// Images returns the built images, base first.
func (r *Result) Images() []Image {
	out := []Image{r.Base}
	if r.Models != nil {
		out = append(out, *r.Models)
	}
	return out
}

const (
	DataDir   = "/data"
	ModelsDir = "/models"
	BinPath   = "/usr/bin/sovereign"
	Port      = "8080/tcp"
	// LibDir holds a portable binary's libraries: its run path
	// ($ORIGIN/../lib/sovereign) seen from BinPath.
	LibDir = "/usr/lib/sovereign"
)

// Build assembles the images.
func Build(ctx context.Context, o Options) (*Result, error) {
	if o.Name == "" {
		o.Name = "sovereign"
	}
	if o.Version == "" {
		return nil, fmt.Errorf("imagebuild: no version")
	}
	epoch := o.Epoch.UTC()
	deb, err := DebianTree(ctx, o.Debs)
	if err != nil {
		return nil, err
	}
	_, libs, err := libdir.Of(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	if err := checkLibraries(deb, o.Binary, libs); err != nil {
		return nil, fmt.Errorf("imagebuild: %s in this image: %w", o.Binary, err)
	}
	st, err := os.Stat(o.Binary)
	if err != nil {
		return nil, err
	}
	// The second layer is Sovereign's own: the binary and its libraries,
	// each a regular file under the name the loader looks for (libdir),
	// read-only for all but root. The Debian layer, which changes less
	// often, stays shared between builds.
	bin := NewTree()
	bin.Add(&File{Path: BinPath, Type: tar.TypeReg, Mode: 0o755, Src: o.Binary, Size: st.Size()})
	for _, l := range libs {
		bin.Add(&File{Path: LibDir + "/" + l.Name, Type: tar.TypeReg, Mode: 0o644, Src: l.Path, Size: l.Size})
	}
	delete(bin.files, "/usr") // the Debian layer has the directories
	delete(bin.files, "/usr/bin")
	delete(bin.files, "/usr/lib")
	ownFiles := BinPath
	if len(libs) > 0 {
		ownFiles += fmt.Sprintf(" and %s (%d libraries)", LibDir, len(libs))
	}

	debLayer, err := gzipLayer(deb.Opener(epoch))
	if err != nil {
		return nil, err
	}
	binLayer, err := gzipLayer(bin.Opener(epoch))
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, d := range o.Debs {
		pkgs = append(pkgs, d.Package+"="+d.Version)
	}
	created := v1.Time{Time: epoch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: debLayer, MediaType: types.OCILayer, History: v1.History{Created: created,
			CreatedBy: "imagebuild: files from Debian packages " + strings.Join(pkgs, " ") + "; passwd, group, CA bundle, /data"}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{Created: created,
			CreatedBy: "imagebuild: " + ownFiles}},
	)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       o.Name,
		"org.opencontainers.image.description": "Sovereign: a self-hosted OpenAI-compatible inference server",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.source":      o.SourceURL,
		"org.opencontainers.image.licenses":    o.Licenses,
		"org.opencontainers.image.created":     epoch.Format(time.RFC3339),
	}
	env := []string{
		"PATH=/usr/bin",
		"SOVEREIGN_DATA_DIR=" + DataDir,
		"SOVEREIGN_ADDR=0.0.0.0:8080",
		// Plain HTTP on the pod's address: TLS ends at the ingress or
		// service mesh, or set SOVEREIGN_TLS_CERT and SOVEREIGN_TLS_KEY.
		"SOVEREIGN_ALLOW_INSECURE_HTTP=true",
		// Nothing is written outside /data, temporary files included.
		"TMPDIR=" + DataDir + "/tmp",
	}
	img, err = setConfig(img, epoch, func(c *v1.Config) {
		c.User = fmt.Sprintf("%d:%d", NonRoot, NonRoot)
		c.Entrypoint = []string{BinPath, "serve"}
		c.Cmd = nil
		c.Env = env
		c.WorkingDir = DataDir
		c.ExposedPorts = map[string]struct{}{Port: {}}
		c.Volumes = map[string]struct{}{DataDir: {}}
		c.Labels = labels
		c.StopSignal = "SIGTERM"
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Options: o, Files: deb, Libs: libs}
	res.Base = Image{Tag: o.Name + ":" + o.Version, Image: img}
	if res.Base.Digest, err = img.Digest(); err != nil {
		return nil, err
	}
	if len(o.Models) == 0 {
		return res, nil
	}

	mt, err := modelsTree(o.ModelsDir, o.Models)
	if err != nil {
		return nil, err
	}
	mLayer, err := rawLayer(mt.Opener(epoch))
	if err != nil {
		return nil, err
	}
	mimg, err := mutate.Append(img, mutate.Addendum{Layer: mLayer, MediaType: types.OCIUncompressedLayer,
		History: v1.History{Created: created, CreatedBy: "imagebuild: models " + strings.Join(o.Models, " ") + " in " + ModelsDir}})
	if err != nil {
		return nil, err
	}
	mimg, err = setConfig(mimg, epoch, func(c *v1.Config) {
		c.Env = append(append([]string(nil), env...), "SOVEREIGN_MODELS_DIR="+ModelsDir)
		l := map[string]string{}
		for k, v := range labels {
			l[k] = v
		}
		l["org.opencontainers.image.version"] = o.Version + "-models"
		l["io.sovereign.models"] = strings.Join(o.Models, ",")
		c.Labels = l
	})
	if err != nil {
		return nil, err
	}
	res.Models = &Image{Tag: o.Name + ":" + o.Version + "-models", Image: mimg}
	if res.Models.Digest, err = mimg.Digest(); err != nil {
		return nil, err
	}
	return res, nil
}

func setConfig(img v1.Image, epoch time.Time, edit func(*v1.Config)) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = "amd64"
	cf.OS = "linux"
	cf.Created = v1.Time{Time: epoch}
	edit(&cf.Config)
	return mutate.ConfigFile(img, cf)
}

// modelsTree is /models: each model's directory, read-only, root-owned.
func modelsTree(dir string, ids []string) (*Tree, error) {
	t := NewTree()
	t.Add(&File{Path: ModelsDir, Type: tar.TypeDir, Mode: 0o555})
	for _, id := range ids {
		src := filepath.Join(dir, id)
		if _, err := os.Stat(filepath.Join(src, "manifest.json")); err != nil {
			return nil, fmt.Errorf("model %s: %w (fetch it with `make models`)", id, err)
		}
		t.Add(&File{Path: ModelsDir + "/" + id, Type: tar.TypeDir, Mode: 0o555})
		ents, err := os.ReadDir(src)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
				continue
			}
			info, err := e.Info()
			if err != nil {
				return nil, err
			}
			t.Add(&File{Path: ModelsDir + "/" + id + "/" + e.Name(), Type: tar.TypeReg, Mode: 0o444,
				Src: filepath.Join(src, e.Name()), Size: info.Size()})
		}
	}
	return t, nil
}

// gzipLayer is a gzip-compressed OCI layer (Go's compress/gzip at the
// default level, no name or time in its header: the same bytes every time
// with the same Go release), compressed once and kept in memory.
func gzipLayer(open func() (io.ReadCloser, error)) (v1.Layer, error) {
	return tarball.LayerFromOpener(open, tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

// uncompressed is a layer stored as a plain tar: the models layer, whose
// weights gzip would barely shrink at the cost of minutes of CPU.
type uncompressed struct {
	open   func() (io.ReadCloser, error)
	digest v1.Hash
	size   int64
}

func rawLayer(open func() (io.ReadCloser, error)) (v1.Layer, error) {
	rc, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h, n, err := v1.SHA256(rc)
	if err != nil {
		return nil, err
	}
	return &uncompressed{open: open, digest: h, size: n}, nil
}

func (l *uncompressed) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *uncompressed) DiffID() (v1.Hash, error)             { return l.digest, nil }
func (l *uncompressed) Compressed() (io.ReadCloser, error)   { return l.open() }
func (l *uncompressed) Uncompressed() (io.ReadCloser, error) { return l.open() }
func (l *uncompressed) Size() (int64, error)                 { return l.size, nil }
func (l *uncompressed) MediaType() (types.MediaType, error) {
	return types.OCIUncompressedLayer, nil
}

// WriteArchive writes imgs as one OCI image layout in a tar archive (what
// `podman load` and `skopeo copy oci-archive:` read): oci-layout,
// index.json with one manifest per image named by its tag
// (org.opencontainers.image.ref.name), and each blob once, in digest
// order, every entry with mtime epoch.
func WriteArchive(path string, imgs []Image, epoch time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := writeArchive(tmp, imgs, epoch); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	os.Chmod(tmp.Name(), 0o644)
	return os.Rename(tmp.Name(), path)
}

type blob struct {
	digest v1.Hash
	size   int64
	data   []byte
	open   func() (io.ReadCloser, error)
}

func writeArchive(w io.Writer, imgs []Image, epoch time.Time) error {
	blobs := map[v1.Hash]blob{}
	type desc struct {
		MediaType   types.MediaType   `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	var manifests []desc
	for _, im := range imgs {
		m, err := im.Image.RawManifest()
		if err != nil {
			return err
		}
		c, err := im.Image.RawConfigFile()
		if err != nil {
			return err
		}
		for _, b := range [][]byte{m, c} {
			h, n, _ := v1.SHA256(bytes.NewReader(b))
			blobs[h] = blob{digest: h, size: n, data: b}
		}
		layers, err := im.Image.Layers()
		if err != nil {
			return err
		}
		for _, l := range layers {
			h, err := l.Digest()
			if err != nil {
				return err
			}
			n, err := l.Size()
			if err != nil {
				return err
			}
			blobs[h] = blob{digest: h, size: n, open: l.Compressed}
		}
		mh := sha256.Sum256(m)
		manifests = append(manifests, desc{
			MediaType: types.OCIManifestSchema1,
			Digest:    fmt.Sprintf("sha256:%x", mh),
			Size:      int64(len(m)),
			Annotations: map[string]string{
				"org.opencontainers.image.ref.name": im.Tag,
				"io.containerd.image.name":          "docker.io/library/" + im.Tag,
			},
		})
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     types.OCIImageIndex,
		"manifests":     manifests,
	})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	hdr := func(name string, typ byte, size int64) error {
		mode := int64(0o644)
		if typ == tar.TypeDir {
			mode = 0o755
		}
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: epoch})
	}
	layout := []byte(`{"imageLayoutVersion":"1.0.0"}`)
	if err := hdr("oci-layout", tar.TypeReg, int64(len(layout))); err != nil {
		return err
	}
	tw.Write(layout)
	if err := hdr("index.json", tar.TypeReg, int64(len(index))); err != nil {
		return err
	}
	tw.Write(index)
	hdr("blobs/", tar.TypeDir, 0)
	hdr("blobs/sha256/", tar.TypeDir, 0)
	keys := make([]v1.Hash, 0, len(blobs))
	for h := range blobs {
		keys = append(keys, h)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Hex < keys[j].Hex })
	for _, h := range keys {
		b := blobs[h]
		if err := hdr("blobs/sha256/"+h.Hex, tar.TypeReg, b.size); err != nil {
			return err
		}
		if b.data != nil {
			if _, err := tw.Write(b.data); err != nil {
				return err
			}
			continue
		}
		rc, err := b.open()
		if err != nil {
			return err
		}
		n, err := io.Copy(tw, rc)
		rc.Close()
		if err != nil {
			return err
		}
		if n != b.size {
			return fmt.Errorf("blob %s: %d bytes, want %d", h, n, b.size)
		}
	}
	return tw.Close()
}
