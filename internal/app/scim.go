package app

import (
	"log/slog"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/scim"
)

// scimHandler serves /scim/v2/ (SCIM 2.0 provisioning of users and groups
// by an identity provider; docs/scim.md): the key's scim scope is checked
// there, and group membership becomes roles in teams by cfg.GroupRules.
func (a *App) scimHandler(cfg config.Config, log *slog.Logger) http.Handler {
	svc := &scim.Service{Auth: a.Keys, Users: a.DB, Store: a.DB, Rules: cfg.GroupRules, Log: log}
	return &scim.Handler{Service: svc, Auth: a.Keys}
}
