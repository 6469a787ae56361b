package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// The request log: GET /v1/logs, /v1/logs/{id} and /v1/logs/export. A key
// reads its own team's records; an admin key reads every team's.

// LogObject is the API's request record.
type LogObject struct {
	Object string `json:"object"`
	records.Record
}

func logObject(r records.Record) LogObject { return LogObject{Object: "request_log", Record: r} }

func (s *Server) recordsOn() error {
	if s.RecordStore == nil {
		return apierr.New(apierr.NotFound, "this server keeps no request log")
	}
	return nil
}

// logs is the request log as API callers read it: scoped to the caller's
// team by the reader, not here.
func (s *Server) logs() records.Reader { return records.Reader{Store: s.RecordStore} }

// logFilter reads the filters of the log routes.
func logFilter(r *http.Request) (records.Filter, error) {
	q := r.URL.Query()
	f := records.Filter{TeamID: q.Get("team_id"), Model: q.Get("model"), KeyID: q.Get("key_id"),
		Route: q.Get("route"), User: q.Get("user"), After: q.Get("after"), Limit: 20}
	if err := wire.ListParams(q, &f.Limit, wire.Bound{Name: "since", Dst: &f.Since}, wire.Bound{Name: "until", Dst: &f.Until}); err != nil {
		return f, err
	}
	if v := q.Get("status"); v != "" {
		var n int
		var err error
		if c, ok := strings.CutSuffix(strings.ToLower(v), "xx"); ok {
			n, err = strconv.Atoi(c)
			if n < 1 || n > 5 {
				err = errors.New("class")
			}
		} else if n, err = strconv.Atoi(v); err == nil && (n < 100 || n > 599) {
			err = errors.New("range")
		}
		if err != nil {
			return f, apierr.Invalid("status", "'status' is an HTTP status (404) or a class (4xx)")
		}
		f.Status = n
	}
	return f, nil
}

func (s *Server) listLogs(w http.ResponseWriter, r *http.Request) error {
	if err := s.recordsOn(); err != nil {
		return err
	}
	f, err := logFilter(r)
	if err != nil {
		return err
	}
	list, more, err := s.logs().List(r.Context(), caller(r), f)
	if err != nil {
		return err
	}
	data := make([]LogObject, len(list))
	for i, rec := range list {
		data[i] = logObject(rec)
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(v LogObject) string { return v.ID }))
}

// pathRecord is the record the path names, if the key may read it
// (another team's is missing).
func (s *Server) pathRecord(r *http.Request) (records.Record, error) {
	if err := s.recordsOn(); err != nil {
		return records.Record{}, err
	}
	return s.logs().Get(r.Context(), caller(r), r.PathValue("id"))
}

func (s *Server) getLog(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.pathRecord(r)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, logObject(rec))
}

// exportLogs streams every record matching the filters as NDJSON, newest
// first, for a SIEM.
func (s *Server) exportLogs(w http.ResponseWriter, r *http.Request) error {
	if err := s.recordsOn(); err != nil {
		return err
	}
	f, err := logFilter(r)
	if err != nil {
		return err
	}
	f.Limit = 500
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	for {
		list, more, err := s.logs().List(r.Context(), caller(r), f)
		if err != nil {
			return err
		}
		for _, rec := range list {
			if err := enc.Encode(logObject(rec)); err != nil {
				return err
			}
		}
		rc.Flush()
		if !more || len(list) == 0 {
			return nil
		}
		f.After, f.BeforeSeq = "", list[len(list)-1].Seq
	}
}

// usage serves GET /v1/usage: requests, errors and tokens over a time
// range (since, until; default the last 30 days), grouped by model, key,
// team, user or day, from the request log. A key sees its own team's; an
// admin key every team's (team_id narrows).
func (s *Server) usage(w http.ResponseWriter, r *http.Request) error {
	if err := s.recordsOn(); err != nil {
		return err
	}
	f, err := logFilter(r)
	if err != nil {
		return err
	}
	group := r.URL.Query().Get("group_by")
	switch group {
	case "":
		group = records.ByModel
	case records.ByModel, records.ByKey, records.ByTeam, records.ByUser, records.ByDay:
	default:
		return apierr.Invalid("group_by", "'group_by' is one of model, key, team, user, day")
	}
	if f.Since.IsZero() {
		f.Since = time.Now().Add(-30 * 24 * time.Hour).UTC().Truncate(time.Second)
	}
	rows, err := s.logs().Usage(r.Context(), caller(r), f, group)
	if err != nil {
		return err
	}
	out := map[string]any{"object": "usage", "group_by": group, "since": f.Since.Unix(), "until": nil, "data": rows}
	if !f.Until.IsZero() {
		out["until"] = f.Until.Unix()
	}
	return wire.JSON(w, http.StatusOK, out)
}

// logProof serves GET /v1/logs/{id}/proof: the RFC 6962 inclusion proof
// of the record in the tree of every record stored now (docs/records.md).
func (s *Server) logProof(w http.ResponseWriter, r *http.Request) error {
	if err := s.recordsOn(); err != nil {
		return err
	}
	var c *records.StoredCheckpoint
	var checkpoint any
	if v := r.URL.Query().Get("checkpoint"); v != "" {
		// The proof in a stored checkpoint's tree, whose root a party may
		// have kept since.
		id, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			return apierr.Invalid("checkpoint", "'checkpoint' must be a checkpoint id (GET /v1/logs/checkpoints)")
		}
		got, err := s.logs().Checkpoint(r.Context(), id)
		if err != nil {
			return err
		}
		c, checkpoint = &got, got.ID
	}
	id := r.PathValue("id")
	rec, in, err := s.logs().Prove(r.Context(), caller(r), id, c)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "log.inclusion_proof", "id": rec.ID, "seq": in.Seq, "leaf_index": in.LeafIndex,
		"leaf_hash": in.LeafHash, "tree_size": in.TreeSize, "root": in.Root, "proof": in.Proof, "checkpoint": checkpoint,
		"hasher": "RFC 6962, SHA-256; the leaf is the record's hash"})
}

// listCheckpoints is GET /v1/logs/checkpoints: the stored Merkle
// checkpoints of the whole log, newest first (roots reveal nothing of any
// team's records).
func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) error {
	if err := s.recordsOn(); err != nil {
		return err
	}
	limit := 20
	if err := wire.ListParams(r.URL.Query(), &limit); err != nil {
		return err
	}
	list, err := s.logs().Checkpoints(r.Context(), limit)
	if err != nil {
		return err
	}
	data := make([]map[string]any, 0, len(list))
	for _, c := range list {
		data = append(data, map[string]any{"object": "log.checkpoint", "id": c.ID, "created_at": c.CreatedAt.Unix(), "first_seq": c.FirstSeq,
			"last_seq": c.LastSeq, "tree_size": c.Size, "root": c.Root})
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
