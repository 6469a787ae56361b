package records

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"time"
)

// A gap marker is a record the writer puts into the chain itself when
// records were lost (the buffer was full; the spool was full and the
// operator chose to drop; the store failed with no spool; spooled records
// a damaged disk no longer gives back), so that a loss the metrics know of
// is in the log an auditor verifies, not only in a counter. It is an
// ordinary record — chained, hashed and verified as any other, with no
// field of its own, so no record's hash changed when markers came —
// recognised by its route:
//
//	id          "gap_" and 24 hex digits (never a request id)
//	time        when the first lost record's call started
//	latency_ms  from then to when the last lost record's call started
//	route       "sovereign:records-lost" (GapRoute)
//	error_code  "records_lost"
//	status      0 (no HTTP call)
//	replica     the server that lost them (its instance id)
//	output      the details in JSON (GapDetails): {"lost", "first",
//	            "last", "replica", "reasons": {"buffer_full": n, …}}
//
// It has no team and no key: only an admin key lists it (GET
// /v1/logs?route=sovereign:records-lost), and usage does not count it.

// GapRoute and GapErrorCode mark a gap marker.
const (
	GapRoute     = "sovereign:records-lost"
	GapErrorCode = "records_lost"
)

// Why records were lost (the reason label of
// sovereign_request_log_lost_total, and a gap's reasons).
const (
	LostBufferFull   = "buffer_full"
	LostStoreError   = "store_error"
	LostSpoolFull    = "spool_full"
	LostSpoolDamaged = "spool_damaged"
)

// GapDetails are what a gap marker says, in its output field.
type GapDetails struct {
	// Lost is how many records were lost.
	Lost int64 `json:"lost"`
	// First and Last are the start times of the first and the last lost
	// record's calls (when the loss was noticed, for records whose time is
	// not known: those a damaged spool no longer gives back).
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Replica is the server that lost them.
	Replica string `json:"replica"`
	// Reasons counts them by reason (LostBufferFull, …).
	Reasons map[string]int64 `json:"reasons"`
}

// Gap is a gap marker found in the chain.
type Gap struct {
	Seq int64
	ID  string
	GapDetails
	// Unreadable says that the marker's details did not parse (its
	// record verified: whoever wrote it could write the chain).
	Unreadable bool
}

// IsGap reports whether r is a gap marker.
func (r Record) IsGap() bool { return r.Route == GapRoute }

// ParseGap reads the gap marker r (false: r is not one).
func ParseGap(r Record) (Gap, bool) {
	if !r.IsGap() {
		return Gap{}, false
	}
	g := Gap{Seq: r.Seq, ID: r.ID}
	if json.Unmarshal([]byte(r.Output), &g.GapDetails) != nil || g.Lost < 0 {
		g.GapDetails, g.Unreadable = GapDetails{Replica: r.Replica}, true
	}
	return g, true
}

// pendingGap is the records lost that no marker in the chain records yet.
type pendingGap struct {
	GapDetails
}

func (g *pendingGap) empty() bool { return g.Lost == 0 }

// add counts n records lost for reason, their calls started between first
// and last (zero: not known, now).
func (g *pendingGap) add(reason string, n int64, first, last time.Time) {
	if n <= 0 {
		return
	}
	now := time.Now()
	if first.IsZero() {
		first = now
	}
	if last.IsZero() {
		last = now
	}
	if g.Lost == 0 || first.Before(g.First) {
		g.First = first
	}
	if g.Lost == 0 || last.After(g.Last) {
		g.Last = last
	}
	g.Lost += n
	if g.Reasons == nil {
		g.Reasons = map[string]int64{}
	}
	g.Reasons[reason] += n
}

// addRecords counts the records rs lost for reason; the markers among
// them give back the gaps they carried (a marker is not a lost call).
func (g *pendingGap) addRecords(reason string, rs []Record) int {
	n := 0
	var first, last time.Time
	for _, r := range rs {
		if d, ok := ParseGap(r); ok {
			if !d.Unreadable {
				g.merge(d.GapDetails)
			}
			continue
		}
		n++
		if first.IsZero() || r.Time.Before(first) {
			first = r.Time
		}
		if last.IsZero() || r.Time.After(last) {
			last = r.Time
		}
	}
	g.add(reason, int64(n), first, last)
	return n
}

// merge adds another gap's records to g.
func (g *pendingGap) merge(d GapDetails) {
	for reason, n := range d.Reasons {
		g.add(reason, n, d.First, d.Last)
	}
}

// marker is the record that puts g into the chain, made by replica.
func (g *pendingGap) marker(replica string) Record {
	d := g.GapDetails
	d.First, d.Last, d.Replica = d.First.UTC().Truncate(time.Microsecond), d.Last.UTC().Truncate(time.Microsecond), replica
	out, _ := json.Marshal(d)
	return Record{ID: gapID(), Time: d.First, Route: GapRoute, ErrorCode: GapErrorCode, Replica: replica,
		LatencyMs: float64(d.Last.Sub(d.First).Microseconds()) / 1000, Output: string(out)}
}

// gapID is a fresh marker id: "gap_", the time in milliseconds and
// random bits (the form of generate.NewID's request ids).
func gapID() string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	rand.Read(b[6:])
	return "gap_" + hex.EncodeToString(b[:])
}
