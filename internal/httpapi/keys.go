package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// KeyAdmin manages keys and teams.
type KeyAdmin interface {
	CreateTeam(ctx context.Context, name string) (auth.Team, error)
	GetTeam(ctx context.Context, id string) (auth.Team, error)
	ListTeams(ctx context.Context) ([]auth.Team, error)
	CreateKey(ctx context.Context, p auth.CreateKeyParams) (auth.Key, string, error)
	GetKey(ctx context.Context, id string) (auth.Key, error)
	ListKeys(ctx context.Context, teamID string) ([]auth.Key, error)
	Revoke(ctx context.Context, id string) (auth.Key, error)
	Rotate(ctx context.Context, id string, grace time.Duration) (auth.Key, string, error)
	SetTeamCapture(ctx context.Context, id string, on bool) (auth.Team, error)
	CreateKeyAs(ctx context.Context, caller auth.Key, p auth.CreateKeyParams) (auth.Key, string, error)
	UserAdmin
}

// APIKey is the API's key object. Key holds the secret only in the
// responses that create it.
type APIKey struct {
	ID         string   `json:"id"`
	Object     string   `json:"object"`
	Name       string   `json:"name"`
	Prefix     string   `json:"prefix"`
	TeamID     string   `json:"team_id"`
	Scopes     []string `json:"scopes"`
	CreatedAt  int64    `json:"created_at"`
	ExpiresAt  *int64   `json:"expires_at"`
	LastUsedAt *int64   `json:"last_used_at"`
	RevokedAt  *int64   `json:"revoked_at"`
	// Kind is "service" (the team's), "user" (a person's own) or
	// "session" (a console sign-in's); OwnerUserID names a user's key's
	// owner.
	Kind        string `json:"kind"`
	OwnerUserID string `json:"owner_user_id,omitempty"`
	Key         string `json:"key,omitempty"`
}

func unix(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	u := t.Unix()
	return &u
}

func keyObject(k auth.Key, secret string) APIKey {
	scopes := make([]string, len(k.Scopes))
	for i, s := range k.Scopes {
		scopes[i] = string(s)
	}
	return APIKey{ID: k.ID, Object: "api_key", Name: k.Name, Prefix: k.Prefix, TeamID: k.TeamID, Scopes: scopes,
		CreatedAt: k.CreatedAt.Unix(), ExpiresAt: unix(k.ExpiresAt), LastUsedAt: unix(k.LastUsedAt), RevokedAt: unix(k.RevokedAt), Key: secret,
		Kind: k.Kind, OwnerUserID: k.OwnerUserID}
}

// Team is the API's team object.
type Team struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Name      string `json:"name"`
	CreatedAt int64  `json:"created_at"`
	// Capture says the team's request records keep their prompt and
	// output text (docs/records.md).
	Capture bool `json:"capture"`
}

func teamObject(t auth.Team) Team {
	return Team{ID: t.ID, Object: "team", Name: t.Name, CreatedAt: t.CreatedAt.Unix(), Capture: t.Capture}
}

// updateTeam is PATCH /v1/teams/{id} (admin): {"capture": true|false}.
func (s *Server) updateTeam(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Capture *bool `json:"capture"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	if req.Capture == nil {
		return apierr.Invalid("capture", "'capture' is required (true or false)")
	}
	t, err := s.Keys.SetTeamCapture(r.Context(), r.PathValue("id"), *req.Capture)
	if err != nil {
		return err
	}
	if s.Capture != nil {
		s.Capture.Reload(r.Context())
	}
	return wire.JSON(w, http.StatusOK, teamObject(t))
}

type createKeyRequest struct {
	Name      string   `json:"name"`
	TeamID    string   `json:"team_id"`
	Scopes    []string `json:"scopes"`
	ExpiresIn *int64   `json:"expires_in"`
	// Kind: "service" (the default for an administrator: the team's key)
	// or "user" (the default for a person: their own key).
	Kind string `json:"kind"`
	// OwnerUserID makes an administrator's key a user's (kind "user").
	OwnerUserID string `json:"owner_user_id"`
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	var req createKeyRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	scopes, err := auth.NormalizeScopes(req.Scopes)
	if err != nil {
		return err
	}
	caller, _ := KeyFrom(r.Context())
	p := auth.CreateKeyParams{Name: req.Name, TeamID: req.TeamID, Scopes: scopes, Kind: req.Kind, OwnerUserID: req.OwnerUserID}
	if p.TeamID == "" {
		p.TeamID = caller.TeamID
	}
	if p.OwnerUserID != "" && p.Kind == "" {
		p.Kind = auth.KindUser
	}
	if p.Kind == auth.KindSession {
		return apierr.Invalid("kind", "a console sign-in's key is made by signing in")
	}
	if req.ExpiresIn != nil {
		if *req.ExpiresIn <= 0 {
			return apierr.Invalid("expires_in", "'expires_in' must be a positive number of seconds")
		}
		t := time.Now().Add(time.Duration(*req.ExpiresIn) * time.Second)
		p.ExpiresAt = &t
	}
	if req.Name == "" {
		return apierr.Invalid("name", "'name' is required")
	}
	k, secret, err := s.Keys.CreateKeyAs(r.Context(), caller, p)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusCreated, keyObject(k, secret))
}

// visibleKey fetches key id when the caller may see it: admins see every
// key, others only their team's (anything else is not found, so key ids of
// other teams are not disclosed).
func (s *Server) visibleKey(r *http.Request, id string) (auth.Key, error) {
	k, err := s.Keys.GetKey(r.Context(), id)
	if err != nil {
		return k, err
	}
	caller, _ := KeyFrom(r.Context())
	if !auth.HasScope(caller, auth.ScopeAdmin) && k.TeamID != caller.TeamID {
		return k, apierr.New(apierr.NotFound, fmt.Sprintf("no API key %q", id))
	}
	return k, nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	caller, _ := KeyFrom(r.Context())
	team := r.URL.Query().Get("team_id")
	if !auth.HasScope(caller, auth.ScopeAdmin) {
		if team != "" && team != caller.TeamID {
			return &apierr.Error{Code: apierr.PermissionDenied, Message: "only admin keys can list other teams' keys"}
		}
		team = caller.TeamID
	}
	keys, err := s.Keys.ListKeys(r.Context(), team)
	if err != nil {
		return err
	}
	data := make([]APIKey, 0, len(keys))
	for _, k := range keys {
		data = append(data, keyObject(k, ""))
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request) error {
	k, err := s.visibleKey(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, keyObject(k, ""))
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	k, err := s.Keys.Revoke(r.Context(), id)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, keyObject(k, ""))
}

type rotateRequest struct {
	GraceSeconds *int64 `json:"grace_seconds"`
}

func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request) error {
	var req rotateRequest
	if r.ContentLength != 0 {
		if err := openai.Decode(r.Body, &req); err != nil {
			return err
		}
	}
	grace := 24 * time.Hour
	if req.GraceSeconds != nil {
		if *req.GraceSeconds < 0 {
			return apierr.Invalid("grace_seconds", "'grace_seconds' must not be negative")
		}
		grace = time.Duration(*req.GraceSeconds) * time.Second
		if grace == 0 {
			grace = -1 // the API's 0 is "at once"; the service's 0 is its default
		}
	}
	id := r.PathValue("id")
	k, secret, err := s.Keys.Rotate(r.Context(), id, grace)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusCreated, keyObject(k, secret))
}

type createTeamRequest struct {
	Name string `json:"name"`
}

func (s *Server) createTeam(w http.ResponseWriter, r *http.Request) error {
	var req createTeamRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return apierr.Invalid("name", "'name' is required")
	}
	t, err := s.Keys.CreateTeam(r.Context(), req.Name)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusCreated, teamObject(t))
}

func (s *Server) listTeams(w http.ResponseWriter, r *http.Request) error {
	teams, err := s.Keys.ListTeams(r.Context())
	if err != nil {
		return err
	}
	data := make([]Team, 0, len(teams))
	for _, t := range teams {
		data = append(data, teamObject(t))
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
