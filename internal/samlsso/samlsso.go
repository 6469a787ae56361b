// Package samlsso is single sign-on with SAML 2.0 identity providers
// (Entra ID, Okta, ADFS, Keycloak, Shibboleth…), the second protocol
// beside OpenID Connect (internal/oidc): SP-initiated sign-in with the
// HTTP-Redirect binding out and HTTP-POST back, the response's signature,
// audience, lifetime and InResponseTo checked by crewjam/saml, and the
// attributes a provider's configuration maps to a person. What the person
// may then do is internal/auth's (SignInExternal, the group rules).
package samlsso

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/crewjam/saml"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// ProviderConfig is one SAML identity provider in the configuration (YAML
// `saml:`; docs/users.md).
type ProviderConfig struct {
	// Name identifies the provider in URLs (/console/saml/<name>) and in
	// memberships ("saml:<name>").
	Name        string `yaml:"name"`
	DisplayName string `yaml:"display_name"`
	// MetadataURL (or MetadataFile) is the identity provider's metadata.
	MetadataURL  string `yaml:"metadata_url"`
	MetadataFile string `yaml:"metadata_file"`
	// CertFile and KeyFile are the service provider's certificate and key
	// (PEM), published in its metadata (the provider may encrypt
	// assertions to it). Without them a key pair is made at each start.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// The attributes read, by Name or FriendlyName (defaults: the e-mail
	// address from mail, email or the claims URI, falling back to an
	// e-mail-shaped NameID; the name from displayName, cn or name; the
	// groups from groups, memberOf or eduPersonAffiliation).
	EmailAttribute  string `yaml:"email_attribute"`
	NameAttribute   string `yaml:"name_attribute"`
	GroupsAttribute string `yaml:"groups_attribute"`
	// SessionRefresh bounds a console session signed in through this
	// provider (default 1h), as for OpenID Connect.
	SessionRefresh time.Duration `yaml:"session_refresh"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Check validates a provider's configuration and fills its defaults.
func (c *ProviderConfig) Check() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("saml provider name %q: lower-case letters, digits and dashes, at most 40", c.Name)
	}
	if (c.MetadataURL == "") == (c.MetadataFile == "") {
		return fmt.Errorf("saml provider %s: one of metadata_url and metadata_file is required", c.Name)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("saml provider %s: cert_file and key_file go together", c.Name)
	}
	c.defaults()
	return nil
}

func (c *ProviderConfig) defaults() {
	if c.DisplayName == "" {
		c.DisplayName = c.Name
	}
	if c.SessionRefresh <= 0 {
		c.SessionRefresh = time.Hour
	}
}

// Provider signs people in at one SAML identity provider. The provider's
// metadata is read at first use (and again after a failure).
type Provider struct {
	Config ProviderConfig
	client *http.Client

	mu   sync.Mutex
	idp  *saml.EntityDescriptor
	key  crypto.Signer
	cert *x509.Certificate
}

// New returns a Provider for a checked configuration; client reads the
// metadata URL (nil: http.DefaultClient).
func New(cfg ProviderConfig, client *http.Client) (*Provider, error) {
	cfg.defaults()
	if client == nil {
		client = http.DefaultClient
	}
	p := &Provider{Config: cfg, client: client}
	if cfg.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("saml provider %s: %w", cfg.Name, err)
		}
		signer, ok := pair.PrivateKey.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("saml provider %s: the key cannot sign", cfg.Name)
		}
		if p.cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("saml provider %s: %w", cfg.Name, err)
		}
		p.key = signer
		return p, nil
	}
	// A key pair of this start's own: enough where assertions are signed
	// by the provider and not encrypted (the usual set-up).
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Sovereign SAML " + cfg.Name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, err
	}
	p.key = k
	p.cert, err = x509.ParseCertificate(der)
	return p, err
}

func (p *Provider) metadata(ctx context.Context) (*saml.EntityDescriptor, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idp != nil {
		return p.idp, nil
	}
	var b []byte
	var err error
	if p.Config.MetadataFile != "" {
		b, err = os.ReadFile(p.Config.MetadataFile)
	} else {
		b, err = p.fetch(ctx, p.Config.MetadataURL)
	}
	var md *saml.EntityDescriptor
	if err == nil {
		md, err = parseMetadata(b)
	}
	if err != nil {
		return nil, fmt.Errorf("saml provider %s: reading the identity provider's metadata: %w", p.Config.Name, err)
	}
	p.idp = md
	return md, nil
}

// sp is the service provider as seen at base (the console's URL).
func (p *Provider) sp(ctx context.Context, base string) (*saml.ServiceProvider, error) {
	idp, err := p.metadata(ctx)
	if err != nil {
		return nil, err
	}
	root := strings.TrimSuffix(base, "/") + "/console/saml/" + p.Config.Name
	md, _ := url.Parse(root + "/metadata")
	acs, _ := url.Parse(root + "/acs")
	return &saml.ServiceProvider{EntityID: md.String(), Key: p.key, Certificate: p.cert, MetadataURL: *md, AcsURL: *acs,
		IDPMetadata: idp, AuthnNameIDFormat: saml.UnspecifiedNameIDFormat}, nil
}

// Pending is what the browser carries from the start to the assertion:
// the request's id (the response must answer it) and where to go next.
type Pending struct {
	Provider  string `json:"p"`
	RequestID string `json:"r"`
	Next      string `json:"x"`
}

// Start begins a sign-in: the provider's URL to send the browser to.
func (p *Provider) Start(ctx context.Context, base, next string) (string, Pending, error) {
	sp, err := p.sp(ctx, base)
	if err != nil {
		return "", Pending{}, err
	}
	req, err := sp.MakeAuthenticationRequest(sp.GetSSOBindingLocation(saml.HTTPRedirectBinding), saml.HTTPRedirectBinding, saml.HTTPPostBinding)
	if err != nil {
		return "", Pending{}, fmt.Errorf("saml provider %s: %w", p.Config.Name, err)
	}
	u, err := req.Redirect("", sp)
	if err != nil {
		return "", Pending{}, fmt.Errorf("saml provider %s: %w", p.Config.Name, err)
	}
	return u.String(), Pending{Provider: p.Config.Name, RequestID: req.ID, Next: next}, nil
}

// ErrResponse is a response that is not valid for this sign-in (the
// reason is logged, not shown: crewjam/saml's details may help an
// attacker).
var ErrResponse = errors.New("saml: the identity provider's response is not valid for this sign-in")

// Finish reads the provider's POSTed response at the assertion consumer
// service: signature, audience, lifetime and InResponseTo (the request
// pd started) checked, then the person's attributes.
func (p *Provider) Finish(r *http.Request, base string, pd Pending) (auth.ExternalIdentity, error) {
	if pd.RequestID == "" || pd.Provider != p.Config.Name {
		return auth.ExternalIdentity{}, ErrResponse
	}
	sp, err := p.sp(r.Context(), base)
	if err != nil {
		return auth.ExternalIdentity{}, err
	}
	a, err := sp.ParseResponse(r, []string{pd.RequestID})
	if err != nil {
		var ie *saml.InvalidResponseError
		if errors.As(err, &ie) {
			return auth.ExternalIdentity{}, fmt.Errorf("%w: %v", ErrResponse, ie.PrivateErr)
		}
		return auth.ExternalIdentity{}, fmt.Errorf("%w: %v", ErrResponse, err)
	}
	id := auth.ExternalIdentity{Provider: "saml:" + p.Config.Name, Source: "saml:" + p.Config.Name}
	if a.Subject != nil && a.Subject.NameID != nil {
		id.Subject = a.Subject.NameID.Value
	}
	values := func(names ...string) []string {
		for _, st := range a.AttributeStatements {
			for _, at := range st.Attributes {
				for _, n := range names {
					if n != "" && (strings.EqualFold(at.Name, n) || strings.EqualFold(at.FriendlyName, n)) {
						out := make([]string, 0, len(at.Values))
						for _, v := range at.Values {
							out = append(out, strings.TrimSpace(v.Value))
						}
						return out
					}
				}
			}
		}
		return nil
	}
	first := func(v []string) string {
		if len(v) == 0 {
			return ""
		}
		return v[0]
	}
	c := p.Config
	id.Email = first(values(c.EmailAttribute, "mail", "email", "emailaddress",
		"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress", "urn:oid:0.9.2342.19200300.100.1.3"))
	if id.Email == "" && strings.Contains(id.Subject, "@") {
		id.Email = id.Subject
	}
	id.Name = first(values(c.NameAttribute, "displayName", "http://schemas.microsoft.com/identity/claims/displayname", "cn", "name"))
	id.Groups = values(c.GroupsAttribute, "groups", "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups", "memberOf", "eduPersonAffiliation")
	if id.Subject == "" {
		return auth.ExternalIdentity{}, fmt.Errorf("%w: no NameID", ErrResponse)
	}
	return id, nil
}

// Metadata is the service provider's metadata at base, for registering
// the console at the identity provider.
func (p *Provider) Metadata(ctx context.Context, base string) ([]byte, error) {
	sp, err := p.sp(ctx, base)
	if err != nil {
		return nil, err
	}
	return xml.MarshalIndent(sp.Metadata(), "", "  ")
}

// maxMetadata bounds a metadata document (federations' aggregates are
// not what one provider's URL serves).
const maxMetadata = 4 << 20

func (p *Provider) fetch(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	res, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxMetadata+1))
	if err == nil && len(b) > maxMetadata {
		err = fmt.Errorf("GET %s: more than %d bytes", u, maxMetadata)
	}
	return b, err
}

// parseMetadata reads an EntityDescriptor, or the first of an
// EntitiesDescriptor's that describes an identity provider.
func parseMetadata(b []byte) (*saml.EntityDescriptor, error) {
	var one saml.EntityDescriptor
	if err := xml.Unmarshal(b, &one); err == nil && len(one.IDPSSODescriptors) > 0 {
		return &one, nil
	}
	var many saml.EntitiesDescriptor
	if err := xml.Unmarshal(b, &many); err != nil {
		return nil, fmt.Errorf("not SAML metadata: %w", err)
	}
	for i := range many.EntityDescriptors {
		if len(many.EntityDescriptors[i].IDPSSODescriptors) > 0 {
			return &many.EntityDescriptors[i], nil
		}
	}
	return nil, errors.New("the metadata describes no identity provider")
}
