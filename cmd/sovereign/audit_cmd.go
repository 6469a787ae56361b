package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/store"
)

const auditUsage = `usage:
  sovereign audit verify [--strict] [--database-url URL] [--config FILE]

verify walks the request log's hash chain from its first record and names
the first record that was changed or removed. It exits 1 when the chain
breaks. It also lists the gaps the servers declared in the chain: records
they knew they lost (a full buffer; a full spool, in drop mode), each
marked by a gap marker with the count, the time span and the server. An
intact chain with gaps exits 0 (the log is what it claims to be, and says
what it misses); --strict exits 1 on any gap too. The database comes from
SOVEREIGN_DATABASE_URL / SOVEREIGN_DATA_DIR / --config, as for
` + "`sovereign serve`" + `, or --database-url.
`

// auditCommand implements `sovereign audit …` on the database.
func auditCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprint(stderr, auditUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return fmt.Errorf("audit: want the subcommand verify")
	}
	fs := flag.NewFlagSet("sovereign audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, auditUsage) }
	dbURL := fs.String("database-url", "", "database URL (default from the server configuration)")
	configPath := fs.String("config", os.Getenv("SOVEREIGN_CONFIG"), "YAML configuration file")
	strict := fs.Bool("strict", false, "exit 1 when the chain declares lost records, not only when it breaks")
	if err := fs.Parse(args[1:]); err != nil {
		return helpOK(err)
	}
	cfg, err := loadConfig(*configPath, *dbURL, stderr)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("opening the database %s: %w", store.Redact(cfg.DatabaseURL), err)
	}
	defer db.Close()
	fmt.Fprintf(stdout, "Verifying the request log in %s …\n", store.Redact(cfg.DatabaseURL))
	if a, err := db.Anchor(ctx); err == nil && a.Seq > 0 {
		fmt.Fprintf(stdout, "Retention removed %d records; the chain goes on from record %d (hash %.16s…).\n", a.Purged, a.Seq, a.Hash)
	}
	rep, err := records.VerifyReport(ctx, db)
	if err != nil {
		return err
	}
	n, br := rep.Records, rep.Break
	printGaps(stdout, rep)
	if br != nil {
		fmt.Fprintf(stdout, "BROKEN after %d good records: record %d (request %s): %s\n", n, br.Seq, br.ID, br.Reason)
		return fmt.Errorf("audit verify: %w", br)
	}
	// A chain rewritten consistently (every hash recomputed) still
	// verifies; the checkpoints taken before do not.
	verified, overtaken, cbr, err := records.VerifyCheckpoints(ctx, db, 1000)
	if err != nil {
		return err
	}
	if cbr != nil {
		fmt.Fprintf(stdout, "BROKEN: %d records chain, but %s\n", n, cbr.Error())
		return fmt.Errorf("audit verify: %w", cbr)
	}
	size, root, err := records.Checkpoint(ctx, db)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "OK: %d records, every hash matches its record and its predecessor.\n", n)
	if rep.GapCount > 0 {
		fmt.Fprintf(stdout, "Chain intact, %d records known lost in %d gaps (listed above; their markers are records of the chain).\n", rep.Lost, rep.GapCount)
	}
	fmt.Fprintf(stdout, "Stored checkpoints: %d recomputed and matching", verified)
	if overtaken > 0 {
		fmt.Fprintf(stdout, ", %d older than what retention kept", overtaken)
	}
	fmt.Fprintf(stdout, ".\nMerkle root (RFC 6962) of the %d records: %s\n"+
		"Keep it: GET /v1/logs/{id}/proof proves a record's inclusion against it.\n", size, root)
	if *strict && rep.GapCount > 0 {
		return fmt.Errorf("audit verify --strict: %d records known lost in %d gaps", rep.Lost, rep.GapCount)
	}
	return nil
}

// printGaps lists the gap markers the verified part of the chain holds:
// what the servers knew they lost, where, when and why.
func printGaps(w io.Writer, rep records.Report) {
	if rep.GapCount == 0 {
		return
	}
	fmt.Fprintf(w, "Gaps: the servers declared %d lost records in %d gap markers:\n", rep.Lost, rep.GapCount)
	for _, g := range rep.Gaps {
		if g.Unreadable {
			fmt.Fprintf(w, "  record %d (%s): a gap marker whose details do not parse (replica %q)\n", g.Seq, g.ID, g.Replica)
			continue
		}
		reasons := make([]string, 0, len(g.Reasons))
		for r, c := range g.Reasons {
			reasons = append(reasons, fmt.Sprintf("%s %d", r, c))
		}
		slices.Sort(reasons)
		fmt.Fprintf(w, "  record %d (%s): %d lost on replica %q, calls started %s – %s (%s)\n", g.Seq, g.ID, g.Lost, g.Replica,
			g.First.UTC().Format(time.RFC3339Nano), g.Last.UTC().Format(time.RFC3339Nano), strings.Join(reasons, ", "))
	}
	if more := rep.GapCount - len(rep.Gaps); more > 0 {
		fmt.Fprintf(w, "  … and %d more (GET /v1/logs?route=%s lists them)\n", more, records.GapRoute)
	}
}

// loadConfig loads the server configuration for a command that acts on
// the database (audit, keys, migrate): the file its --config names (or
// SOVEREIGN_CONFIG), the environment, and its --database-url over both.
func loadConfig(configPath, dbURL string, stderr io.Writer) (config.Config, error) {
	var cfgArgs []string
	if configPath != "" {
		cfgArgs = append(cfgArgs, "--config", configPath)
	}
	cfg, err := config.Load(cfgArgs, os.Getenv, stderr)
	if err != nil {
		return cfg, err
	}
	if dbURL != "" {
		cfg.DatabaseURL = dbURL
	}
	return cfg, nil
}
