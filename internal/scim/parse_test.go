package scim

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestFilterOf(t *testing.T) {
	users := []string{"username", "externalid", "emails.value", "emails", "id"}
	for _, c := range []struct {
		in, attr, value string
	}{
		{`userName eq "ada@example.com"`, "username", "ada@example.com"},
		{`userName Eq "a b"`, "username", "a b"},
		{`  externalId   eq   "00u1"  `, "externalid", "00u1"},
		{`emails.value eq "x@example.com"`, "emails.value", "x@example.com"},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "q"`, "username", "q"},
		{`userName eq "with \"quotes\" and and"`, "username", `with "quotes" and and`},
		{`userName eq "caf\u00e9"`, "username", "café"},
	} {
		attr, v, err := filterOf(c.in, users...)
		if err != nil || attr != c.attr || v != c.value {
			t.Errorf("filterOf(%s) = %q, %q, %v; want %q, %q", c.in, attr, v, err, c.attr, c.value)
		}
	}
	for _, in := range []string{``, `userName`, `userName eq`, `userName ne "a"`, `userName co "a"`, `userName pr`,
		`userName eq "a" or userName eq "b"`, `userName eq "a" and`, `title eq "a"`, `userName eq a`, `userName eq 1`,
		`userName eq "unterminated`, `(userName eq "a")`, `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "x"`,
		`emails[type eq "work"].value eq "a"`} {
		_, _, err := filterOf(in, users...)
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 || e.Type != TypeInvalidFilter {
			t.Errorf("filterOf(%s) = %v; want a 400 invalidFilter", in, err)
		}
	}
}

func TestParsePath(t *testing.T) {
	for _, c := range []struct {
		in   string
		want path
	}{
		{"active", path{Attr: "active"}},
		{"name.givenName", path{Attr: "name", Sub: "givenname"}},
		{"urn:ietf:params:scim:schemas:core:2.0:User:name.familyName", path{Attr: "name", Sub: "familyname"}},
		{`members[value eq "user_1"]`, path{Attr: "members", Filter: &comparison{Attr: "value", Op: "eq", Value: "user_1"}}},
		{`emails[type eq "work"].value`, path{Attr: "emails", Sub: "value", Filter: &comparison{Attr: "type", Op: "eq", Value: "work"}}},
		{`emails[primary eq true].value`, path{Attr: "emails", Sub: "value", Filter: &comparison{Attr: "primary", Op: "eq", Value: true}}},
		{`members[value eq "a]b"]`, path{Attr: "members", Filter: &comparison{Attr: "value", Op: "eq", Value: "a]b"}}},
		{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.value", path{Ext: true}},
		{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User", path{Ext: true}},
	} {
		got, err := parsePath(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parsePath(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "1abc", "name..x", `members[value eq "x"`, `members[value ne "x"]`, `members[value eq "x"]x`,
		`members[value eq "x"].`, "a b", `members[]`} {
		_, err := parsePath(in)
		var e *Error
		if !errors.As(err, &e) || e.Type != TypeInvalidPath {
			t.Errorf("parsePath(%q) = %v; want invalidPath", in, err)
		}
	}
}

func TestAsBool(t *testing.T) {
	for in, want := range map[any]bool{true: true, false: false, "True": true, "False": false, "false": false, " TRUE ": true} {
		if got, err := asBool("active", in); err != nil || got != want {
			t.Errorf("asBool(%#v) = %v, %v", in, got, err)
		}
	}
	for _, in := range []any{"yes", 1, nil, "", json.Number("0")} {
		if _, err := asBool("active", in); err == nil {
			t.Errorf("asBool(%#v) succeeded", in)
		}
	}
}

// decodeOps reads Operations as the handler does.
func decodeOps(t *testing.T, s string) []Operation {
	t.Helper()
	var p struct{ Operations []Operation }
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	return p.Operations
}

func TestUserPatch(t *testing.T) {
	base := userState{UserName: "ada@example.com", GivenName: "Ada", FamilyName: "Lovelace", DisplayName: "Ada L", Email: "ada@example.com", Active: true}
	for _, c := range []struct {
		name, ops string
		want      func(*userState)
	}{
		{"Okta deactivates", `{"Operations":[{"op":"replace","value":{"active":false}}]}`, func(s *userState) { s.Active = false }},
		{"Entra deactivates", `{"Operations":[{"op":"Replace","path":"active","value":"False"}]}`, func(s *userState) { s.Active = false }},
		{"Entra's dotted keys without a path", `{"Operations":[{"op":"Add","value":{"name.givenName":"Augusta","displayName":""}}]}`,
			func(s *userState) { s.GivenName, s.DisplayName = "Augusta", "" }},
		{"a name object merges", `{"Operations":[{"op":"replace","path":"name","value":{"familyName":"King","middleName":"x"}}]}`,
			func(s *userState) { s.FamilyName = "King" }},
		{"removing a name part", `{"Operations":[{"op":"remove","path":"name.givenName"},{"op":"remove","path":"displayName"}]}`,
			func(s *userState) { s.GivenName, s.DisplayName = "", "" }},
		{"the work address", `{"Operations":[{"op":"replace","path":"emails[type eq \"work\"].value","value":"al@example.com"}]}`,
			func(s *userState) { s.Email = "al@example.com" }},
		{"attributes kept nowhere are ignored", `{"Operations":[{"op":"add","path":"title","value":"Countess"},
			{"op":"Add","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department","value":"Maths"},
			{"op":"replace","value":{"id":"user_1","schemas":["x"],"locale":"en-GB","phoneNumbers":[{"value":"1"}]}}]}`, func(*userState) {}},
		{"userName and externalId", `{"Operations":[{"op":"replace","path":"userName","value":"ada2@example.com"},{"op":"add","path":"externalId","value":"e"}]}`,
			func(s *userState) { s.UserName, s.ExternalID = "ada2@example.com", "e" }},
	} {
		st := base
		if err := applyOps(decodeOps(t, c.ops), func(op string, p path, v any) error { return st.patch(op, p, v) }); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want := base
		c.want(&want)
		if st != want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, st, want)
		}
	}
	if n := (userState{GivenName: "Ada", FamilyName: "Lovelace"}).name(); n != "Ada Lovelace" {
		t.Errorf("name of given and family: %q", n)
	}
	if n := (userState{GivenName: "Ada", Formatted: "Ada King", DisplayName: " "}).name(); n != "Ada King" {
		t.Errorf("name with formatted: %q", n)
	}
}

func TestGroupPatch(t *testing.T) {
	run := func(members []string, ops string) (groupState, error) {
		g := newGroupState("g", "", members)
		err := applyOps(decodeOps(t, ops), func(op string, p path, v any) error { return g.patch(op, p, v) })
		return g, err
	}
	for _, c := range []struct {
		name, ops string
		want      string
	}{
		{"Okta add", `{"Operations":[{"op":"add","path":"members","value":[{"value":"c","display":"c@x"}]}]}`, "a,b,c"},
		{"Okta remove by filter", `{"Operations":[{"op":"remove","path":"members[value eq \"a\"]"}]}`, "b"},
		{"Entra add", `{"Operations":[{"op":"Add","path":"members","value":[{"$ref":null,"value":"c"},{"value":"a"}]}]}`, "a,b,c"},
		{"Entra remove by value", `{"Operations":[{"op":"Remove","path":"members","value":[{"$ref":null,"value":"b"},{"value":"zz"}]}]}`, "a"},
		{"replace all", `{"Operations":[{"op":"replace","path":"members","value":[{"value":"c"}]}]}`, "c"},
		{"replace one by filter", `{"Operations":[{"op":"replace","path":"members[value eq \"a\"]","value":[{"value":"c"}]}]}`, "b,c"},
		{"remove all", `{"Operations":[{"op":"remove","path":"members"}]}`, ""},
		{"no path", `{"Operations":[{"op":"add","value":{"members":[{"value":"d"}]}}]}`, "a,b,d"},
		{"in order", `{"Operations":[{"op":"remove","path":"members[value eq \"a\"]"},{"op":"add","path":"members","value":[{"value":"a"}]}]}`, "b,a"},
	} {
		g, err := run([]string{"a", "b"}, c.ops)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := strings.Join(g.Members, ","); got != c.want {
			t.Errorf("%s: members %q, want %q", c.name, got, c.want)
		}
	}
	g, err := run(nil, `{"Operations":[{"op":"replace","value":{"id":"grp_1","displayName":"new","externalId":"e"}}]}`)
	if err != nil || g.DisplayName != "new" || g.ExternalID != "e" {
		t.Errorf("Okta's rename: %+v, %v", g, err)
	}
	for _, bad := range []string{
		`{"Operations":[{"op":"remove","path":"displayName"}]}`,
		`{"Operations":[{"op":"replace","path":"displayName","value":""}]}`,
		`{"Operations":[{"op":"add","path":"members","value":["a"]}]}`,
		`{"Operations":[{"op":"add","path":"members","value":[{"display":"x"}]}]}`,
		`{"Operations":[{"op":"remove","path":"members[display eq \"a\"]"}]}`,
		`{"Operations":[{"op":"replace","path":"members.value","value":"a"}]}`,
		`{"Operations":[{"op":"move","path":"members"}]}`,
	} {
		if _, err := run([]string{"a"}, bad); err == nil {
			t.Errorf("%s succeeded", bad)
		}
	}
	// At most MaxPatchMembers member values in one request, across ops.
	var b strings.Builder
	b.WriteString(`{"Operations":[{"op":"add","path":"members","value":[`)
	for i := range MaxPatchMembers {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"value":"u` + strings.Repeat("x", i%3) + `"}`)
	}
	b.WriteString(`]}]}`)
	if _, err := run(nil, b.String()); err != nil {
		t.Errorf("%d members: %v", MaxPatchMembers, err)
	}
	over := strings.Replace(b.String(), `]}]}`, `]},{"op":"remove","path":"members[value eq \"a\"]"}]}`, 1)
	if _, err := run(nil, over); err == nil {
		t.Errorf("%d members: accepted", MaxPatchMembers+1)
	}
}

func TestNewGroupID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newGroupID()
		if len(id) != 26 || !strings.HasPrefix(id, "grp_") || strings.Trim(id[4:], base62) != "" || seen[id] {
			t.Fatalf("newGroupID() = %q", id)
		}
		seen[id] = true
	}
}
