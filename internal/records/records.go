// Package records keeps the request log: one record per API call (who,
// what, which model and backend, how it ended, how long it took, how many
// tokens), never the key itself nor, unless a team turns it on, what was
// said. Records form one tamper-evident chain: each carries the SHA-256
// of the previous record's hash and its own fields, so changing or
// removing a stored row breaks the chain at that row, which Verify names.
//
// Logging never slows a request: a Writer takes records on a bounded
// buffer and appends them in batches off the request path. Records the
// database cannot take wait in a local spool (spool.go) and are replayed,
// in order, once it can; records lost all the same are counted and marked
// in the chain itself (gap.go), never silently missing. When the spool is
// full, the operator's choice applies: refuse inference (Accepting) or
// drop records.
package records

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Record is one API call.
type Record struct {
	// Seq is the record's place in the chain (assigned on append).
	Seq int64 `json:"seq"`
	// ID is the request id (x-request-id).
	ID               string    `json:"id"`
	Time             time.Time `json:"time"`
	TeamID           string    `json:"team_id"`
	KeyID            string    `json:"key_id"`
	Method           string    `json:"method"`
	Route            string    `json:"route"`
	Model            string    `json:"model"`
	Backend          string    `json:"backend"`
	Replica          string    `json:"replica"`
	Status           int       `json:"status"`
	ErrorCode        string    `json:"error_code"`
	LatencyMs        float64   `json:"latency_ms"`
	TTFTMs           *float64  `json:"ttft_ms"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	ClientIP         string    `json:"client_ip"`
	User             string    `json:"user"`
	// UserID is the person whose key made the request (their own key, or
	// the key of their console sign-in); "" for a service account's key.
	UserID string `json:"user_id,omitempty"`
	// Prompt and Output are the request's text and the answer's, kept only
	// for teams that capture them (redacted by their policies first).
	Prompt string `json:"prompt,omitempty"`
	Output string `json:"output,omitempty"`
	// PrevHash and Hash chain the record (hex SHA-256; PrevHash is "" for
	// the first record).
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// Normalize puts a record in the form it is stored and hashed in: its
// time in UTC at microsecond precision (what both databases keep).
func (r *Record) Normalize() {
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
}

// ComputeHash is the record's hash given the previous one: SHA-256 over
// the previous hash and the record's fields (all but Seq and Hash) in a
// fixed JSON encoding.
func (r Record) ComputeHash(prev string) string {
	fields := struct {
		Prev             string  `json:"prev"`
		ID               string  `json:"id"`
		Time             string  `json:"time"`
		TeamID           string  `json:"team_id"`
		KeyID            string  `json:"key_id"`
		Method           string  `json:"method"`
		Route            string  `json:"route"`
		Model            string  `json:"model"`
		Backend          string  `json:"backend"`
		Replica          string  `json:"replica"`
		Status           int     `json:"status"`
		ErrorCode        string  `json:"error_code"`
		LatencyMs        float64 `json:"latency_ms"`
		TTFTMs           float64 `json:"ttft_ms"`
		HasTTFT          bool    `json:"has_ttft"`
		PromptTokens     int     `json:"prompt_tokens"`
		CompletionTokens int     `json:"completion_tokens"`
		ClientIP         string  `json:"client_ip"`
		User             string  `json:"user"`
		// Omitted when empty, so that records made before users existed
		// (and service keys' records) hash as they always have.
		UserID string `json:"user_id,omitempty"`
		// Captured text is hashed too; omitted when empty, so that the
		// records of teams that capture nothing hash as they always have.
		Prompt string `json:"prompt,omitempty"`
		Output string `json:"output,omitempty"`
	}{prev, r.ID, r.Time.UTC().Format(time.RFC3339Nano), r.TeamID, r.KeyID, r.Method, r.Route, r.Model, r.Backend, r.Replica,
		r.Status, r.ErrorCode, r.LatencyMs, 0, r.TTFTMs != nil, r.PromptTokens, r.CompletionTokens, r.ClientIP, r.User, r.UserID, r.Prompt, r.Output}
	if r.TTFTMs != nil {
		fields.TTFTMs = *r.TTFTMs
	}
	b, _ := json.Marshal(fields)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ErrNotFound is returned for a record (or checkpoint) that does not
// exist or is another team's. It is an API error (internal/apierr): the
// store wraps it with a message naming the record (apierr.Wrapf), and the
// Reader turns it into the parameter's error where it means a bad cursor
// or checkpoint rather than a missing record.
var ErrNotFound = apierr.New(apierr.NotFound, "record not found")

// Filter selects records, newest first.
type Filter struct {
	// TeamID restricts to one team ("" with AllTeams: every team).
	TeamID   string
	AllTeams bool
	Since    time.Time
	Until    time.Time
	Model    string
	KeyID    string
	Route    string
	User     string
	// Status is an exact status (200) or a class (4 for 4xx); 0: any.
	Status int
	// After is the id of the last record of the previous page; BeforeSeq,
	// when set, continues below a chain position instead (request ids are
	// a client's to choose, so they need not be unique).
	After     string
	BeforeSeq int64
	Limit     int
}

// Usage groups records by one dimension.
const (
	ByModel = "model"
	ByKey   = "key"
	ByTeam  = "team"
	ByUser  = "user"
	ByDay   = "day"
)

// UsageRow is one group's usage over a range.
type UsageRow struct {
	Group            string `json:"group"`
	Requests         int64  `json:"requests"`
	Errors           int64  `json:"errors"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TotalTokens      int64  `json:"total_tokens"`
}

// Store keeps records.
type Store interface {
	// AppendRecords chains records after the current last one and stores
	// them, atomically and serialized with every other append (across
	// servers sharing the database). It sets their Seq, PrevHash and Hash.
	AppendRecords(ctx context.Context, rs []Record) error
	// ListRecords returns the records matching f, newest first, and
	// whether more follow. ErrNotFound for a cursor that is not one of
	// the team's records.
	ListRecords(ctx context.Context, f Filter) ([]Record, bool, error)
	// GetRecord returns the team's record id (any team's with all).
	GetRecord(ctx context.Context, teamID, id string, all bool) (Record, error)
	// ChainRecords calls fn with every record from seq on, in chain order,
	// until fn returns false.
	ChainRecords(ctx context.Context, from int64, fn func(Record) bool) error
	// Purge removes the records older than before, in chain order (it
	// stops at the first newer record), and keeps the last removed one's
	// seq and hash as the chain's anchor, under the same lock as appends.
	// It returns how many it removed.
	Purge(ctx context.Context, before time.Time) (int64, error)
	// Anchor is the last record removed by Purge (zero: none), and how
	// many records purges have removed in all.
	Anchor(ctx context.Context) (Anchor, error)
	// Usage sums the records matching f's team and time range by group
	// (ByModel, ByKey, ByTeam, ByUser or ByDay, UTC), largest token use
	// first.
	Usage(ctx context.Context, f Filter, groupBy string) ([]UsageRow, error)
}

// Anchor is where the kept chain starts after a retention purge.
type Anchor struct {
	Seq    int64
	Hash   string
	Purged int64
}

// Break is where a chain stops verifying.
type Break struct {
	Seq    int64
	ID     string
	Reason string
}

func (b *Break) Error() string {
	return fmt.Sprintf("the request log chain breaks at record %d (%s): %s", b.Seq, b.ID, b.Reason)
}

// Verify walks the chain and returns how many records it checked and the
// first break (nil when the chain holds): a record whose hash is not the
// hash of its fields, or whose previous hash is not its predecessor's.
func Verify(ctx context.Context, s Store) (int, *Break, error) {
	rep, err := VerifyReport(ctx, s)
	return rep.Records, rep.Break, err
}

// Report is what verifying a chain found.
type Report struct {
	// Records is how many records verified (up to the break).
	Records int
	// Break is the first record that does not verify (nil: none).
	Break *Break
	// Gaps are the gap markers among the records that verified (the
	// first MaxGaps of them), and Lost the records they say were lost
	// and GapCount how many markers there were, all of them.
	Gaps     []Gap
	GapCount int
	Lost     int64
}

// MaxGaps bounds the gaps a Report lists.
const MaxGaps = 1000

// VerifyReport is Verify, and also reports the gap markers it met: the
// records the servers knew they lost, in the chain itself.
func VerifyReport(ctx context.Context, s Store) (Report, error) {
	var rep Report
	a, err := s.Anchor(ctx)
	if err != nil {
		return rep, err
	}
	n, prev := 0, a.Hash
	var br *Break
	err = s.ChainRecords(ctx, 0, func(r Record) bool {
		switch {
		case n == 0 && r.PrevHash != a.Hash && a.Seq == 0:
			br = &Break{r.Seq, r.ID, "it is the first record but chains to another: the records before it were removed"}
		case n == 0 && r.PrevHash != a.Hash:
			br = &Break{r.Seq, r.ID, fmt.Sprintf("it does not chain to the last record retention removed (%d): records after that one were removed", a.Seq)}
		case r.PrevHash != prev:
			br = &Break{r.Seq, r.ID, fmt.Sprintf("its previous hash %.12s… is not the hash of the record before it (%.12s…): a record was removed or changed", r.PrevHash, prev)}
		case r.ComputeHash(r.PrevHash) != r.Hash:
			br = &Break{r.Seq, r.ID, "its fields do not hash to its stored hash: the record was changed"}
		}
		if br != nil {
			return false
		}
		if g, ok := ParseGap(r); ok {
			rep.GapCount++
			rep.Lost += g.Lost
			if len(rep.Gaps) < MaxGaps {
				rep.Gaps = append(rep.Gaps, g)
			}
		}
		n++
		prev = r.Hash
		return true
	})
	rep.Records, rep.Break = n, br
	return rep, err
}

// Purger removes records past the retention in the background.
type Purger struct {
	Store     Store
	Retention time.Duration
	Every     time.Duration
	Log       *slog.Logger
	Now       func() time.Time
	// Also are other records purged with the log, by the same retention.
	Also []Purge
}

// Purge removes one kind of record made before a time.
type Purge struct {
	What  string
	Purge func(ctx context.Context, before time.Time) (int64, error)
}

// Run purges every Every until ctx is done (Retention 0: never).
func (p *Purger) Run(ctx context.Context) {
	if p.Retention <= 0 {
		return
	}
	every := p.Every
	if every <= 0 {
		every = time.Hour
	}
	now := p.Now
	if now == nil {
		now = time.Now
	}
	for {
		before := now().Add(-p.Retention)
		n, err := p.Store.Purge(ctx, before)
		switch {
		case err != nil && ctx.Err() == nil:
			p.Log.Error("request log: purge failed", "err", err)
		case n > 0:
			p.Log.Info("request log: purged records past the retention", "records", n, "retention", p.Retention.String())
		}
		// What else the records keep goes with them (policy decisions).
		for _, also := range p.Also {
			if n, err := also.Purge(ctx, before); err != nil && ctx.Err() == nil {
				p.Log.Error("records: purge failed", "what", also.What, "err", err)
			} else if n > 0 {
				p.Log.Info("records: purged past the retention", "what", also.What, "rows", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
