package app

import (
	"log/slog"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/config"
)

// scimHandler serves /scim/v2/ (SCIM 2.0 provisioning of users and groups
// by an identity provider; docs/scim.md), or nil where it is not built.
func (a *App) scimHandler(cfg config.Config, log *slog.Logger) http.Handler {
	_ = cfg
	_ = log
	return nil
}
