package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

const usersUsage = `usage:
  sovereign users create --email EMAIL [--name NAME] [--team TEAM] [--role ROLE] [--instance-admin] [--password-stdin]
  sovereign users list [--team TEAM]
  sovereign users password EMAIL [--password-stdin]
  sovereign users deactivate EMAIL
  sovereign users activate EMAIL

People who sign in to the web console (docs/users.md). TEAM is a team id or
name (a new name creates the team; default "default"); ROLE is viewer,
developer, admin or owner (default developer; owner with --instance-admin). --instance-admin gives the
admin scope over every team. Without --password-stdin a password is made up
and printed once. The database comes from SOVEREIGN_DATABASE_URL /
SOVEREIGN_DATA_DIR / --config, as for ` + "`sovereign serve`" + `, or --database-url.
`

// usersCommand implements `sovereign users …` directly on the database.
func usersCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	sub, rest, fs, dbf, err := onDatabase("users", usersUsage, "create, list, password, deactivate, activate", args, stderr)
	if sub == "" {
		return err
	}
	email := fs.String("email", "", "e-mail address (create)")
	name := fs.String("name", "", "display name (create)")
	team := fs.String("team", auth.BootstrapTeam, "team id or name")
	role := fs.String("role", string(auth.RoleDeveloper), "role in the team: viewer, developer, admin or owner")
	instanceAdmin := fs.Bool("instance-admin", false, "administrator of every team (the admin scope)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	pos, err := parseInterspersed(fs, rest)
	if err != nil {
		return helpOK(err)
	}
	cfg, err := loadConfig(*dbf.config, *dbf.url, stderr)
	if err != nil {
		return err
	}
	db, svc, err := openKeys(ctx, cfg, newLogger("warn", stderr))
	if err != nil {
		return err
	}
	defer db.Close()
	password := func() (string, bool, error) {
		if !*fromStdin {
			return newPassword(), true, nil
		}
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", false, err
		}
		return strings.TrimRight(line, "\r\n"), false, nil
	}
	byEmail := func() (auth.User, error) {
		if len(pos) != 1 {
			return auth.User{}, fmt.Errorf("users %s: want exactly one e-mail address", sub)
		}
		e, err := auth.NormalizeEmail("email", pos[0])
		if err != nil {
			return auth.User{}, err
		}
		return db.GetUserByEmail(ctx, e)
	}
	switch sub {
	case "create":
		if *instanceAdmin && !fsSet(fs, "role") {
			*role = string(auth.RoleOwner) // the deployment's administrator owns its first team
		}
		r, err := auth.ParseRole("role", *role)
		if err != nil {
			return err
		}
		t, err := resolveTeam(ctx, svc, *team, stdout)
		if err != nil {
			return err
		}
		pw, made, err := password()
		if err != nil {
			return err
		}
		u, err := svc.CreateUser(ctx, auth.CreateUserParams{Email: *email, Name: *name, Password: pw, InstanceAdmin: *instanceAdmin,
			Memberships: []auth.Membership{{TeamID: t.ID, Role: r, Source: "cli"}}})
		if err != nil {
			return err
		}
		admin := ""
		if u.InstanceAdmin {
			admin = ", instance administrator"
		}
		fmt.Fprintf(stdout, "Created user %s (%s): %s in team %s%s.\n", u.ID, u.Email, r, t.Name, admin)
		if made {
			fmt.Fprintf(stdout, "Password (shown once; sign in at /console/ and keep it somewhere safe):\n\n    %s\n", pw)
		}
	case "list":
		teamID := ""
		if fsSet(fs, "team") {
			t, err := findTeam(ctx, svc, *team)
			if err != nil {
				return err
			}
			teamID = t.ID
		}
		us, err := svc.ListUsers(ctx, teamID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tE-MAIL\tNAME\tTEAMS\tSTATUS\tLAST SIGN-IN")
		for _, u := range us {
			ms, err := svc.Memberships(ctx, u.ID)
			if err != nil {
				return err
			}
			var teams []string
			for _, m := range ms {
				t, err := svc.GetTeam(ctx, m.TeamID)
				if err != nil {
					return err
				}
				teams = append(teams, t.Name+" ("+string(m.Role)+")")
			}
			if u.InstanceAdmin {
				teams = append(teams, "instance admin")
			}
			status := "active"
			if !u.Active {
				status = "deactivated"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Email, orDash(u.Name), orDash(strings.Join(teams, ", ")), status, timeOrDash(u.LastLoginAt))
		}
		return tw.Flush()
	case "password":
		u, err := byEmail()
		if err != nil {
			return err
		}
		pw, made, err := password()
		if err != nil {
			return err
		}
		if _, err := svc.UpdateUser(ctx, u.ID, auth.UpdateUserParams{Password: &pw}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Set a new password for %s (the account is unlocked).\n", u.Email)
		if made {
			fmt.Fprintf(stdout, "Password (shown once):\n\n    %s\n", pw)
		}
	case "deactivate", "activate":
		u, err := byEmail()
		if err != nil {
			return err
		}
		on := sub == "activate"
		if _, err := svc.UpdateUser(ctx, u.ID, auth.UpdateUserParams{Active: &on}); err != nil {
			return err
		}
		if on {
			fmt.Fprintf(stdout, "Activated %s: they can sign in, and their keys work again.\n", u.Email)
		} else {
			fmt.Fprintf(stdout, "Deactivated %s: they cannot sign in, their console sessions ended, and their keys get 401 (within 2 s on running servers).\n", u.Email)
		}
	default:
		fmt.Fprint(stderr, usersUsage)
		return fmt.Errorf("users: unknown subcommand %q", sub)
	}
	return nil
}

// newPassword makes up a password of 20 characters from an alphabet
// without look-alikes (about 114 bits).
func newPassword() string {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	return pick(alphabet, 20)
}

func pick(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		var r [1]byte
		for {
			if _, err := rand.Read(r[:]); err != nil {
				panic(err)
			}
			// Rejection sampling keeps every character equally likely.
			if int(r[0]) < 256-256%len(alphabet) {
				break
			}
		}
		b[i] = alphabet[int(r[0])%len(alphabet)]
	}
	return string(b)
}
