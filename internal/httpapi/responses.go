package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sovereign-ai/sovereign/internal/answers"
	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/responses"
)

// The Responses API. A local model (or an upstream that does not serve
// /responses itself) runs the request as the chat request it means; the
// answer is rendered as output items and, streamed, as the Responses
// events. An upstream declared with the "responses" capability gets the
// request relayed as sent. Responses with store (the default) are kept
// per team for GET, DELETE, input_items and previous_response_id.

func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) error {
	body, peek, m, err := s.peekModel(w, r, "chat")
	if err != nil {
		return err
	}
	// Answers with sources are Sovereign's own; anything else for an
	// upstream that serves /responses is relayed.
	if m.Relay != nil && m.Has("responses") && !peek.Grounded {
		return s.relay(w, r, m, "/responses", body, peek)
	}
	var req openai.ResponsesRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return err
	}
	ctx, cancel := withTimeout(r)
	defer cancel()
	t, err := s.startTurn(ctx, w.Header(), m, &req)
	if err != nil {
		return err
	}
	defer t.gen.Close()
	if !req.Stream {
		resp, err := t.whole(ctx)
		if err != nil {
			return err
		}
		return wire.JSON(w, http.StatusOK, resp)
	}
	b, st, gen := t.b, t.gen.Streams[0], t.gen
	first, err := st.Recv()
	if err != nil {
		return err
	}
	out := wire.StartSSE(w)
	send := func(evs []openai.ResponseEvent) error {
		for _, e := range evs {
			data, err := json.Marshal(e.Data)
			if err != nil {
				return err
			}
			if err := out.Raw(e.Type, data); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(b.Start()); err != nil {
		return err
	}
	for ev := first; ; {
		if ev.Done {
			// The whole answer is evaluated before it is completed: a
			// deny ends the stream with its error in place of the
			// completion.
			if err := gen.End(); err != nil {
				return out.Fail(err)
			}
		}
		evs, err := t.add(ctx, ev)
		if err != nil {
			// The API error's message, not err's text: a store's error
			// (the database down while citations are kept) names its
			// database.
			e := apierr.From(err)
			send([]openai.ResponseEvent{b.Fail(string(e.Code), e.Message)})
			return err
		}
		if err := send(evs); err != nil {
			return err // the client went away; closing the stream cancels generation
		}
		if ev.Done {
			break
		}
		if ev, err = st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			if ctx.Err() == nil {
				e := apierr.From(err)
				send([]openai.ResponseEvent{b.Fail(string(e.Code), e.Message)})
			}
			return err
		}
	}
	if t.store {
		// The client has its answer; keeping it must not depend on the
		// client staying.
		return s.keepResponse(context.WithoutCancel(ctx), b.Response(), t.items, t.history, b)
	}
	return nil
}

// turn is a Responses API request under way: its generation, the builder
// of its response, and what storing it needs.
type turn struct {
	s              *Ops
	m              catalog.Resolved
	ans            *answers.Answer
	gen            *generate.Generation
	b              *openai.ResponseBuilder
	store          bool
	items, history []openai.InputItem
}

// startTurn runs a decoded Responses API request on the model m up to its
// generation: its input items after the previous response's conversation,
// the native request fitted to the model, its sources (an answer with
// sources, or none), and the generation under the output policies. h
// takes the deprecation headers of a rerank model (nil: none wanted). The
// caller closes t.gen.
func (s *Ops) startTurn(ctx context.Context, h http.Header, m catalog.Resolved, req *openai.ResponsesRequest) (*turn, error) {
	t := &turn{s: s, m: m, store: req.Store == nil || *req.Store}
	var err error
	if t.items, err = req.Items(); err != nil {
		return nil, err
	}
	if req.PreviousResponseID != "" {
		prev, err := s.storedResponse(ctx, req.PreviousResponseID)
		if err != nil {
			return nil, apierr.WithParam(err, "previous_response_id")
		}
		if err := json.Unmarshal(prev.Conversation, &t.history); err != nil {
			return nil, fmt.Errorf("stored response %s: %w", prev.ID, err)
		}
	}
	native, err := req.Native(t.history, t.items)
	if err != nil {
		return nil, err
	}
	if err := generate.Fit(m, &native); err != nil {
		return nil, openai.ResponseParam(err)
	}
	if t.ans, err = s.prepareAnswer(ctx, h, m, native, req.Citations, req.Sources); err != nil {
		return nil, err
	}
	native = t.ans.Chat
	native.Model, native.Stream = m.ID, req.Stream
	if t.store && s.Responses == nil {
		return nil, apierr.Invalid("store", "this server keeps no responses; send \"store\": false")
	}
	if t.gen, err = s.Gen.Answer(ctx, info(ctx), m, t.ans, native); err != nil {
		return nil, openai.ResponseParam(err)
	}
	t.b = openai.NewResponseBuilder(req, m.ID)
	return t, nil
}

// add gives the builder one event, its text settled by the answer (which
// holds a citation marker back until it stands), with the citations as
// annotations before the end.
func (t *turn) add(ctx context.Context, ev inference.Event) ([]openai.ResponseEvent, error) {
	if !ev.Done {
		return t.b.Add(ev), nil
	}
	// The final event can carry the last of the text (a JSON answer ends
	// on its closing byte).
	out := t.b.Add(inference.Event{Text: ev.Text, Logprobs: ev.Logprobs})
	cits, _, err := t.ans.Finish(ctx, t.b.Response().ID, t.m.ID)
	if err != nil {
		return out, err
	}
	out = append(out, t.b.Annotate(cits)...)
	ev.Text, ev.Logprobs = "", nil
	return append(out, t.b.Add(ev)...), nil
}

// whole reads the turn's generation to its end and returns the response,
// stored when the request asks (for a request that does not stream, and a
// batch line).
func (t *turn) whole(ctx context.Context) (openai.Response, error) {
	st := t.gen.Streams[0]
	for {
		ev, err := st.Recv()
		if err != nil {
			return openai.Response{}, err
		}
		if _, err := t.add(ctx, ev); err != nil {
			return openai.Response{}, err
		}
		if ev.Done {
			break
		}
	}
	if err := t.gen.End(); err != nil {
		return openai.Response{}, err
	}
	resp := t.b.Response()
	if t.store {
		if err := t.s.keepResponse(ctx, resp, t.items, t.history, t.b); err != nil {
			return openai.Response{}, err
		}
	}
	return resp, nil
}

// keepResponse stores a finished response with its input items and the
// conversation it ends.
func (s *Ops) keepResponse(ctx context.Context, resp openai.Response, items, history []openai.InputItem, b *openai.ResponseBuilder) error {
	data, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	in, _ := json.Marshal(items)
	conv := append(append(append([]openai.InputItem{}, history...), items...), b.OutputItems()...)
	cj, _ := json.Marshal(conv)
	k, _ := KeyFrom(ctx)
	return s.kept().Put(ctx, k, responses.Stored{ID: resp.ID, Model: resp.Model,
		CreatedAt: time.Unix(resp.CreatedAt, 0), Response: data, InputItems: in, Conversation: cj})
}

// kept is the stored responses as API callers reach them, kept to the
// caller's team by the service, not here.
func (s *Ops) kept() responses.Kept { return responses.Kept{Store: s.Responses} }

// storedResponse returns the caller's team's response id; another team's
// is missing.
func (s *Ops) storedResponse(ctx context.Context, id string) (responses.Stored, error) {
	if s.Responses == nil {
		return responses.Stored{}, apierr.New(apierr.NotFound, fmt.Sprintf("no response %q: this server keeps no responses", id))
	}
	k, _ := KeyFrom(ctx)
	return s.kept().Get(ctx, k, id)
}

func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) error {
	st, err := s.storedResponse(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(st.Response)
	return err
}

func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.storedResponse(r.Context(), id); err != nil {
		return err
	}
	if err := s.kept().Delete(r.Context(), caller(r), id); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
}

// listInputItems lists a response's input items as OpenAI does: newest
// first unless order=asc, limit (1–100, default 20), after an item id.
func (s *Server) listInputItems(w http.ResponseWriter, r *http.Request) error {
	st, err := s.storedResponse(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(st.InputItems, &items); err != nil {
		return err
	}
	q := r.URL.Query()
	switch q.Get("order") {
	case "", "desc":
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	case "asc":
	default:
		return apierr.Invalid("order", "'order' is asc or desc")
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return apierr.Invalid("limit", "'limit' is a number from 1 to 100")
		}
		limit = n
	}
	if after := q.Get("after"); after != "" {
		found := false
		for i, it := range items {
			var head struct {
				ID string `json:"id"`
			}
			json.Unmarshal(it, &head)
			if head.ID == after {
				items, found = items[i+1:], true
				break
			}
		}
		if !found {
			return apierr.Invalid("after", fmt.Sprintf("no input item %q in this response", after))
		}
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	out := map[string]any{"object": "list", "data": items, "has_more": more, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		var f, l struct {
			ID string `json:"id"`
		}
		json.Unmarshal(items[0], &f)
		json.Unmarshal(items[len(items)-1], &l)
		out["first_id"], out["last_id"] = f.ID, l.ID
	} else {
		out["data"] = []any{}
	}
	return wire.JSON(w, http.StatusOK, out)
}
