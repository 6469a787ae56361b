package scim

import (
	"time"
)

// The JSON SCIM answers with (RFC 7643, RFC 7644).

// Message schemas' URNs.
const (
	ListSchema    = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	ErrorSchema   = "urn:ietf:params:scim:api:messages:2.0:Error"
	PatchOpSchema = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	spcSchema     = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	rtSchema      = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	schemaSchema  = "urn:ietf:params:scim:schemas:core:2.0:Schema"
)

type metaJSON struct {
	ResourceType string `json:"resourceType"`
	Created      string `json:"created,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	Location     string `json:"location"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

type nameJSON struct {
	Formatted  string `json:"formatted,omitempty"`
	FamilyName string `json:"familyName,omitempty"`
	GivenName  string `json:"givenName,omitempty"`
}

type emailJSON struct {
	Value   string `json:"value"`
	Type    string `json:"type"`
	Primary bool   `json:"primary"`
}

type refJSON struct {
	Value   string `json:"value"`
	Ref     string `json:"$ref"`
	Display string `json:"display,omitempty"`
	Type    string `json:"type,omitempty"`
}

type userJSON struct {
	Schemas     []string    `json:"schemas"`
	ID          string      `json:"id"`
	ExternalID  string      `json:"externalId,omitempty"`
	UserName    string      `json:"userName"`
	Name        *nameJSON   `json:"name,omitempty"`
	DisplayName string      `json:"displayName,omitempty"`
	Active      bool        `json:"active"`
	Emails      []emailJSON `json:"emails"`
	Groups      []refJSON   `json:"groups"`
	Meta        metaJSON    `json:"meta"`
}

// userResource renders a user; base is the server's /scim/v2 URL.
func userResource(v UserView, base string) userJSON {
	u := userJSON{Schemas: []string{UserSchema}, ID: v.ID, ExternalID: v.ExternalID, UserName: v.UserName,
		DisplayName: v.DisplayName, Active: v.Active, Emails: []emailJSON{{Value: v.Email, Type: "work", Primary: true}},
		Groups: []refJSON{},
		Meta:   metaJSON{ResourceType: "User", Created: stamp(v.CreatedAt), LastModified: stamp(v.UpdatedAt), Location: base + "/Users/" + v.ID}}
	if u.DisplayName == "" {
		u.DisplayName = v.Name
	}
	n := nameJSON{Formatted: v.Formatted, FamilyName: v.FamilyName, GivenName: v.GivenName}
	if n.Formatted == "" {
		n.Formatted = v.Name
	}
	if n != (nameJSON{}) {
		u.Name = &n
	}
	for _, g := range v.Groups {
		u.Groups = append(u.Groups, refJSON{Value: g.ID, Ref: base + "/Groups/" + g.ID, Display: g.DisplayName, Type: "direct"})
	}
	return u
}

type groupJSON struct {
	Schemas     []string `json:"schemas"`
	ID          string   `json:"id"`
	ExternalID  string   `json:"externalId,omitempty"`
	DisplayName string   `json:"displayName"`
	Members     any      `json:"members,omitempty"` // []refJSON, nil when excluded
	Meta        metaJSON `json:"meta"`
}

// groupResource renders a group; members are left out when withMembers
// is false (excludedAttributes=members).
func groupResource(v GroupView, base string, withMembers bool) groupJSON {
	g := groupJSON{Schemas: []string{GroupSchema}, ID: v.ID, ExternalID: v.ExternalID, DisplayName: v.DisplayName,
		Meta: metaJSON{ResourceType: "Group", Created: stamp(v.CreatedAt), LastModified: stamp(v.UpdatedAt), Location: base + "/Groups/" + v.ID}}
	if withMembers {
		ms := make([]refJSON, 0, len(v.Members))
		for _, m := range v.Members {
			ms = append(ms, refJSON{Value: m.UserID, Ref: base + "/Users/" + m.UserID, Display: m.Email, Type: "User"})
		}
		g.Members = ms
	}
	return g
}

type listJSON struct {
	Schemas      []string `json:"schemas"`
	TotalResults int      `json:"totalResults"`
	StartIndex   int      `json:"startIndex"`
	ItemsPerPage int      `json:"itemsPerPage"`
	Resources    []any    `json:"Resources"`
}

func list(total, startIndex int, items []any) listJSON {
	if items == nil {
		items = []any{}
	}
	return listJSON{Schemas: []string{ListSchema}, TotalResults: total, StartIndex: startIndex, ItemsPerPage: len(items), Resources: items}
}

type errorJSON struct {
	Schemas  []string `json:"schemas"`
	Status   string   `json:"status"`
	ScimType string   `json:"scimType,omitempty"`
	Detail   string   `json:"detail"`
}

// serviceProviderConfig is what this server supports (RFC 7643 §5).
func serviceProviderConfig(base string) map[string]any {
	return map[string]any{
		"schemas":          []string{spcSchema},
		"documentationUri": "https://github.com/sovereign-ai/sovereign/blob/main/docs/scim.md",
		"patch":            map[string]any{"supported": true},
		"bulk":             map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":           map[string]any{"supported": true, "maxResults": MaxResults},
		"changePassword":   map[string]any{"supported": false},
		"sort":             map[string]any{"supported": false},
		"etag":             map[string]any{"supported": false},
		"authenticationSchemes": []map[string]any{{
			"type":        "oauthbearertoken",
			"name":        "Bearer API key",
			"description": "A Sovereign API key holding the scim scope, as Authorization: Bearer sk-sov-…",
			"primary":     true,
		}},
		"meta": metaJSON{ResourceType: "ServiceProviderConfig", Location: base + "/ServiceProviderConfig"},
	}
}

// resourceTypes are the User and Group resource types (RFC 7643 §6).
func resourceTypes(base string) []any {
	rt := func(name, endpoint, schema, desc string) map[string]any {
		return map[string]any{
			"schemas": []string{rtSchema}, "id": name, "name": name, "endpoint": endpoint, "description": desc,
			"schema": schema, "meta": metaJSON{ResourceType: "ResourceType", Location: base + "/ResourceTypes/" + name},
		}
	}
	return []any{
		rt("User", "/Users", UserSchema, "A person: a Sovereign user, identified by e-mail address"),
		rt("Group", "/Groups", GroupSchema, "A group, which the group rules make roles in teams of"),
	}
}

// attr describes one attribute of a schema (RFC 7643 §7).
func attr(name, typ string, required bool, mutability, uniqueness string, caseExact bool, subs ...map[string]any) map[string]any {
	a := map[string]any{
		"name": name, "type": typ, "multiValued": false, "required": required, "caseExact": caseExact,
		"mutability": mutability, "returned": "default", "uniqueness": uniqueness, "description": name,
	}
	if len(subs) > 0 {
		a["subAttributes"] = subs
	}
	return a
}

func multi(a map[string]any) map[string]any { a["multiValued"] = true; return a }

// schemas are the User and Group schemas as this server keeps them:
// what it stores, not every attribute RFC 7643 defines.
func schemas(base string) []any {
	s := func(id, name string, attrs ...map[string]any) map[string]any {
		return map[string]any{"schemas": []string{schemaSchema}, "id": id, "name": name, "description": name, "attributes": attrs,
			"meta": metaJSON{ResourceType: "Schema", Location: base + "/Schemas/" + id}}
	}
	ref := func() []map[string]any {
		return []map[string]any{
			attr("value", "string", true, "immutable", "none", true),
			attr("$ref", "reference", false, "immutable", "none", true),
			attr("display", "string", false, "readOnly", "none", false),
			attr("type", "string", false, "immutable", "none", false),
		}
	}
	return []any{
		s(UserSchema, "User",
			attr("userName", "string", true, "readWrite", "server", false),
			attr("name", "complex", false, "readWrite", "none", false,
				attr("formatted", "string", false, "readWrite", "none", false),
				attr("familyName", "string", false, "readWrite", "none", false),
				attr("givenName", "string", false, "readWrite", "none", false)),
			attr("displayName", "string", false, "readWrite", "none", false),
			attr("active", "boolean", false, "readWrite", "none", false),
			multi(attr("emails", "complex", false, "readWrite", "none", false,
				attr("value", "string", false, "readWrite", "none", false),
				attr("type", "string", false, "readWrite", "none", false),
				attr("primary", "boolean", false, "readWrite", "none", false))),
			multi(attr("groups", "complex", false, "readOnly", "none", false, ref()...)),
		),
		s(GroupSchema, "Group",
			attr("displayName", "string", true, "readWrite", "server", false),
			multi(attr("members", "complex", false, "readWrite", "none", false, ref()...)),
		),
	}
}
