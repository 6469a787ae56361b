package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// ModelCatalog is the deployment's models: resolution for every inference
// request, the catalog views, administration and lifecycle.
type ModelCatalog interface {
	Resolve(ctx context.Context, name string) (catalog.Resolved, error)
	List(ctx context.Context) []catalog.Model
	Get(ctx context.Context, id string) (catalog.Model, error)
	Create(ctx context.Context, s catalog.Spec) (catalog.Model, error)
	Update(ctx context.Context, id string, patch []byte) (catalog.Model, error)
	Delete(ctx context.Context, id string) error
	Load(ctx context.Context, id string) (catalog.Model, error)
	Unload(ctx context.Context, id string) (catalog.Model, error)
	Record(id string, o catalog.Observation)
}

// model resolves the model a request names, checks that it offers
// capability and has not been retired, and sets the Deprecation, Sunset
// and Link headers of a deprecated model.
func (s *Server) model(w http.ResponseWriter, r *http.Request, name, capability string) (catalog.Resolved, error) {
	return s.modelFor(r.Context(), w.Header(), name, capability)
}

// modelFor is model for a caller without a request (a batch line): h
// takes the deprecation headers (nil: none wanted).
func (s *Ops) modelFor(ctx context.Context, h http.Header, name, capability string) (catalog.Resolved, error) {
	if name == "" {
		return catalog.Resolved{}, apierr.Invalid("model", "'model' is required")
	}
	m, err := s.Gen.Resolve(ctx, info(ctx), name, capability)
	if d := m.Deprecation; d != nil && h != nil {
		// Said with a capability refusal and a retirement too.
		if d.DeprecatedAt != nil {
			h.Set("Deprecation", fmt.Sprintf("@%d", d.DeprecatedAt.Unix()))
		} else {
			h.Set("Deprecation", "true")
		}
		if d.Sunset != nil {
			h.Set("Sunset", d.Sunset.UTC().Format(http.TimeFormat))
		}
		if d.Replacement != "" {
			h.Set("Link", fmt.Sprintf(`</v1/models/%s>; rel="successor-version"`, d.Replacement))
		}
	}
	return m, err
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": s.Models.List(r.Context())})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	m, err := s.Models.Get(r.Context(), id)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, m)
}

// createModel adds a model configuration (POST /v1/models/{id}).
func (s *Server) createModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var spec catalog.Spec
	if err := catalog.DecodeSpec(body, &spec); err != nil {
		return err
	}
	if spec.ID != "" && spec.ID != id {
		return apierr.Invalid("id", fmt.Sprintf("the body's id %q differs from the path's %q", spec.ID, id))
	}
	spec.ID = id
	if spec.APIKeyEnv != "" {
		return apierr.Invalid("api_key_env", "'api_key_env' is for the configuration file; send 'api_key' through the API")
	}
	m, err := s.Models.Create(r.Context(), spec)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusCreated, m)
}

// updateModel applies a JSON merge patch (PATCH /v1/models/{id}).
func (s *Server) updateModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	body, err := readBody(r)
	if err != nil {
		return err
	}
	m, err := s.Models.Update(r.Context(), id, body)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, m)
}

// readBody reads a request body that must be a JSON object.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return nil, apierr.New(apierr.BodyTooLarge, fmt.Sprintf("the request body exceeds the limit of %d bytes", maxErr.Limit))
	}
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := openai.Decode(bytes.NewReader(body), &probe); err != nil {
		return nil, err
	}
	return body, nil
}

func (s *Server) deleteModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.Models.Delete(r.Context(), id); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": id, "object": "model", "deleted": true})
}

func (s *Server) loadModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	m, err := s.Models.Load(r.Context(), id)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, m)
}

func (s *Server) unloadModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	m, err := s.Models.Unload(r.Context(), id)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, m)
}
