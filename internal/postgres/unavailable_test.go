package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/postgres"
)

// TestDownIsDatabaseUnavailable: a server that cannot be reached (here a
// port nobody listens on, through Open and its pool's dial) and one that
// is shutting down are a 503 database_unavailable with Retry-After, the
// driver's text hidden; a statement's own failure, and a network error
// that is not pgx's (an upstream model's), are not.
func TestDownIsDatabaseUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, openErr := postgres.Open(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=5")
	if openErr == nil {
		s.Close()
		t.Fatalf("Open on %s: no error", addr)
	}
	down := []error{
		fmt.Errorf("authenticate: %w", openErr),
		fmt.Errorf("postgres: list keys: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}),
		errors.Join(errors.New("rollback"), &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}),
		&pgconn.PgError{Code: "08006", Message: "connection failure"},
		&pgconn.PgError{Code: "53300", Message: "sorry, too many clients already"},
	}
	for _, err := range down {
		e := apierr.From(err)
		if e.Code != apierr.DatabaseUnavailable || e.Status() != 503 || e.RetryAfter <= 0 {
			t.Errorf("From(%v) = %s %d retry %s; want 503 database_unavailable with Retry-After", err, e.Code, e.Status(), e.RetryAfter)
		}
		if strings.Contains(e.Message, addr) || strings.Contains(e.Message, "postgres") {
			t.Errorf("the message shows the driver's text: %q", e.Message)
		}
	}
	for _, err := range []error{
		&pgconn.PgError{Code: "42P01", Message: `relation "x" does not exist`},
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
	} {
		if e := apierr.From(err); e.Code != apierr.Internal {
			t.Errorf("From(%v) = %s, want internal_error", err, e.Code)
		}
	}
}
