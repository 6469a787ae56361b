// Package apierr is Sovereign's one error type for the API and the one table
// that maps it to an HTTP status and the OpenAI error envelope
// {"error":{"message","type","param","code"}}. Handlers return errors; the
// HTTP layer calls From to classify any error and Write to render it.
package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Code is a machine-readable error code (the envelope's "code").
type Code string

// Codes, as the design brief lists them.
const (
	InvalidRequest        Code = "invalid_request_error"
	InvalidJSON           Code = "invalid_json"
	MissingAPIKey         Code = "missing_api_key"
	InvalidAPIKey         Code = "invalid_api_key"
	PermissionDenied      Code = "permission_denied"
	ModelNotAllowed       Code = "model_not_allowed"
	NotFound              Code = "not_found"
	ModelNotFound         Code = "model_not_found"
	UnsupportedAPIVersion Code = "unsupported_api_version"
	MethodNotAllowed      Code = "method_not_allowed"
	Conflict              Code = "conflict"
	BodyTooLarge          Code = "request_too_large"
	RateLimitExceeded     Code = "rate_limit_exceeded"
	QuotaExceeded         Code = "quota_exceeded"
	ModelOverloaded       Code = "model_overloaded"
	ModelLoading          Code = "model_loading"
	ModelFailed           Code = "model_failed"
	ModelCrashed          Code = "model_crashed"
	RequestCancelled      Code = "request_cancelled"
	Internal              Code = "internal_error"
	ModelRetired          Code = "model_retired"
	PolicyViolation       Code = "policy_violation"
	LimitsUnavailable     Code = "limits_unavailable"
	// RequestLogUnavailable refuses inference while the request log can
	// keep no record (its database down, its local spool full) and the
	// operator chose to fail closed (internal/records).
	RequestLogUnavailable Code = "request_log_unavailable"
	// DatabaseUnavailable answers a request that needs the database while
	// it cannot be reached (DatabaseDown; the store adapters' classifiers).
	DatabaseUnavailable  Code = "database_unavailable"
	UpstreamError        Code = "upstream_error"
	UpstreamUnavailable  Code = "upstream_unavailable"
	UpstreamTimeout      Code = "upstream_timeout"
	IdempotencyKeyInUse  Code = "idempotency_key_in_use"
	IdempotencyKeyReused Code = "idempotency_key_reused"
)

type entry struct {
	status int
	typ    string
}

// table maps each code to its HTTP status and OpenAI error type.
var table = map[Code]entry{
	InvalidRequest:        {400, "invalid_request_error"},
	InvalidJSON:           {400, "invalid_request_error"},
	MissingAPIKey:         {401, "authentication_error"},
	InvalidAPIKey:         {401, "authentication_error"},
	PermissionDenied:      {403, "permission_error"},
	ModelNotAllowed:       {403, "permission_error"},
	NotFound:              {404, "invalid_request_error"},
	ModelNotFound:         {404, "invalid_request_error"},
	UnsupportedAPIVersion: {404, "invalid_request_error"},
	MethodNotAllowed:      {405, "invalid_request_error"},
	Conflict:              {409, "invalid_request_error"},
	BodyTooLarge:          {413, "invalid_request_error"},
	RateLimitExceeded:     {429, "rate_limit_error"},
	QuotaExceeded:         {429, "insufficient_quota"},
	ModelOverloaded:       {503, "server_error"},
	ModelLoading:          {503, "server_error"},
	ModelFailed:           {503, "server_error"},
	ModelCrashed:          {502, "server_error"},
	RequestCancelled:      {499, "invalid_request_error"},
	Internal:              {500, "server_error"},
	ModelRetired:          {410, "invalid_request_error"},
	PolicyViolation:       {403, "permission_error"},
	LimitsUnavailable:     {503, "server_error"},
	RequestLogUnavailable: {503, "server_error"},
	DatabaseUnavailable:   {503, "server_error"},
	UpstreamError:         {502, "server_error"},
	UpstreamUnavailable:   {503, "server_error"},
	UpstreamTimeout:       {504, "server_error"},
	IdempotencyKeyInUse:   {409, "invalid_request_error"},
	IdempotencyKeyReused:  {422, "invalid_request_error"},
}

// Error is an API error. Message is shown to the client; Err (if any) is
// the cause, logged but never shown.
type Error struct {
	Code       Code
	Message    string
	Param      string
	RetryAfter time.Duration
	// Policy and Rule name the denying policy and rule of a
	// policy_violation, so that clients need not parse the message.
	Policy, Rule string
	Err          error
	// kind marks a Kind sentinel (see From).
	kind bool
}

// Error returns the message, as the client reads it (the code is the
// envelope's, and logs carry it beside the error).
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status for the error's code.
func (e *Error) Status() int {
	if t, ok := table[e.Code]; ok {
		return t.status
	}
	return 500
}

// Retryable reports whether the same request may succeed if made again:
// a limit, a conflict with a request still running, a timeout, a call cut
// short (cancelled: by its client, or by a server shutting down), and
// server-side failures. Other 4xx are the request's own fault and a retry
// meets them again. Callers that retry (workflow steps, batch lines)
// classify by this, never by the message.
func (e *Error) Retryable() bool {
	switch st := e.Status(); {
	case st >= 500, st == 408, st == 409, st == 425, st == 429, e.Code == RequestCancelled:
		return true
	}
	return false
}

// FromBody reads an API error back from a response of status with the
// envelope body (an in-process call's answer). A body that is not an
// envelope gives an internal error quoting the status.
func FromBody(status int, body []byte) *Error {
	var env struct {
		Error struct {
			Message string  `json:"message"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
			Policy  string  `json:"policy"`
			Rule    string  `json:"rule"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error.Code == nil {
		return &Error{Code: Internal, Message: "status " + strconv.Itoa(status) + ": " + string(body[:min(len(body), 200)])}
	}
	e := &Error{Code: Code(*env.Error.Code), Message: env.Error.Message, Policy: env.Error.Policy, Rule: env.Error.Rule}
	if env.Error.Param != nil {
		e.Param = *env.Error.Param
	}
	return e
}

// New returns an error with code and message.
func New(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Invalid returns a 400 naming the offending parameter.
func Invalid(param, msg string) *Error {
	return &Error{Code: InvalidRequest, Param: param, Message: msg}
}

// Kind returns a sentinel error of code for a package's error kinds (a
// model not found, a model that failed to load): the package wraps it
// with what it knows (fmt.Errorf("%w: %q", ErrModelNotFound, id)),
// errors.Is finds it through the wrapping, and From shows the whole
// wrapped text as the message.
func Kind(e Error) *Error {
	e.kind = true
	return &e
}

// Errorf returns an error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrapf returns an error of sentinel's code and param with a formatted
// message (naming what was not found, say); errors.Is(err, sentinel)
// holds.
func Wrapf(sentinel *Error, format string, args ...any) *Error {
	return &Error{Code: sentinel.Code, Param: sentinel.Param, RetryAfter: sentinel.RetryAfter, Message: fmt.Sprintf(format, args...), Err: sentinel}
}

// WithParam returns err's API error (From) naming param p instead, as a
// copy that wraps err: the error err is or wraps may be a sentinel every
// call shares, so it is never changed in place.
func WithParam(err error, p string) *Error {
	c := *From(err)
	c.Param, c.kind = p, false
	if c.Err == nil {
		c.Err = err
	}
	return &c
}

// CodeOf returns the code From gives err.
func CodeOf(err error) Code { return From(err).Code }

// Coder is a domain error that carries more than Error does (a limit's
// retry time, an upstream's failure kind) and says which API error it is.
// Its package implements it; From finds it through wrapping.
type Coder interface {
	error
	APIError() *Error
}

// DatabaseRetryAfter is the Retry-After of a database_unavailable answer:
// long enough for a restart or a fail-over to get under way, short enough
// that an OpenAI SDK's default retries (which honour it) often outlast a
// brief outage.
const DatabaseRetryAfter = 2 * time.Second

// DatabaseDown is the 503 database_unavailable that a database outage is
// (cause: the driver's error, logged, never shown: it names hosts and
// users). The store adapters' classifiers return it, and so does a caller
// that gives up waiting for the database itself.
func DatabaseDown(cause error) *Error {
	return &Error{Code: DatabaseUnavailable, Message: "the database is unavailable right now; retry shortly",
		RetryAfter: DatabaseRetryAfter, Err: cause}
}

// A Classifier recognises errors of a package apierr must not import (a
// database driver's: a refused connection, a server shutting down) and
// returns the API error each is, or nil for an error it does not know. It
// must find its errors through any wrapping (errors.As, errors.Is), since
// they reach From wrapped by every layer they passed, and return a new
// *Error each time (callers may change the one they get).
type Classifier func(err error) *Error

var (
	classifiersMu sync.RWMutex
	classifiers   []Classifier
)

// RegisterClassifier adds c to those From consults for an error that is
// neither an *Error nor a Coder. The store adapters register theirs in
// init, so that a database outage is a 503 database_unavailable wherever
// its error surfaces, without every query wrapping its errors and without
// this package knowing any driver.
func RegisterClassifier(c Classifier) {
	classifiersMu.Lock()
	classifiers = append(classifiers, c)
	classifiersMu.Unlock()
}

// classify returns the first registered classifier's verdict on err (nil:
// none knows it).
func classify(err error) *Error {
	classifiersMu.RLock()
	defer classifiersMu.RUnlock()
	for _, c := range classifiers {
		if e := c(err); e != nil {
			if e.Err == nil {
				e.Err = err
			}
			return e
		}
	}
	return nil
}

// From classifies any error: an *Error passes through (a Kind sentinel
// with its wrapping's text), a Coder gives its own, a cancelled call is
// request_cancelled, a registered Classifier's error is what it says (a
// database that cannot be reached: 503 database_unavailable), a timed out
// call is model_overloaded, and anything else is an internal error whose
// detail is hidden. A cancellation wins over a classifier: a client that
// left while the database was being reached did not meet an outage.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.kind && err != error(e) {
			c := *e
			c.kind, c.Message, c.Err = false, err.Error(), err
			return &c
		}
		return e
	}
	var c Coder
	if errors.As(err, &c) {
		e := c.APIError()
		if e.Err == nil {
			e.Err = err
		}
		return e
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: RequestCancelled, Message: "the request was cancelled by the client", Err: err}
	}
	if err != nil {
		if e := classify(err); e != nil {
			return e
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: ModelOverloaded, Message: "the request timed out waiting for the model", RetryAfter: time.Second, Err: err}
	}
	return &Error{Code: Internal, Message: "internal server error", Err: err}
}

// Envelope is the OpenAI error body.
type Envelope struct {
	Error Body `json:"error"`
}

// Body is the inside of Envelope.
type Body struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
	// Policy and Rule are set on policy_violation only (Sovereign's
	// addition to OpenAI's envelope).
	Policy string `json:"policy,omitempty"`
	Rule   string `json:"rule,omitempty"`
}

// Envelope renders e as the OpenAI error body.
func (e *Error) Envelope() Envelope {
	t := table[e.Code]
	if t.typ == "" {
		t.typ = "server_error"
	}
	var param *string
	if e.Param != "" {
		p := e.Param
		param = &p
	}
	return Envelope{Error: Body{Message: e.Message, Type: t.typ, Param: param, Code: string(e.Code), Policy: e.Policy, Rule: e.Rule}}
}

// Write renders err (classified with From) as a JSON response, with
// Retry-After when the error has one.
func Write(w http.ResponseWriter, err error) *Error {
	e := From(err)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	// The OpenAI SDKs retry 409 and 429 by default; x-should-retry (which
	// they read first) tells them which of ours a retry cannot fix: a name
	// already taken, a daily or monthly budget spent. A request still
	// running under the same Idempotency-Key is worth retrying. A rate
	// limit without a wait is a request larger than the limit itself.
	switch {
	case e.Code == Conflict, e.Code == QuotaExceeded, e.Code == RateLimitExceeded && e.RetryAfter <= 0:
		w.Header().Set("x-should-retry", "false")
	case e.Code == IdempotencyKeyInUse:
		w.Header().Set("x-should-retry", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status())
	json.NewEncoder(w).Encode(e.Envelope())
	return e
}
