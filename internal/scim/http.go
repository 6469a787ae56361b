package scim

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
)

// Prefix is where the handler is mounted.
const Prefix = "/scim/v2"

// ContentType is every answer's media type.
const ContentType = "application/scim+json"

// Authenticator resolves a bearer secret to its key (auth.Service).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (auth.Key, error)
}

// Handler serves /scim/v2: it checks the bearer key (the scim scope, or
// admin), reads the request and answers in SCIM's JSON; Service does the
// work.
type Handler struct {
	Service *Service
	Auth    Authenticator
}

// ServeHTTP routes a SCIM request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, err := h.authenticate(r)
	if err != nil {
		h.fail(w, r, "", err)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		h.fail(w, r, key.ID, notFound("no such endpoint %q", r.URL.Path))
		return
	}
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	if len(seg) > 2 {
		h.fail(w, r, key.ID, notFound("no such endpoint %q", r.URL.Path))
		return
	}
	id := ""
	if len(seg) == 2 {
		id = seg[1]
	}
	base := baseURL(r)
	ctx := r.Context()
	switch res := strings.ToLower(seg[0]); {
	case res == "serviceproviderconfig" && id == "":
		if h.method(w, r, key.ID, http.MethodGet) {
			write(w, http.StatusOK, serviceProviderConfig(base))
		}
	case res == "resourcetypes":
		if h.method(w, r, key.ID, http.MethodGet) {
			h.pick(w, r, key.ID, id, resourceTypes(base), "name")
		}
	case res == "schemas":
		if h.method(w, r, key.ID, http.MethodGet) {
			h.pick(w, r, key.ID, id, schemas(base), "id")
		}
	case res == "users" && id == ".search", res == "groups" && id == ".search", res == "bulk", res == "me", res == ".search":
		h.fail(w, r, key.ID, errorf(http.StatusNotImplemented, "", "%s is not supported (docs/scim.md)", r.URL.Path))
	case res == "users" && id == "":
		serveCollection(h, w, r, key.ID, collectionOps[UserView]{
			list: func(filter string, start, count int) ([]UserView, int, error) {
				return h.Service.ListUsers(ctx, filter, start, count)
			},
			create:   func(m map[string]any) (UserView, error) { return h.Service.CreateUser(ctx, m) },
			id:       func(u UserView) string { return u.ID },
			location: base + "/Users/",
			render:   func(u UserView, _ bool) any { return userResource(u, base) },
		})
	case res == "users":
		serveOne(h, w, r, key.ID, id, resourceOps[UserView]{
			get:    func() (UserView, error) { return h.Service.GetUser(ctx, id) },
			put:    func(m map[string]any) (UserView, error) { return h.Service.ReplaceUser(ctx, id, m) },
			patch:  func(ops []Operation) (UserView, error) { return h.Service.PatchUser(ctx, id, ops) },
			delete: func() error { return h.Service.DeleteUser(ctx, id) },
			render: func(u UserView) any { return userResource(u, base) },
		})
	case res == "groups" && id == "":
		withMembers := !excluded(r, "members")
		serveCollection(h, w, r, key.ID, collectionOps[GroupView]{
			list: func(filter string, start, count int) ([]GroupView, int, error) {
				return h.Service.ListGroups(ctx, filter, start, count, withMembers)
			},
			create:   func(m map[string]any) (GroupView, error) { return h.Service.CreateGroup(ctx, m) },
			id:       func(g GroupView) string { return g.ID },
			location: base + "/Groups/",
			// A created group is shown whole; a list without members
			// where excludedAttributes=members asks so.
			render: func(g GroupView, created bool) any { return groupResource(g, base, created || withMembers) },
		})
	case res == "groups":
		withMembers := !excluded(r, "members")
		serveOne(h, w, r, key.ID, id, resourceOps[GroupView]{
			get:    func() (GroupView, error) { return h.Service.GetGroup(ctx, id, withMembers) },
			put:    func(m map[string]any) (GroupView, error) { return h.Service.ReplaceGroup(ctx, id, m) },
			patch:  func(ops []Operation) (GroupView, error) { return h.Service.PatchGroup(ctx, id, ops) },
			delete: func() error { return h.Service.DeleteGroup(ctx, id) },
			render: func(g GroupView) any { return groupResource(g, base, withMembers) },
		})
	default:
		h.fail(w, r, key.ID, notFound("no such endpoint %q", r.URL.Path))
	}
}

// authenticate checks the bearer key and its scim scope (admin implies
// it): 401 without a valid key, 403 without the scope.
func (h *Handler) authenticate(r *http.Request) (auth.Key, error) {
	hd := r.Header.Get("Authorization")
	if hd == "" {
		return auth.Key{}, errorf(http.StatusUnauthorized, "", "an Authorization: Bearer header with an API key holding the scim scope is required")
	}
	scheme, secret, _ := strings.Cut(hd, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return auth.Key{}, errorf(http.StatusUnauthorized, "", "the Authorization header must be 'Bearer <API key>'")
	}
	key, err := h.Auth.Authenticate(r.Context(), strings.TrimSpace(secret))
	if err != nil {
		return auth.Key{}, err
	}
	if !auth.HasScope(key, auth.ScopeSCIM) {
		return auth.Key{}, errorf(http.StatusForbidden, "", "this API key lacks the 'scim' scope")
	}
	return key, nil
}

// body reads a resource (a JSON object) from the request.
func (h *Handler) body(w http.ResponseWriter, r *http.Request, m *map[string]any) error {
	if err := readJSON(w, r, m); err != nil {
		return err
	}
	if *m == nil {
		return errorf(http.StatusBadRequest, TypeInvalidSyntax, "the request body must be a JSON object")
	}
	return nil
}

// patchBody reads a PatchOp message.
func (h *Handler) patchBody(w http.ResponseWriter, r *http.Request) ([]Operation, error) {
	var p struct {
		Schemas    []string    `json:"schemas"`
		Operations []Operation `json:"Operations"`
	}
	if err := readJSON(w, r, &p); err != nil {
		return nil, err
	}
	return p.Operations, nil
}

// paging reads startIndex (from 1; less is 1) and count (0 to MaxResults;
// DefaultCount when absent).
func paging(r *http.Request) (start, count int, err error) {
	q := r.URL.Query()
	num := func(name string, def int) (int, error) {
		s := strings.TrimSpace(q.Get(name))
		if s == "" {
			return def, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, invalidValue("%s must be an integer", name)
		}
		return n, nil
	}
	if start, err = num("startIndex", 1); err != nil {
		return 0, 0, err
	}
	if count, err = num("count", DefaultCount); err != nil {
		return 0, 0, err
	}
	start = max(start, 1)
	count = min(max(count, 0), MaxResults)
	return start, count, nil
}

// excluded reports whether excludedAttributes names attr.
func excluded(r *http.Request, attr string) bool {
	for _, a := range strings.Split(r.URL.Query().Get("excludedAttributes"), ",") {
		a, _ = stripSchema(strings.TrimSpace(a))
		if strings.EqualFold(a, attr) {
			return true
		}
	}
	return false
}

// pick answers a discovery list, or the entry whose field is id.
func (h *Handler) pick(w http.ResponseWriter, r *http.Request, keyID, id string, items []any, field string) {
	if id == "" {
		write(w, http.StatusOK, list(len(items), 1, items))
		return
	}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m[field] == id {
			write(w, http.StatusOK, it)
			return
		}
	}
	h.fail(w, r, keyID, notFound("no %q", id))
}

func (h *Handler) method(w http.ResponseWriter, r *http.Request, keyID string, allowed ...string) bool {
	for _, m := range allowed {
		if r.Method == m {
			return true
		}
	}
	h.notAllowed(w, r, keyID, allowed...)
	return false
}

func (h *Handler) notAllowed(w http.ResponseWriter, r *http.Request, keyID string, allowed ...string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	h.fail(w, r, keyID, errorf(http.StatusMethodNotAllowed, "", "%s is not allowed on %s", r.Method, r.URL.Path))
}

// done logs a change (reads are not logged).
func (h *Handler) done(r *http.Request, keyID, id string, status int) {
	if r.Method == http.MethodGet {
		return
	}
	h.Service.log().Info("scim", "method", r.Method, "path", r.URL.Path, "status", status, "key", keyID, "id", id)
}

// fail answers err in SCIM's error shape (a 500's cause is logged, not
// shown).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, keyID string, err error) {
	e := AsError(err)
	switch {
	case e.Status >= 500:
		h.Service.log().Error("scim: request failed", "method", r.Method, "path", r.URL.Path, "key", keyID, "status", e.Status, "err", err)
	case r.Method != http.MethodGet:
		h.Service.log().Info("scim: request refused", "method", r.Method, "path", r.URL.Path, "key", keyID, "status", e.Status, "detail", e.Detail)
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sovereign-scim"`)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	} else if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(apierr.DatabaseRetryAfter/time.Second)))
	}
	write(w, e.Status, errorJSON{Schemas: []string{ErrorSchema}, Status: strconv.Itoa(e.Status), ScimType: e.Type, Detail: e.Detail})
}

// write sends v as SCIM JSON with status.
func write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"schemas":["` + ErrorSchema + `"],"status":"500","detail":"internal server error"}`)
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// baseURL is the server's /scim/v2 URL as the client reached it (for
// meta.location).
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host + Prefix
}

// resourceOps is what one resource of a kind (a user, a group) answers to.
type resourceOps[V any] struct {
	get    func() (V, error)
	put    func(map[string]any) (V, error)
	patch  func([]Operation) (V, error)
	delete func() error
	render func(V) any
}

// serveOne serves GET, PUT, PATCH and DELETE on one resource.
func serveOne[V any](h *Handler, w http.ResponseWriter, r *http.Request, keyID, id string, ops resourceOps[V]) {
	var v V
	var err error
	switch r.Method {
	case http.MethodGet:
		v, err = ops.get()
	case http.MethodPut:
		var m map[string]any
		if err = h.body(w, r, &m); err == nil {
			v, err = ops.put(m)
		}
	case http.MethodPatch:
		var patch []Operation
		if patch, err = h.patchBody(w, r); err == nil {
			v, err = ops.patch(patch)
		}
	case http.MethodDelete:
		if err = ops.delete(); err == nil {
			h.done(r, keyID, id, http.StatusNoContent)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	default:
		h.notAllowed(w, r, keyID, http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete)
		return
	}
	if err != nil {
		h.fail(w, r, keyID, err)
		return
	}
	h.done(r, keyID, id, http.StatusOK)
	write(w, http.StatusOK, ops.render(v))
}

// collectionOps is what a kind's collection (/Users, /Groups) answers to.
type collectionOps[V any] struct {
	list     func(filter string, start, count int) ([]V, int, error)
	create   func(map[string]any) (V, error)
	id       func(V) string
	location string // the created resource's URL, but for its id
	render   func(v V, created bool) any
}

// serveCollection serves GET (a filtered, paged list) and POST (create)
// on a collection.
func serveCollection[V any](h *Handler, w http.ResponseWriter, r *http.Request, keyID string, ops collectionOps[V]) {
	switch r.Method {
	case http.MethodGet:
		start, count, err := paging(r)
		if err != nil {
			h.fail(w, r, keyID, err)
			return
		}
		vs, total, err := ops.list(r.URL.Query().Get("filter"), start, count)
		if err != nil {
			h.fail(w, r, keyID, err)
			return
		}
		items := make([]any, len(vs))
		for i, v := range vs {
			items[i] = ops.render(v, false)
		}
		write(w, http.StatusOK, list(total, start, items))
	case http.MethodPost:
		var m map[string]any
		if err := h.body(w, r, &m); err != nil {
			h.fail(w, r, keyID, err)
			return
		}
		v, err := ops.create(m)
		if err != nil {
			h.fail(w, r, keyID, err)
			return
		}
		h.done(r, keyID, ops.id(v), http.StatusCreated)
		w.Header().Set("Location", ops.location+ops.id(v))
		write(w, http.StatusCreated, ops.render(v, true))
	default:
		h.notAllowed(w, r, keyID, http.MethodGet, http.MethodPost)
	}
}
