// Package idempotency makes a retried create safe: a request that carries
// an Idempotency-Key gets, on every repeat within the key's lifetime, the
// response its first attempt got, so a client that lost the answer to a
// network error can retry without creating the object twice. The contract
// follows the IETF httpapi draft "The Idempotency-Key HTTP Header Field"
// and Stripe's practice (docs/idempotency.md):
//
//   - keys are scoped to the calling API key, and kept 24 hours;
//   - a repeat with the same key and the same request (method, path, body)
//     gets the stored status and body;
//   - the same key with another request is an error (ErrReused, 422);
//   - a repeat while the first attempt still runs is ErrInUse (409, which
//     clients retry);
//   - only answers that are final are stored: a 5xx, 408, 409 or 429 is not,
//     so a retry runs the request again.
//
// The stored response is sealed with AES-GCM under a key derived from the
// Idempotency-Key, which is itself never stored (the row's id is a hash of
// it): an answer that holds a secret, such as a new API key, cannot be read
// from the database without the key the client chose.
package idempotency

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"strings"
	"time"
)

// Defaults for Service.
const (
	// DefaultTTL is how long a key's first response is kept.
	DefaultTTL = 24 * time.Hour
	// DefaultStale is how long a first attempt may run before another
	// attempt may take the key over (its server may have died mid-request).
	DefaultStale = 10 * time.Minute
	// MaxKeyLength bounds the header's value.
	MaxKeyLength = 255
	// MaxBody bounds a stored response; a larger one is not stored.
	MaxBody = 1 << 20
)

// Errors of Begin.
var (
	// ErrInUse: the key's first attempt is still running.
	ErrInUse = errors.New("a request with this Idempotency-Key is still being processed; retry after it completes")
	// ErrReused: the key was used for a different request.
	ErrReused = errors.New("this Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request")
)

// Entry is a stored key.
type Entry struct {
	// ID is the hash of the caller and the key.
	ID string
	// Fingerprint is the hash of the first request ("" until it finished).
	Fingerprint string
	Done        bool
	Status      int
	// Body is the sealed response.
	Body      []byte
	StartedAt time.Time
	ExpiresAt time.Time
}

// Store keeps keys.
type Store interface {
	// ClaimIdempotency inserts e as a running attempt and reports true; if
	// the id exists, it takes it over (reporting true) when it expired or
	// is a running attempt started before staleBefore, and otherwise
	// returns the stored entry and false.
	ClaimIdempotency(ctx context.Context, e Entry, staleBefore time.Time) (Entry, bool, error)
	// FinishIdempotency stores the running attempt's response.
	FinishIdempotency(ctx context.Context, id, fingerprint string, status int, body []byte) error
	// ReleaseIdempotency forgets a running attempt whose answer is not
	// stored, so that a retry runs the request again.
	ReleaseIdempotency(ctx context.Context, id string) error
	// PurgeIdempotency removes the keys that expired before t.
	PurgeIdempotency(ctx context.Context, before time.Time) (int64, error)
}

// Service runs the protocol over a Store.
type Service struct {
	Store Store
	// TTL is how long a response is kept (default DefaultTTL).
	TTL time.Duration
	// Stale is when a running attempt may be taken over (default
	// DefaultStale).
	Stale time.Duration
	Log   *slog.Logger
	Now   func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Replay is a stored response to send again.
type Replay struct {
	Status int
	Body   []byte
}

// Attempt is a claimed key: the request runs, reading its body through
// Body, then Finish stores the answer (or Release forgets it).
type Attempt struct {
	s    *Service
	id   string
	seal []byte
	// body is what the request reads: the original, copied on its way to
	// the fingerprint's goroutine through pw.
	body  io.Reader
	pw    *io.PipeWriter
	print chan string
	ended bool
}

// Begin starts a request of caller (an API key id) with the client's key.
// Exactly one of the results is set: an Attempt to run the request (reading
// the body from Attempt.Body), a Replay to send, or an error (ErrInUse,
// ErrReused, or the store's). A replay's body is read whole to compare it
// with the first request's.
func (s *Service) Begin(ctx context.Context, caller, key, method, path, contentType string, body io.Reader) (*Attempt, *Replay, error) {
	id, seal := derive(caller, key)
	now := s.now()
	ttl, stale := s.TTL, s.Stale
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if stale <= 0 {
		stale = DefaultStale
	}
	e, claimed, err := s.Store.ClaimIdempotency(ctx, Entry{ID: id, StartedAt: now, ExpiresAt: now.Add(ttl)}, now.Add(-stale))
	if err != nil {
		return nil, nil, err
	}
	if claimed {
		pr, pw := io.Pipe()
		a := &Attempt{s: s, id: id, seal: seal, body: io.TeeReader(body, pw), pw: pw, print: make(chan string, 1)}
		go func() {
			f, _ := Fingerprint(method, path, contentType, pr)
			pr.Close()
			a.print <- f
		}()
		return a, nil, nil
	}
	if !e.Done {
		return nil, nil, ErrInUse
	}
	f, err := Fingerprint(method, path, contentType, body)
	if err != nil {
		return nil, nil, err
	}
	if f != e.Fingerprint {
		return nil, nil, ErrReused
	}
	plain, err := open(seal, e.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("idempotency: stored response: %w", err)
	}
	return nil, &Replay{Status: e.Status, Body: plain}, nil
}

// Fingerprint identifies a request by its method, path and body, read
// whole. A multipart body is identified by its parts (names, file names,
// types and contents), not its bytes: its boundary is chosen anew each
// time a client sends it, retries included.
func Fingerprint(method, path, contentType string, body io.Reader) (string, error) {
	raw := sha256.New()
	fmt.Fprintf(raw, "%s %s\n", method, path)
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		_, err := io.Copy(raw, body)
		return hex.EncodeToString(raw.Sum(nil)), err
	}
	parts := sha256.New()
	fmt.Fprintf(parts, "%s %s %s\n", method, path, mt)
	mr := multipart.NewReader(io.TeeReader(body, raw), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err == nil {
			fmt.Fprintf(parts, "part %q %q %q\n", p.FormName(), p.FileName(), p.Header.Get("Content-Type"))
			var n int64
			n, err = io.Copy(parts, p)
			fmt.Fprintf(parts, "\n%d\n", n)
		}
		if err != nil {
			// Not well-formed: the bytes are all there is to compare.
			_, err := io.Copy(raw, body)
			return hex.EncodeToString(raw.Sum(nil)), err
		}
	}
	_, err = io.Copy(io.Discard, body) // the epilogue
	return hex.EncodeToString(parts.Sum(nil)), err
}

// Body is the request body, to be read by the request in place of the
// original (it is fingerprinted on the way).
func (a *Attempt) Body() io.Reader { return a.body }

// Final reports whether an answer with status is stored: one a retry
// should not run again. Server errors, timeouts, conflicts and rate limits
// may go another way next time.
func Final(status int) bool {
	switch {
	case status >= 500, status == 408, status == 409, status == 429:
		return false
	}
	return true
}

// Finish stores the answer when it is final (and not larger than MaxBody),
// and otherwise releases the key. Whatever the request left unread of its
// body is read first, so the fingerprint covers the whole body. The store
// is written with ctx's values but not its cancellation: the answer was
// produced, and it must be found by the retry of a client that left.
func (a *Attempt) Finish(ctx context.Context, status int, body []byte) {
	if a.ended {
		return
	}
	a.ended = true
	ctx = context.WithoutCancel(ctx)
	if !Final(status) || len(body) > MaxBody {
		a.release(ctx)
		return
	}
	if _, err := io.Copy(io.Discard, a.body); err != nil {
		// The body could not be read whole: the fingerprint would be
		// of part of it.
		a.release(ctx)
		return
	}
	a.pw.Close()
	fingerprint := <-a.print
	sealed, err := seal(a.seal, body)
	if err == nil {
		err = a.s.Store.FinishIdempotency(ctx, a.id, fingerprint, status, sealed)
	}
	if err != nil {
		a.s.log().Warn("idempotency: storing a response failed; a retry will run the request again", "err", err)
		a.release(ctx)
	}
}

// Release forgets the attempt (a panic, or an answer not stored).
func (a *Attempt) Release(ctx context.Context) {
	if a.ended {
		return
	}
	a.ended = true
	a.release(context.WithoutCancel(ctx))
}

func (a *Attempt) release(ctx context.Context) {
	a.pw.CloseWithError(errors.New("released")) // ends the fingerprint's goroutine
	if err := a.s.Store.ReleaseIdempotency(ctx, a.id); err != nil {
		a.s.log().Warn("idempotency: releasing a key failed; retries will wait for it to go stale", "err", err)
	}
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// Run purges expired keys every hour until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := s.Store.PurgeIdempotency(ctx, s.now()); err != nil && ctx.Err() == nil {
			s.log().Warn("idempotency: purge failed", "err", err)
		} else if n > 0 {
			s.log().Debug("idempotency: purged expired keys", "keys", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// derive returns the row id and the sealing key of caller's key: two
// independent hashes, so the id tells nothing of the sealing key.
func derive(caller, key string) (id string, sealKey []byte) {
	idh := sha256.Sum256([]byte("sovereign idempotency id\x00" + caller + "\x00" + key))
	sk := sha256.Sum256([]byte("sovereign idempotency seal\x00" + caller + "\x00" + key))
	return hex.EncodeToString(idh[:]), sk[:]
}

func seal(key, plain []byte) ([]byte, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, g.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return g.Seal(nonce, nonce, plain, nil), nil
}

func open(key, sealed []byte) ([]byte, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < g.NonceSize() {
		return nil, errors.New("sealed response too short")
	}
	return g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], nil)
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
