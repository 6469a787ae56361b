package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// TestFromClassifies: API errors pass through (wrapped too), the
// inference and context errors map to their codes with Retry-After where a
// retry helps, and anything else is an internal error that hides its
// detail.
func TestFromClassifies(t *testing.T) {
	api := apierr.Invalid("model", "bad")
	for _, c := range []struct {
		err   error
		code  apierr.Code
		param string
		retry bool
	}{
		{api, apierr.InvalidRequest, "model", false},
		{fmt.Errorf("wrapped: %w", api), apierr.InvalidRequest, "model", false},
		{apierr.Invalid("top_k", "bad"), apierr.InvalidRequest, "top_k", false},
		{&inference.OverloadedError{RetryAfter: 2 * time.Second}, apierr.ModelOverloaded, "", true},
		{&inference.UpstreamError{Kind: inference.UpstreamRateLimited, Message: "slow down"}, apierr.RateLimitExceeded, "", true},
		{&inference.UpstreamError{Kind: inference.UpstreamTimeout, Message: "late"}, apierr.UpstreamTimeout, "", false},
		{&inference.UpstreamError{Kind: inference.UpstreamUnavailable, Message: "down"}, apierr.UpstreamUnavailable, "", true},
		{fmt.Errorf("x: %w", inference.ErrModelNotFound), apierr.ModelNotFound, "model", false},
		{inference.ErrModelFailed, apierr.ModelFailed, "", true},
		{inference.ErrBackendCrashed, apierr.ModelCrashed, "", false},
		{&inference.GenerationError{Model: "m", Message: "decode failed: no KV slot"}, apierr.ModelCrashed, "", true},
		{context.Canceled, apierr.RequestCancelled, "", false},
		{context.DeadlineExceeded, apierr.ModelOverloaded, "", true},
		{errors.New("disk on fire at /var/lib/x"), apierr.Internal, "", false},
	} {
		e := apierr.From(c.err)
		if e.Code != c.code || e.Param != c.param || (e.RetryAfter > 0) != c.retry {
			t.Errorf("apierr.From(%v) = %s param %q retry %s; want %s %q retry %v", c.err, e.Code, e.Param, e.RetryAfter, c.code, c.param, c.retry)
		}
	}
	if e := apierr.From(errors.New("disk on fire at /var/lib/x")); strings.Contains(e.Message, "disk") || !errors.Is(e, e.Err) {
		t.Errorf("an internal error shows its detail: %+v", e)
	}
	// A runner's own failure mid-generation is shown, not hidden as a 500.
	if e := apierr.From(&inference.GenerationError{Model: "m", Message: "decode failed: no KV slot"}); e.Status() != 502 || !strings.Contains(e.Message, "decode failed") {
		t.Errorf("a generation error: %d %q", e.Status(), e.Message)
	}
}

// TestKindShowsItsWrapping: a Kind sentinel's message is the text that
// wraps it, errors.Is still finds it, and the sentinel itself is left as
// it was; a plain sentinel wrapped by storage keeps its own message.
func TestKindShowsItsWrapping(t *testing.T) {
	err := fmt.Errorf("%w: %q", inference.ErrModelNotFound, "nope")
	e := apierr.From(err)
	if e.Message != `model not found: "nope"` || !errors.Is(e, inference.ErrModelNotFound) || e.Param != "model" {
		t.Errorf("From(%v) = %+v", err, e)
	}
	if inference.ErrModelNotFound.Message != "model not found" {
		t.Errorf("the sentinel changed: %q", inference.ErrModelNotFound.Message)
	}
	gone := apierr.New(apierr.NotFound, "no such thing")
	if e := apierr.From(fmt.Errorf("sqlite: thing %q: %w", "x", gone)); e != gone {
		t.Errorf("a plain sentinel: %+v", e)
	}
	w := apierr.Wrapf(gone, "no thing %q", "x")
	if e := apierr.From(fmt.Errorf("list: %w", w)); e.Message != `no thing "x"` || e.Code != apierr.NotFound || !errors.Is(e, gone) {
		t.Errorf("Wrapf: %+v", e)
	}
}

// connRefused stands for a database driver's error, which apierr cannot
// import: a registered Classifier knows it.
type connRefused struct{ host string }

func (e *connRefused) Error() string { return "dial tcp " + e.host + ": connect: connection refused" }

func init() {
	apierr.RegisterClassifier(func(err error) *apierr.Error {
		var c *connRefused
		if errors.As(err, &c) {
			return apierr.DatabaseDown(err)
		}
		return nil
	})
}

// TestClassifierFindsWrappedErrors: a registered classifier's errors are
// 503 database_unavailable with Retry-After, however they arrive wrapped
// (%w, errors.Join), with the driver's text hidden; a cancellation wins
// over them, and errors no classifier knows stay internal.
func TestClassifierFindsWrappedErrors(t *testing.T) {
	down := &connRefused{host: "db.internal:5432"}
	for _, err := range []error{
		down,
		fmt.Errorf("postgres: get key by hash: %w", down),
		fmt.Errorf("authenticate: %w", fmt.Errorf("postgres: %w", down)),
		errors.Join(errors.New("rollback failed"), fmt.Errorf("commit: %w", down)),
		fmt.Errorf("list: %w", errors.Join(down, errors.New("other"))),
	} {
		e := apierr.From(err)
		if e.Code != apierr.DatabaseUnavailable || e.Status() != 503 || e.RetryAfter <= 0 || e.Envelope().Error.Type != "server_error" {
			t.Errorf("From(%v) = %s %d retry %s", err, e.Code, e.Status(), e.RetryAfter)
		}
		if strings.Contains(e.Message, "db.internal") || !errors.Is(e, down) {
			t.Errorf("From(%v): message %q shows the driver's text, or the cause is lost", err, e.Message)
		}
	}
	if e := apierr.From(errors.Join(context.Canceled, down)); e.Code != apierr.RequestCancelled {
		t.Errorf("a cancelled call that met a down database: %s, want request_cancelled", e.Code)
	}
	if e := apierr.From(errors.New("connection refused")); e.Code != apierr.Internal {
		t.Errorf("an error no classifier knows: %s, want internal_error", e.Code)
	}
	// An API error passes through even when it wraps a classified one.
	nf := &apierr.Error{Code: apierr.NotFound, Message: "gone", Err: down}
	if e := apierr.From(nf); e != nf {
		t.Errorf("an API error wrapping a driver's error: %+v", e)
	}
}
