package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sovereign-ai/sovereign/internal/bundle"
	"github.com/sovereign-ai/sovereign/internal/models"
)

const bundleUsage = `usage:
  sovereign bundle keygen --out KEY [--force]
        write an ed25519 key pair: KEY (private, PEM PKCS #8, mode 0600) and KEY.pub (PEM)
  sovereign bundle create --out FILE.tar --key KEY [--models default|none|ID,ID...] [--models-dir DIR]
        [--binary PATH]
        write a signed offline bundle: this binary (or --binary) and, for the portable build,
        its libraries (../lib/sovereign beside it), the models (default: the default models,
        which must be installed: sovereign models pull --defaults), checksums, a CycloneDX
        SBOM and a manifest
  sovereign bundle verify FILE.tar --pub KEY.pub
        check a bundle's signature and every checksum, and list what it holds
  sovereign bundle install FILE.tar --pub KEY.pub [--prefix DIR] [--bin-dir DIR] [--models-dir DIR]
        [--any-platform]
        verify and install: the binary to PREFIX/bin (its libraries to lib/sovereign beside
        that bin directory), the models to PREFIX/data/models, the SBOM to
        PREFIX/share/sovereign (PREFIX defaults to /opt/sovereign); nothing is put in place
        unless the whole bundle verifies

FILE.tar may be - for standard input (verify, install) or output (create).
verify and install use no network. See docs/bundle.md.
`

// defaultPrefix is where `bundle install` puts Sovereign: the Filesystem
// Hierarchy Standard's place for a self-contained add-on package, where a
// vendor's offline installer (NVIDIA NIM's, for one) puts theirs too.
const defaultPrefix = "/opt/sovereign"

// bundleCommand runs `sovereign bundle SUBCOMMAND …`.
func bundleCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, bundleUsage)
		return errors.New("bundle: missing subcommand (keygen, create, verify, install)")
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("sovereign bundle "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, bundleUsage) }
	switch sub {
	case "keygen":
		out := fs.String("out", "", "private key file to write (the public key goes to FILE.pub)")
		force := fs.Bool("force", false, "replace existing key files")
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		if *out == "" || len(pos) != 0 {
			return errors.New("bundle keygen: want --out KEY and nothing else")
		}
		pub, err := bundle.GenerateKey(*out, *force)
		if err != nil {
			return fmt.Errorf("bundle %w", err)
		}
		fmt.Fprintf(stdout, "wrote the private key %s (keep it secret: whoever has it can sign bundles)\n", *out)
		fmt.Fprintf(stdout, "wrote the public key  %s (give it to the air-gapped site by a separate channel)\n", *out+".pub")
		fmt.Fprintf(stdout, "key id %s\n", bundle.KeyID(pub))
		return nil

	case "create":
		out := fs.String("out", "", "bundle file to write (- for standard output)")
		keyPath := fs.String("key", "", "private key to sign with (from `sovereign bundle keygen`)")
		list := fs.String("models", "default", "models to carry: default, none, or ids separated by commas")
		modelsDir := fs.String("models-dir", "", "models directory (default $SOVEREIGN_MODELS_DIR, else $SOVEREIGN_DATA_DIR/models)")
		binary := fs.String("binary", "", "binary to carry, with its libraries in ../lib/sovereign if it is a portable build (default: this one)")
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		if *out == "" || *keyPath == "" || len(pos) != 0 {
			return errors.New("bundle create: want --out FILE.tar and --key KEY")
		}
		return bundleCreate(*out, *keyPath, *list, *modelsDir, *binary, stdout, stderr)

	case "verify", "install":
		pubPath := fs.String("pub", "", "public key of the bundle's signer (KEY.pub)")
		prefix := fs.String("prefix", defaultPrefix, "install prefix (install)")
		binDir := fs.String("bin-dir", "", "where the binary goes (install; default PREFIX/bin; its libraries go to lib/sovereign beside it, where it looks for them)")
		modelsDir := fs.String("models-dir", "", "where the models go (install; default PREFIX/data/models)")
		anyPlatform := fs.Bool("any-platform", false, "install a binary made for another OS or CPU (install)")
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		if len(pos) != 1 || *pubPath == "" {
			return fmt.Errorf("bundle %s: want FILE.tar and --pub KEY.pub", sub)
		}
		pub, err := bundle.LoadPublicKey(*pubPath)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", sub, err)
		}
		in, closeIn, err := openInput(pos[0], stdin)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", sub, err)
		}
		defer closeIn()
		if sub == "verify" {
			c, err := bundle.Read(in, pub, bundle.ReadOptions{Progress: stderr})
			if err != nil {
				return refusedErr(sub, pos[0], err)
			}
			fmt.Fprintf(stdout, "%s: OK: signed by %s; every member verified\n\n", pos[0], c.KeyID)
			printContents(stdout, c)
			return nil
		}
		p, err := filepath.Abs(*prefix)
		if err != nil {
			return fmt.Errorf("bundle install: %w", err)
		}
		opts := bundle.InstallOptions{
			BinDir: *binDir, ModelsDir: *modelsDir, ShareDir: filepath.Join(p, "share", "sovereign"),
			AnyPlatform: *anyPlatform, Progress: stderr,
		}
		if opts.BinDir == "" {
			opts.BinDir = filepath.Join(p, "bin")
		}
		if opts.ModelsDir == "" {
			opts.ModelsDir = filepath.Join(p, "data", "models")
		}
		res, err := bundle.Install(in, pub, opts)
		if err != nil {
			return refusedErr(sub, pos[0], err)
		}
		fmt.Fprintf(stdout, "%s: OK: signed by %s; every member verified\n\n", pos[0], res.Contents.KeyID)
		printContents(stdout, res.Contents)
		printInstalled(stdout, opts, res)
		return nil

	case "help", "-h", "--help":
		fmt.Fprint(stdout, bundleUsage)
		return nil
	}
	fmt.Fprint(stderr, bundleUsage)
	return fmt.Errorf("bundle: unknown subcommand %q (want keygen, create, verify or install)", sub)
}

// bundleCreate writes the bundle to a temporary file beside out and renames
// it into place, so a failed or interrupted create never leaves a file
// named like a bundle that does not verify.
func bundleCreate(out, keyPath, list, modelsDir, binary string, stdout, stderr io.Writer) error {
	key, err := bundle.LoadPrivateKey(keyPath)
	if err != nil {
		return fmt.Errorf("bundle create: %w", err)
	}
	if binary == "" {
		// os.Executable is /proc/self/exe's target: the real file, whose
		// ../lib/sovereign is where this binary loaded its libraries
		// from, as the loader resolves $ORIGIN (bundle.Create finds them).
		if binary, err = os.Executable(); err != nil {
			return fmt.Errorf("bundle create: finding this binary: %w", err)
		}
	}
	store, err := models.Open(resolveModelsDir(modelsDir))
	if err != nil {
		return fmt.Errorf("bundle create: %w", err)
	}
	ids, err := bundleModels(list, store)
	if err != nil {
		return err
	}
	opts := bundle.CreateOptions{BinaryPath: binary, Version: version, Store: store, Models: ids, Key: key, Progress: stderr}
	if out == "-" {
		c, err := bundle.Create(os.Stdout, opts)
		if err != nil {
			return fmt.Errorf("bundle %w", err)
		}
		fmt.Fprintf(stderr, "wrote a bundle of %s to standard output, signed by %s\n", models.FormatBytes(c.Size), c.KeyID)
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-*")
	if err != nil {
		return fmt.Errorf("bundle create: %w", err)
	}
	defer os.Remove(f.Name())
	c, err := bundle.Create(f, opts)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), out)
	}
	if err != nil {
		return fmt.Errorf("bundle %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s (%s), signed by %s\n\n", out, models.FormatBytes(c.Size), c.KeyID)
	printContents(stdout, &bundle.Contents{Manifest: c.Manifest, KeyID: c.KeyID})
	fmt.Fprintf(stdout, "\nCarry %s and the public key to the air-gapped machine, then run there:\n"+
		"  sovereign bundle install %s --pub KEY.pub --prefix %s\n", filepath.Base(out), filepath.Base(out), defaultPrefix)
	return nil
}

// bundleModels resolves --models: "default" (the models `make run` and
// `models pull --defaults` fetch), "none", or ids; each must be installed.
func bundleModels(list string, store *models.Store) ([]string, error) {
	var ids []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		switch s {
		case "", "none":
		case "default", "defaults":
			for _, d := range models.Defaults {
				ids = append(ids, d.ID)
			}
		default:
			ids = append(ids, s)
		}
	}
	var missing []string
	for _, id := range ids {
		if _, err := store.Get(id); err != nil {
			if errors.Is(err, models.ErrNotFound) {
				missing = append(missing, id)
				continue
			}
			return nil, fmt.Errorf("bundle create: %w", err)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("bundle create: not in the models store %s: %s (pull them first: sovereign models pull %s)",
			store.Dir(), strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	return slices.Compact(ids), nil
}

// openInput opens FILE, or standard input for "-".
func openInput(name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// refusedErr words a verification failure for a person: tampering and
// corruption are said as such, apart from I/O errors.
func refusedErr(sub, file string, err error) error {
	if errors.Is(err, bundle.ErrRefused) {
		tail := ""
		if sub == "install" {
			tail = "; nothing was installed"
		}
		return fmt.Errorf("bundle %s: %s is NOT a valid bundle signed by this key%s.\n%w", sub, file, tail, err)
	}
	return fmt.Errorf("bundle %s: %s: %w", sub, file, err)
}

// printContents lists what a bundle holds.
func printContents(w io.Writer, c *bundle.Contents) {
	m := c.Manifest
	fmt.Fprintf(w, "bundle format %d, sovereign %s for %s, created %s\n", m.FormatVersion, m.SovereignVersion, m.Platform, m.Created.Format("2006-01-02 15:04:05 UTC"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tTYPE\tSIZE\tSHA256")
	for _, mem := range m.Members {
		sum := mem.SHA256
		if len(sum) > 16 {
			sum = sum[:16] + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mem.Path, mem.Type, models.FormatBytes(mem.Size), orDash(sum))
	}
	tw.Flush()
	for _, id := range m.Models() {
		if mm, ok := c.ModelManifests[id]; ok {
			fmt.Fprintf(w, "model %s: %s, %s", id, orDash(mm.Family), strings.Join(mm.Capabilities, "+"))
			if len(mm.Aliases) > 0 {
				fmt.Fprintf(w, ", aliases %s", strings.Join(mm.Aliases, ", "))
			}
			fmt.Fprintln(w)
		}
	}
}

// printInstalled says where things went and how to start the server.
func printInstalled(w io.Writer, opts bundle.InstallOptions, res *bundle.Installed) {
	fmt.Fprintf(w, "\ninstalled:\n  binary     %s\n", res.Binary)
	if res.LibDir != "" {
		fmt.Fprintf(w, "  libraries  %s (%d: llama.cpp and its CPU kernels, chosen at start for this CPU)\n", res.LibDir, len(res.Libraries))
	}
	for _, d := range res.Models {
		fmt.Fprintf(w, "  model      %s\n", d)
	}
	fmt.Fprintf(w, "  SBOM       %s\n", res.SBOM)
	dataDir := filepath.Dir(opts.ModelsDir)
	env := "SOVEREIGN_DATA_DIR=" + dataDir
	if filepath.Base(opts.ModelsDir) != "models" {
		env += " SOVEREIGN_MODELS_DIR=" + opts.ModelsDir
	}
	fmt.Fprintf(w, "\nNext: start the server (it needs no network):\n  %s %s serve\n", env, res.Binary)
	fmt.Fprintf(w, "It listens on 127.0.0.1:8080 and prints an admin API key on its first start. To listen on\n"+
		"other addresses, add SOVEREIGN_ADDR=0.0.0.0:8080 with SOVEREIGN_TLS_CERT and SOVEREIGN_TLS_KEY\n"+
		"(see `%s serve --help`).\n", res.Binary)
}
