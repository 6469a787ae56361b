package helmchart

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Package writes the chart as `helm package --app-version appVersion`
// does, into outDir, and returns the archive's path
// (sovereign-<chart version>.tgz). Unlike helm, which stamps each file
// with the time of packaging, every file carries the time epoch, so that
// the same sources give the same bytes and a release's checksums can be
// reproduced. An empty appVersion keeps Chart.yaml's.
func Package(chartDir, outDir, appVersion string, epoch time.Time) (string, error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return "", err
	}
	if appVersion != "" {
		ch.Metadata.AppVersion = appVersion
	}
	tmp, err := os.MkdirTemp(outDir, ".chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// Helm's own writer decides the archive's layout and contents.
	saved, err := chartutil.Save(ch, tmp)
	if err != nil {
		return "", err
	}
	out := filepath.Join(outDir, filepath.Base(saved))
	if err := restamp(saved, out, epoch); err != nil {
		return "", err
	}
	return out, nil
}

// restamp copies the archive src to dst with every entry's time set to
// epoch, keeping helm's gzip header (its extra field and comment).
func restamp(src, dst string, epoch time.Time) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	zw.Header.Extra = zr.Header.Extra
	zw.Header.Comment = zr.Header.Comment
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return err
		}
		h.ModTime = epoch.UTC()
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		h.Format = tar.FormatUSTAR
		if err := tw.WriteHeader(h); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			f.Close()
			return err
		}
	}
	for _, c := range []io.Closer{tw, zw, f} {
		if err := c.Close(); err != nil {
			return err
		}
	}
	return nil
}
