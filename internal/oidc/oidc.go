// Package oidc is single sign-on with OpenID Connect providers (Okta,
// Entra ID, Keycloak, Google, Ory Hydra…): the authorization code flow with
// PKCE, the ID token's verification (coreos/go-oidc), the claims a
// provider's configuration maps to a person, and RP-initiated logout. The
// console drives it (internal/console); what a person may then do is
// internal/auth's (auth.Service.SignInExternal, the group rules).
package oidc

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// ProviderConfig is one provider in the configuration (YAML `oidc:`;
// docs/users.md).
type ProviderConfig struct {
	// Name identifies the provider in URLs (/console/sso/<name>) and in the
	// memberships it makes ("oidc:<name>"): lower-case letters, digits
	// and dashes.
	Name string `yaml:"name"`
	// DisplayName is the sign-in button's text ("Sign in with …";
	// default: Name).
	DisplayName string `yaml:"display_name"`
	// Issuer is the provider's issuer URL; its discovery document is at
	// Issuer + "/.well-known/openid-configuration".
	Issuer string `yaml:"issuer"`
	// ClientID and ClientSecret are the console's registration at the
	// provider; ClientSecretEnv names an environment variable holding the
	// secret instead (keeps it out of the file).
	ClientID        string `yaml:"client_id"`
	ClientSecret    string `yaml:"client_secret"`
	ClientSecretEnv string `yaml:"client_secret_env"`
	// Scopes asked for (default openid, email, profile); add the one your
	// provider needs for a groups claim ("groups" at Okta and Hydra).
	Scopes []string `yaml:"scopes"`
	// The claims read (defaults: email, name, groups). GroupsClaim may
	// hold a list of strings or one string.
	EmailClaim  string `yaml:"email_claim"`
	NameClaim   string `yaml:"name_claim"`
	GroupsClaim string `yaml:"groups_claim"`
	// RedirectURL is the callback registered at the provider (default:
	// the console's own URL, as the browser reached it, +
	// /console/sso/<name>/callback).
	RedirectURL string `yaml:"redirect_url"`
	// SessionRefresh bounds a console session signed in through this
	// provider (default 1h): then the person signs in again, and their
	// groups, and so their teams and roles, are read again.
	SessionRefresh time.Duration `yaml:"session_refresh"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// DefaultSessionRefresh is ProviderConfig.SessionRefresh's default.
const DefaultSessionRefresh = time.Hour

// Check validates a provider's configuration and fills in its defaults.
func (c *ProviderConfig) Check(getenv func(string) string) error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("oidc provider name %q: lower-case letters, digits and dashes, at most 40", c.Name)
	}
	u, err := url.Parse(c.Issuer)
	if c.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("oidc provider %s: issuer %q is not an http(s) URL", c.Name, c.Issuer)
	}
	if c.ClientID == "" {
		return fmt.Errorf("oidc provider %s: client_id is required", c.Name)
	}
	if c.ClientSecretEnv != "" {
		if c.ClientSecret = getenv(c.ClientSecretEnv); c.ClientSecret == "" {
			return fmt.Errorf("oidc provider %s: client_secret_env names %s, which is empty", c.Name, c.ClientSecretEnv)
		}
	}
	c.defaults()
	return nil
}

// defaults fills in what a configuration leaves out.
func (c *ProviderConfig) defaults() {
	if c.DisplayName == "" {
		c.DisplayName = c.Name
	}
	if len(c.Scopes) == 0 {
		c.Scopes = []string{gooidc.ScopeOpenID, "email", "profile"}
	}
	if !containsString(c.Scopes, gooidc.ScopeOpenID) {
		c.Scopes = append([]string{gooidc.ScopeOpenID}, c.Scopes...)
	}
	if c.EmailClaim == "" {
		c.EmailClaim = "email"
	}
	if c.NameClaim == "" {
		c.NameClaim = "name"
	}
	if c.GroupsClaim == "" {
		c.GroupsClaim = "groups"
	}
	if c.SessionRefresh <= 0 {
		c.SessionRefresh = DefaultSessionRefresh
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Provider signs people in at one OpenID Provider. Its discovery document
// is read at first use (and again after a failure), so a provider that is
// down when the server starts does not stop the server.
type Provider struct {
	Config ProviderConfig
	client *http.Client

	mu         sync.Mutex
	op         *gooidc.Provider
	endSession string
}

// New returns a Provider for a checked configuration; client makes its
// requests to the provider (nil: http.DefaultClient).
func New(cfg ProviderConfig, client *http.Client) *Provider {
	if client == nil {
		client = http.DefaultClient
	}
	cfg.defaults()
	return &Provider{Config: cfg, client: client}
}

// discovery bounds the reading of a provider's discovery document.
const discovery = 10 * time.Second

func (p *Provider) provider(ctx context.Context) (*gooidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.op != nil {
		return p.op, nil
	}
	ctx, cancel := context.WithTimeout(gooidc.ClientContext(ctx, p.client), discovery)
	defer cancel()
	op, err := gooidc.NewProvider(ctx, p.Config.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc provider %s: reading %s/.well-known/openid-configuration: %w", p.Config.Name, strings.TrimSuffix(p.Config.Issuer, "/"), err)
	}
	var extra struct {
		EndSession string `json:"end_session_endpoint"`
	}
	_ = op.Claims(&extra)
	p.op, p.endSession = op, extra.EndSession
	return op, nil
}

func (p *Provider) oauth(op *gooidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: p.Config.ClientID, ClientSecret: p.Config.ClientSecret, Endpoint: op.Endpoint(),
		RedirectURL: redirect, Scopes: p.Config.Scopes}
}

// Pending is what a browser carries between the start of a sign-in and
// the provider's callback: the state (CSRF), the nonce (binds the ID
// token to this sign-in) and the PKCE verifier (binds the code to it).
type Pending struct {
	Provider string `json:"p"`
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
}

// Start begins a sign-in: the provider's authorization URL to send the
// browser to, and what the browser must bring back.
func (p *Provider) Start(ctx context.Context, redirect, next string) (string, Pending, error) {
	op, err := p.provider(ctx)
	if err != nil {
		return "", Pending{}, err
	}
	pd := Pending{Provider: p.Config.Name, State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: next}
	u := p.oauth(op, redirect).AuthCodeURL(pd.State, gooidc.Nonce(pd.Nonce), oauth2.S256ChallengeOption(pd.Verifier))
	return u, pd, nil
}

// Result is a finished sign-in: who the provider says the person is, and
// its ID token (for logout).
type Result struct {
	Identity auth.ExternalIdentity
	IDToken  string
}

// ErrState is a callback whose state is not the one the browser started
// with (a forged or replayed callback).
var ErrState = errors.New("oidc: the sign-in's state does not match; start again")

// Finish completes a sign-in at the callback: checks the state, exchanges
// the code (with the PKCE verifier), verifies the ID token (signature,
// issuer, audience, expiry, nonce) and reads its claims (the userinfo
// endpoint's too, where the ID token lacks the e-mail address).
func (p *Provider) Finish(ctx context.Context, redirect, code, state string, pd Pending) (Result, error) {
	if pd.State == "" || subtle.ConstantTimeCompare([]byte(state), []byte(pd.State)) != 1 || pd.Provider != p.Config.Name {
		return Result{}, ErrState
	}
	op, err := p.provider(ctx)
	if err != nil {
		return Result{}, err
	}
	ctx = gooidc.ClientContext(ctx, p.client)
	cfg := p.oauth(op, redirect)
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(pd.Verifier))
	if err != nil {
		return Result{}, fmt.Errorf("oidc provider %s: exchanging the code: %w", p.Config.Name, err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Result{}, fmt.Errorf("oidc provider %s: the token response has no id_token", p.Config.Name)
	}
	idt, err := op.Verifier(&gooidc.Config{ClientID: p.Config.ClientID}).Verify(ctx, raw)
	if err != nil {
		return Result{}, fmt.Errorf("oidc provider %s: the ID token: %w", p.Config.Name, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pd.Nonce)) != 1 {
		return Result{}, fmt.Errorf("oidc provider %s: the ID token's nonce is not this sign-in's", p.Config.Name)
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return Result{}, fmt.Errorf("oidc provider %s: the ID token's claims: %w", p.Config.Name, err)
	}
	if _, ok := claims[p.Config.EmailClaim]; !ok {
		if ui, err := op.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil {
			more := map[string]any{}
			if ui.Claims(&more) == nil {
				for k, v := range more {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		}
	}
	id := auth.ExternalIdentity{Provider: p.Config.Name, Subject: idt.Subject, Email: str(claims[p.Config.EmailClaim]),
		Name: str(claims[p.Config.NameClaim]), Groups: strs(claims[p.Config.GroupsClaim])}
	if v, ok := claims["email_verified"].(bool); ok {
		id.EmailVerified = &v
	}
	return Result{Identity: id, IDToken: raw}, nil
}

// LogoutURL is where to send the browser to sign out at the provider too
// (RP-initiated logout 1.0), or "" when the provider has no
// end_session_endpoint.
func (p *Provider) LogoutURL(ctx context.Context, idToken, after string) string {
	if _, err := p.provider(ctx); err != nil || p.endSession == "" {
		return ""
	}
	u, err := url.Parse(p.endSession)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("client_id", p.Config.ClientID)
	if idToken != "" {
		q.Set("id_token_hint", idToken)
	}
	if after != "" {
		q.Set("post_logout_redirect_uri", after)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// strs reads a groups claim: a list of strings, or one string.
func strs(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func random() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic("oidc: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
