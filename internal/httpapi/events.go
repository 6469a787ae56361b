package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
)

// The event stream: GET /v1/events sends the caller's team's events and
// the deployment's as Server-Sent Events, read from the stored log, live
// and resumable with Last-Event-ID (docs/events.md). audit.triggered
// events repeat a policy decision, so only keys that may read decisions
// (records:read) receive them; an admin key follows every team.

// EventLog is the event log GET /v1/events reads (events.Bus).
type EventLog interface {
	// Event returns the stored event id. Errors: events.ErrNotFound.
	Event(ctx context.Context, id string) (events.Event, error)
	// Head returns the log's last sequence number.
	Head(ctx context.Context) (int64, error)
	// Follow returns a cursor over f's events after f.After.
	Follow(f events.Filter) *events.Cursor
}

// keepAlive is how long an event stream stays silent before it sends a
// comment, so that proxies and clients keep an idle stream open.
var keepAlive = 15 * time.Second

// eventFilter reads what GET /v1/events selects: the team (team_id for
// admin keys), the types, and where to start (Last-Event-ID, else after,
// else now). Errors name the parameter.
func (s *Server) eventFilter(r *http.Request) (events.Filter, error) {
	q := r.URL.Query()
	k, _ := KeyFrom(r.Context())
	f := events.Filter{Team: k.TeamID, AllTeams: auth.HasScope(k, auth.ScopeAdmin)}
	if v := q.Get("team_id"); v != "" {
		if !f.AllTeams && v != k.TeamID {
			return f, apierr.Invalid("team_id", "only an admin key follows other teams' events")
		}
		f.Team, f.AllTeams = v, false
	}
	audit := auth.HasScope(k, auth.ScopeRecordsRead)
	if q.Has("types") {
		for _, t := range strings.Split(q.Get("types"), ",") {
			t = strings.TrimSpace(t)
			switch {
			case t == "":
				continue
			case !events.Known(t):
				return f, apierr.Invalid("types", fmt.Sprintf("unknown event type %q; the types are %s", t, strings.Join(events.Types, ", ")))
			case t == events.AuditTriggered && !audit:
				return f, &apierr.Error{Code: apierr.PermissionDenied, Param: "types",
					Message: "audit.triggered events repeat policy decisions: they need the 'records:read' scope"}
			}
			if !slices.Contains(f.Types, t) {
				f.Types = append(f.Types, t)
			}
		}
		if len(f.Types) == 0 {
			return f, apierr.Invalid("types", "'types' lists event types separated by commas")
		}
	}
	if len(f.Types) == 0 && !audit {
		f.ExceptTypes = []string{events.AuditTriggered}
	}
	// An EventSource reconnects to the same URL with Last-Event-ID: the
	// header is newer than the query.
	id, param := strings.TrimSpace(r.Header.Get("Last-Event-ID")), "Last-Event-ID"
	if id == "" {
		id, param = strings.TrimSpace(q.Get("after")), "after"
	}
	if id == "" {
		head, err := s.Events.Head(r.Context())
		if err != nil {
			return f, err
		}
		f.After = head
		return f, nil
	}
	return f.Resume(r.Context(), s.Events, id, param)
}

// streamEvents serves GET /v1/events: the stored events after the resume
// point, then each new one as it is stored (on any server), until the
// client leaves or the server shuts down. It reads the log a page at a
// time after each wake-up, so a slow client holds one page, not a backlog.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	if s.Events == nil {
		return apierr.New(apierr.NotFound, "this server keeps no event log")
	}
	f, err := s.eventFilter(r)
	if err != nil {
		return err
	}
	return s.followEvents(w, r, f, nil)
}

// followEvents streams f's events as GET /v1/events does; when last is
// set, the stream ends after the event for which it is true (a run's
// stream ends with the run).
func (s *Server) followEvents(w http.ResponseWriter, r *http.Request, f events.Filter, last func(events.Event) bool) error {
	ctx := r.Context()
	cur := s.Events.Follow(f)
	defer cur.Close()
	st := wire.StartSSE(w)
	if st.Flush() != nil {
		return nil
	}
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	for {
		changed := cur.Changed()
		evs, more, err := cur.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // the client reconnects with Last-Event-ID
		}
		for _, ev := range evs {
			b, err := json.Marshal(ev)
			if err != nil {
				s.Log.Warn("event stream: a stored event cannot be encoded; skipped", "event", ev.ID, "err", err)
				continue
			}
			if st.Event(ev.ID, ev.Type, b) != nil {
				return nil
			}
			if last != nil && last(ev) {
				st.Flush()
				return nil
			}
		}
		if len(evs) > 0 {
			if st.Flush() != nil {
				return nil
			}
			ka.Reset(keepAlive)
		}
		if more {
			continue
		}
		select {
		case <-changed:
		case <-ka.C:
			if st.Comment("keep-alive") != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-s.Stop:
			return nil
		}
	}
}
