package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/store"
)

const migrateUsage = `usage:
  sovereign migrate [--database-url URL] [--config FILE] [--wait 2m] [--check]

migrate brings the database schema up to date and exits: the application's
tables (its embedded migrations) and the durable engine's (DBOS's system
tables), printing each schema's version before and after. It waits up to
--wait for the database to answer, saying so every few seconds, and fails
when it does not. --check applies nothing and exits 1 when migrations are
pending (or when the database was contracted past this release).

Run it once per upgrade, before the new release's servers start (the Helm
chart's pre-install,pre-upgrade hook Job runs it), and start the servers
with migrate_on_start false; docs/upgrading.md is the procedure. The
database comes from SOVEREIGN_DATABASE_URL / SOVEREIGN_DATA_DIR / --config,
as for ` + "`sovereign serve`" + `, or --database-url.
`

// errPending is --check's failure: migrations are pending.
var errPending = errors.New("migrations are pending: run `sovereign migrate`")

// migrateCommand implements `sovereign migrate`.
func migrateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sovereign migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage) }
	dbURL := fs.String("database-url", "", "database URL (default from the server configuration)")
	configPath := fs.String("config", os.Getenv("SOVEREIGN_CONFIG"), "YAML configuration file")
	check := fs.Bool("check", false, "apply nothing; exit 1 when migrations are pending")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the database to answer")
	if err := fs.Parse(args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("migrate: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadConfig(*configPath, *dbURL, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	where := store.Redact(cfg.DatabaseURL)
	fmt.Fprintf(stdout, "Database: %s\n", where)
	db, err := openWaiting(ctx, cfg.DatabaseURL, *wait, stdout)
	if err != nil {
		return err
	}
	defer db.Close()
	durableURL := cfg.DatabaseURL
	if kind, _ := store.Kind(durableURL); kind == "sqlite" {
		durableURL = store.SQLitePath(durableURL)
	}

	app, err := db.Schema(ctx)
	if err != nil {
		return fmt.Errorf("migrate: reading the application schema: %w", err)
	}
	eng, err := durable.ReadSchema(ctx, durableURL, "")
	if err != nil {
		return fmt.Errorf("migrate: reading the durable engine's schema: %w", err)
	}
	fmt.Fprintf(stdout, "Application schema:    %s\n", app)
	fmt.Fprintf(stdout, "Durable engine schema: %s\n", eng)
	// A database a newer release contracted past this one: migrating
	// changes nothing, and serving would fail; say so whatever the mode.
	if err := app.Serveable(); err != nil && !app.Behind() {
		return fmt.Errorf("migrate: %w", err)
	}
	if *check {
		if app.Behind() || eng.Behind() {
			return fmt.Errorf("migrate --check: %w", errPending)
		}
		fmt.Fprintln(stdout, "Up to date: nothing to migrate.")
		return nil
	}
	if !app.Behind() && !eng.Behind() {
		fmt.Fprintf(stdout, "Up to date: nothing to migrate (%s).\n", time.Since(start).Round(time.Millisecond))
		return nil
	}
	fmt.Fprintln(stdout, "Migrating the application schema …")
	if err := db.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: the application schema: %w", err)
	}
	fmt.Fprintln(stdout, "Migrating the durable engine's schema …")
	if err := durable.Migrate(ctx, durableURL, "", newLogger("warn", stderr)); err != nil {
		return fmt.Errorf("migrate: the durable engine's schema: %w", err)
	}
	if app, err = db.Schema(ctx); err != nil {
		return fmt.Errorf("migrate: reading the application schema: %w", err)
	}
	if eng, err = durable.ReadSchema(ctx, durableURL, ""); err != nil {
		return fmt.Errorf("migrate: reading the durable engine's schema: %w", err)
	}
	fmt.Fprintf(stdout, "Application schema:    %s\n", app)
	fmt.Fprintf(stdout, "Durable engine schema: %s\n", eng)
	if app.Behind() || eng.Behind() {
		return fmt.Errorf("migrate: migrations still pending after migrating (another process changing the schema?)")
	}
	fmt.Fprintf(stdout, "Migrated in %s.\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// openWaiting opens the database without migrating it, retrying for up
// to wait while it does not answer (a database starting next to the
// migration Job), with a line on out at every retry so that a Job's log
// shows what it waits for.
func openWaiting(ctx context.Context, url string, wait time.Duration, out io.Writer) (store.Migrator, error) {
	deadline := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithDeadline(ctx, deadline)
		db, err := store.OpenNoMigrate(actx, url)
		cancel()
		if err == nil {
			return db, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("migrate: interrupted while waiting for the database: %w", err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("migrate: the database %s did not answer within %s (%d attempts): %w", store.Redact(url), wait, attempt, err)
		}
		fmt.Fprintf(out, "Waiting for the database (attempt %d, %s left): %s\n", attempt, left.Round(time.Second),
			strings.Join(strings.Fields(err.Error()), " "))
		select {
		case <-ctx.Done():
		case <-time.After(min(2*time.Second, left)):
		}
	}
}
