// Command imagebuild assembles Sovereign's OCI image from bin/sovereign (and
// its libraries in lib/sovereign, for the default portable build: the image
// has them in /usr/lib/sovereign) and Debian's packages, with no container
// daemon and no base image, and writes
// an OCI archive that `podman load` reads plus a CycloneDX SBOM. `make image`
// runs it; docs/image.md explains the image.
//
//	go run ./cmd/imagebuild [flags]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/imagebuild"
	"github.com/sovereign-ai/sovereign/internal/models"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run() error {
	var defaultModels []string
	for _, d := range models.Defaults {
		defaultModels = append(defaultModels, d.ID)
	}
	home, _ := os.UserCacheDir()
	var (
		bin       = flag.String("bin", "bin/sovereign", "the sovereign binary (a portable build's libraries are taken from ../lib/sovereign beside it)")
		version   = flag.String("version", "", "image version and tag (default: git describe --always --dirty)")
		revision  = flag.String("revision", "", "git commit (default: git rev-parse HEAD)")
		epochS    = flag.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "mtimes and created time, Unix seconds (default: $SOURCE_DATE_EPOCH, else the last commit's time)")
		source    = flag.String("source", "https://github.com/sovereign-ai/sovereign", "org.opencontainers.image.source")
		licenses  = flag.String("licenses", "NOASSERTION", "org.opencontainers.image.licenses (SPDX expression)")
		cache     = flag.String("debs-cache", filepath.Join(home, "sovereign", "debs"), "where apt-get download puts the .deb files")
		debsDir   = flag.String("debs-dir", "", "take the .deb files from this directory instead of apt (offline builds)")
		modelsDir = flag.String("models-dir", "data/models", "installed models (make models)")
		modelList = flag.String("models", strings.Join(defaultModels, ","), `models baked into the "-models" tag ("" or "none": no such tag)`)
		out       = flag.String("out", "dist/sovereign-image.tar", "the OCI archive of the image (tag sovereign:VERSION)")
		modelsOut = flag.String("models-out", "dist/sovereign-image-models.tar", "the OCI archive of the image with the models (tag sovereign:VERSION-models)")
		sbomOut   = flag.String("sbom", "dist/sovereign-image.cdx.json", "the CycloneDX SBOM")
		llama     = flag.String("llama-cpp-version", "", "llama.cpp source version linked in (default: from scripts/llama-cpp.sh)")
	)
	flag.Parse()
	ctx := context.Background()
	start := time.Now()

	if *version == "" {
		*version = git("describe", "--always", "--dirty")
		if *version == "" {
			*version = "dev"
		}
	}
	*version = strings.TrimPrefix(*version, "sovereign ")
	if *revision == "" {
		*revision = git("rev-parse", "HEAD")
	}
	if *epochS == "" {
		*epochS = git("log", "-1", "--format=%ct")
	}
	sec, err := strconv.ParseInt(*epochS, 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", *epochS, err)
	}
	epoch := time.Unix(sec, 0).UTC()
	if *llama == "" {
		if b, err := os.ReadFile("scripts/llama-cpp.sh"); err == nil {
			if m := regexp.MustCompile(`(?m)^LLAMA_PKG_VERSION=(\S+)`).FindSubmatch(b); m != nil {
				*llama = string(m[1])
			}
		}
	}
	var ids []string
	if *modelList != "" && *modelList != "none" {
		ids = strings.Split(*modelList, ",")
	}

	names := append([]string(nil), imagebuild.BasePackages...)
	needed, err := imagebuild.NeededPackages(ctx, *bin)
	if err != nil {
		return err
	}
	names = append(names, needed...)
	var debs []imagebuild.Deb
	if *debsDir != "" {
		debs, err = imagebuild.DebsFromDir(ctx, *debsDir, names)
	} else {
		debs, err = imagebuild.FetchDebs(ctx, names, *cache, os.Stderr)
	}
	if err != nil {
		return err
	}
	tDebs := time.Since(start)

	res, err := imagebuild.Build(ctx, imagebuild.Options{
		Binary: *bin, Debs: debs, Epoch: epoch, Name: "sovereign", Version: *version, Revision: *revision,
		SourceURL: *source, Licenses: *licenses, ModelsDir: *modelsDir, Models: ids,
	})
	if err != nil {
		return err
	}
	tBuild := time.Since(start) - tDebs
	// One image per archive: podman (4.3) loads no OCI archive that holds
	// two. The models archive holds the base layers too; loaded, they are
	// stored once.
	if err := imagebuild.WriteArchive(*out, []imagebuild.Image{res.Base}, epoch); err != nil {
		return err
	}
	if res.Models != nil {
		if err := imagebuild.WriteArchive(*modelsOut, []imagebuild.Image{*res.Models}, epoch); err != nil {
			return err
		}
	}
	tWrite := time.Since(start) - tDebs - tBuild
	sbom, err := res.SBOM(imagebuild.SBOMOptions{LlamaCppVersion: *llama})
	if err != nil {
		return err
	}
	if err := os.WriteFile(*sbomOut, append(sbom, '\n'), 0o644); err != nil {
		return err
	}
	for _, im := range res.Images() {
		fmt.Printf("%s\t%s\n", im.Tag, im.Digest)
	}
	if len(res.Libs) > 0 {
		fmt.Fprintf(os.Stderr, "%s with %d libraries in %s (portable build)\n", imagebuild.BinPath, len(res.Libs), imagebuild.LibDir)
	}
	fmt.Fprintf(os.Stderr, "wrote %s", *out)
	if res.Models != nil {
		fmt.Fprintf(os.Stderr, ", %s", *modelsOut)
	}
	fmt.Fprintf(os.Stderr, " and %s; SOURCE_DATE_EPOCH=%d; packages %.1fs, layers %.1fs, archives %.1fs\n",
		*sbomOut, sec, tDebs.Seconds(), tBuild.Seconds(), tWrite.Seconds())
	return nil
}

func git(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
