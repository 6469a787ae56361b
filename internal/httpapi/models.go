package httpapi

import (
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/models"
)

// Model is the API's model object: OpenAI's fields plus what a platform
// team needs to choose a model.
type Model struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	Created       int64    `json:"created"`
	OwnedBy       string   `json:"owned_by"`
	Family        string   `json:"family"`
	Capabilities  []string `json:"capabilities"`
	ContextLength uint64   `json:"context_length"`
	Parameters    uint64   `json:"parameters"`
	Quantization  string   `json:"quantization"`
	Size          int64    `json:"size"`
	// Status is "available" (installed, not loaded), "loading", "ready" or
	// "failed"; StatusReason explains a failure.
	Status       string `json:"status"`
	StatusReason string `json:"status_reason,omitempty"`
}

func (s *Server) modelObject(m models.Manifest, status map[string][2]string) Model {
	st := [2]string{"available", ""}
	if v, ok := status[m.ID]; ok {
		st = v
	}
	return Model{ID: m.ID, Object: "model", Created: m.CreatedAt.Unix(), OwnedBy: "sovereign", Family: m.Family,
		Capabilities: m.Capabilities, ContextLength: m.ContextLength, Parameters: m.Parameters,
		Quantization: m.Quantization, Size: m.Size, Status: st[0], StatusReason: st[1]}
}

func (s *Server) statuses() map[string][2]string {
	out := map[string][2]string{}
	if s.Status == nil {
		return out
	}
	for _, st := range s.Status() {
		out[st.ID] = [2]string{st.State, st.Reason}
	}
	return out
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Models.List()
	if err != nil {
		return err
	}
	st := s.statuses()
	data := make([]Model, 0, len(list))
	for _, m := range list {
		data = append(data, s.modelObject(m, st))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	m, err := s.model(id, "")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.modelObject(m, s.statuses()))
}
