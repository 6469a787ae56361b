// Package events is Sovereign's event log and bus. Services publish
// lifecycle events (model.ready, audit.triggered, workflow.run.succeeded,
// …); a Bus built with a Store (New) keeps every event in the store's log,
// numbered by a sequence that increases in the order events become
// visible, and only then hands it to in-process subscribers. Readers of
// the live stream (GET /v1/events) follow the log with a Cursor, which
// reads the store in pages after a wake-up: they miss nothing and see
// nothing twice, also across a reconnect or a switch of server, and a slow
// reader holds at most one page in memory.
//
// Wake-ups are hints, never data: this server's own appends, the store's
// notices of other servers' appends (a Store that is also a Listener:
// PostgreSQL LISTEN/NOTIFY), and a look at the log's head every second
// while anyone follows it.
//
// Delivery to in-process subscribers (Subscribe) is non-blocking: a
// subscriber whose buffer is full misses events and is told so by its
// Dropped count.
package events

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Event types. Types lists them all.
const (
	ModelReady                = "model.ready"
	ModelFailed               = "model.failed"
	ModelUnloaded             = "model.unloaded"
	AuditTriggered            = "audit.triggered"
	WorkflowRunSucceeded      = "workflow.run.succeeded"
	WorkflowRunFailed         = "workflow.run.failed"
	WorkflowRunCancelled      = "workflow.run.cancelled"
	WorkflowApprovalRequested = "workflow.approval.requested"
	// WorkflowRunUpdated and WorkflowStepUpdated are every other state
	// change of a run and of its steps (a run's live stream shows them).
	WorkflowRunUpdated  = "workflow.run.updated"
	WorkflowStepUpdated = "workflow.step.updated"
	BatchCompleted      = "batch.completed"
	BatchFailed         = "batch.failed"
	BatchCancelled      = "batch.cancelled"
	BatchExpired        = "batch.expired"
	DocumentReady       = "document.ready"
	DocumentFailed      = "document.failed"
	WebhookDisabled     = "webhook.disabled"
)

// Types is every event type, in the order the documentation lists them.
var Types = []string{
	ModelReady, ModelFailed, ModelUnloaded, AuditTriggered,
	WorkflowRunSucceeded, WorkflowRunFailed, WorkflowRunCancelled, WorkflowApprovalRequested,
	WorkflowRunUpdated, WorkflowStepUpdated,
	BatchCompleted, BatchFailed, BatchCancelled, BatchExpired,
	DocumentReady, DocumentFailed, WebhookDisabled,
}

// Known reports whether typ is one of Types.
func Known(typ string) bool { return slices.Contains(Types, typ) }

// Object is every event's "object" field.
const Object = "event"

// Event is one published event. Its JSON form is the API's event object
// {id, object, type, created_at (unix seconds), data}; Team, Subject and
// Seq are not part of it.
type Event struct {
	// ID is "evt_" followed by 24 hex characters (NewID).
	ID     string
	Object string // "event"
	Type   string
	// CreatedAt is when the event was published, in UTC.
	CreatedAt time.Time
	// Data is the event's payload, a JSON object: as published in
	// process, a json.RawMessage when read from a store.
	Data any
	// Team is the team the event belongs to; "" for events about the
	// deployment (models), which every team sees.
	Team string
	// Subject is the id of the object the event is about when a stream
	// follows that object alone (a workflow run: GET
	// /v1/workflow_runs/{id}/events); "" for none.
	Subject string
	// Seq is the event's position in the deployment's stored log: 0 until
	// stored. Later stored events have larger numbers, with gaps.
	Seq int64
}

// wire is Event's JSON form.
type wire struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"`
	Type      string          `json:"type"`
	CreatedAt int64           `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// MarshalJSON encodes the API's event object. Errors: Data cannot be
// encoded as JSON.
func (e Event) MarshalJSON() ([]byte, error) {
	data, err := e.DataJSON()
	if err != nil {
		return nil, err
	}
	obj := e.Object
	if obj == "" {
		obj = Object
	}
	return json.Marshal(wire{ID: e.ID, Object: obj, Type: e.Type, CreatedAt: e.CreatedAt.Unix(), Data: data})
}

// UnmarshalJSON decodes the API's event object; Data becomes a
// json.RawMessage. Errors: malformed JSON.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Event{ID: w.ID, Object: w.Object, Type: w.Type, CreatedAt: time.Unix(w.CreatedAt, 0).UTC(), Data: w.Data}
	return nil
}

// DataJSON returns Data encoded as JSON ({} for nil). Errors: Data cannot
// be encoded.
func (e Event) DataJSON() (json.RawMessage, error) {
	switch d := e.Data.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		if len(d) == 0 {
			return json.RawMessage(`{}`), nil
		}
		return d, nil
	}
	b, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("event %s (%s): data: %w", e.ID, e.Type, err)
	}
	return b, nil
}

// Publisher publishes events about the deployment (no team); consumers
// depend on this, not on Bus.
type Publisher interface {
	Publish(typ string, data any) Event
}

// TeamPublisher publishes events that belong to a team (team "": to the
// deployment, as Publisher does).
type TeamPublisher interface {
	PublishTeam(team, typ string, data any) Event
}

// Subscription receives events on C until Close.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	bus     *Bus
	mu      sync.Mutex
	dropped int
}

// Subscribe returns an in-process subscription with a buffer of n events.
// On a bus with a store it receives each event once stored (or once its
// storing failed); it does not see events other servers store.
func (b *Bus) Subscribe(n int) *Subscription {
	c := make(chan Event, n)
	s := &Subscription{C: c, c: c, bus: b}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Close stops delivery and closes C.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	if _, ok := s.bus.subs[s]; ok {
		delete(s.bus.subs, s)
		close(s.c)
	}
	s.bus.mu.Unlock()
}

// Dropped is the number of events this subscriber missed because its
// buffer was full.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Publish publishes an event of type typ about the deployment (no team)
// and returns it; see PublishTeam.
func (b *Bus) Publish(typ string, data any) Event { return b.PublishTeam("", typ, data) }

// PublishTeam publishes an event of type typ belonging to team ("": the
// deployment) and returns it. It never blocks: on a bus with a store the
// event is queued and stored by the bus's writer, then handed to
// subscribers; one that finds the queue full, or cannot be stored, is
// lost from the log (logged, and counted by Config.OnLost) but still
// handed to in-process subscribers. Without a store it goes to
// subscribers at once.
func (b *Bus) PublishTeam(team, typ string, data any) Event {
	ev := b.newEvent(team, typ, data)
	if b.store == nil {
		b.fanOut(ev)
		return ev
	}
	b.enqueue(ev)
	return ev
}

func (b *Bus) newEvent(team, typ string, data any) Event {
	return Event{ID: NewID(), Object: Object, Type: typ, CreatedAt: b.now().UTC(), Data: data, Team: team}
}

// fanOut hands ev to every in-process subscriber, dropping it for those
// whose buffer is full.
func (b *Bus) fanOut(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.c <- ev:
		default:
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
		}
	}
}

// NewID returns a random event id "evt_…".
func NewID() string {
	var b [12]byte
	rand.Read(b[:])
	return "evt_" + hex.EncodeToString(b[:])
}
