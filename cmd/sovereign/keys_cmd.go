package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

const keysUsage = `usage:
  sovereign keys create [--name NAME] [--team TEAM] [--scopes s1,s2] [--expires-in DURATION]
  sovereign keys list [--team TEAM]
  sovereign keys revoke ID
  sovereign keys rotate ID [--grace DURATION]

TEAM is a team id or name (a new name creates the team; default "default").
Scopes: inference, models:read, models:write, keys:read, records:read, workflows, approvals, webhooks, console, admin (default inference,models:read).
The database comes from SOVEREIGN_DATABASE_URL / SOVEREIGN_DATA_DIR / --config,
as for ` + "`sovereign serve`" + `, or --database-url.
`

// keysCommand implements `sovereign keys …` directly on the database.
func keysCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, rest, fs, dbf, err := onDatabase("keys", keysUsage, "create, list, revoke, rotate", args, stderr)
	if sub == "" {
		return err
	}
	name := fs.String("name", "", "key name")
	team := fs.String("team", auth.BootstrapTeam, "team id or name")
	scopes := fs.String("scopes", "inference,models:read", "comma-separated scopes")
	expires := fs.Duration("expires-in", 0, "lifetime, e.g. 720h (0: never expires)")
	grace := fs.Duration("grace", 24*time.Hour, "how long the old key keeps working after rotate")
	pos, err := parseInterspersed(fs, rest)
	if err != nil {
		return helpOK(err)
	}
	cfg, err := loadConfig(*dbf.config, *dbf.url, stderr)
	if err != nil {
		return err
	}
	db, keys, err := openKeys(ctx, cfg, newLogger("warn", stderr))
	if err != nil {
		return err
	}
	defer db.Close()
	needID := func() (string, error) {
		if len(pos) != 1 {
			return "", fmt.Errorf("keys %s: want exactly one key id", sub)
		}
		return pos[0], nil
	}
	switch sub {
	case "create":
		sc, err := auth.ParseScopes(*scopes)
		if err != nil {
			return err
		}
		t, err := resolveTeam(ctx, keys, *team, stdout)
		if err != nil {
			return err
		}
		p := auth.CreateKeyParams{Name: *name, TeamID: t.ID, Scopes: sc}
		if *expires > 0 {
			at := time.Now().Add(*expires)
			p.ExpiresAt = &at
		}
		k, secret, err := keys.CreateKey(ctx, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Created key %s (team %s, scopes %s).\nSecret (shown once; store it now):\n\n    %s\n", k.ID, t.Name, auth.JoinScopes(k.Scopes), secret)
	case "list":
		teamID := ""
		if *team != auth.BootstrapTeam || fsSet(fs, "team") {
			t, err := findTeam(ctx, keys, *team)
			if err != nil {
				return err
			}
			teamID = t.ID
		}
		list, err := keys.ListKeys(ctx, teamID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tTEAM\tSCOPES\tCREATED\tEXPIRES\tLAST USED\tSTATUS")
		now := time.Now()
		for _, k := range list {
			status := "active"
			switch {
			case k.RevokedAt != nil:
				status = "revoked"
			case !k.Active(now):
				status = "expired"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, orDash(k.Name), k.Prefix, k.TeamID, auth.JoinScopes(k.Scopes),
				k.CreatedAt.Format(time.RFC3339), timeOrDash(k.ExpiresAt), timeOrDash(k.LastUsedAt), status)
		}
		return tw.Flush()
	case "revoke":
		id, err := needID()
		if err != nil {
			return err
		}
		if _, err := keys.Revoke(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Revoked %s. Requests with it now get 401.\n", id)
	case "rotate":
		id, err := needID()
		if err != nil {
			return err
		}
		g := *grace
		if g == 0 {
			g = -1 // --grace 0 ends the old key at once (the service's 0 is its default)
		}
		k, secret, err := keys.Rotate(ctx, id, g)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Rotated %s into %s; the old key works for %s more.\nNew secret (shown once; store it now):\n\n    %s\n", id, k.ID, *grace, secret)
	default:
		fmt.Fprint(stderr, keysUsage)
		return fmt.Errorf("keys: unknown subcommand %q", sub)
	}
	return nil
}

func fsSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func findTeam(ctx context.Context, keys *auth.Service, ref string) (auth.Team, error) {
	if strings.HasPrefix(ref, "team_") {
		if t, err := keys.GetTeam(ctx, ref); err == nil {
			return t, nil
		}
	}
	return keys.TeamByName(ctx, ref)
}

// resolveTeam finds the team by id or name, creating a new name.
func resolveTeam(ctx context.Context, keys *auth.Service, ref string, out io.Writer) (auth.Team, error) {
	t, err := findTeam(ctx, keys, ref)
	if errors.Is(err, auth.ErrNotFound) && !strings.HasPrefix(ref, "team_") {
		t, err = keys.CreateTeam(ctx, ref)
		if err == nil {
			fmt.Fprintf(out, "Created team %s (%s).\n", t.Name, t.ID)
		}
	}
	return t, err
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// dbFlags are the flags every command that works directly on the
// database has: where the database is.
type dbFlags struct{ url, config *string }

// onDatabase starts `sovereign NAME SUB …` for a command working directly
// on the database: help (sub is "" with what to return), or the
// subcommand, its arguments, and a flag set with the database flags on,
// for the subcommand's own flags.
func onDatabase(name, usage, subs string, args []string, stderr io.Writer) (sub string, rest []string, fs *flag.FlagSet, db dbFlags, err error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			err = fmt.Errorf("%s: missing subcommand (%s)", name, subs)
		}
		return "", nil, nil, db, err
	}
	fs = flag.NewFlagSet("sovereign "+name+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	db.url = fs.String("database-url", "", "database URL (default from the server configuration)")
	db.config = fs.String("config", os.Getenv("SOVEREIGN_CONFIG"), "YAML configuration file")
	return args[0], args[1:], fs, db, nil
}
