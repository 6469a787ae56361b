package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// The read-mostly pages (records, sources, workflows, webhooks) share one
// template: a filter form, a table of the API list's objects, optional
// per-row actions.

// column is one table column: the object's field, its heading, and an
// optional link (a console path prefix + the row's id).
type column struct {
	Field, Label, Link string
	// Names says where the names of the ids in Field come from
	// ("workflows", "keys"): the cell shows the name, the link keeps the
	// id.
	Names string
}

// filter is one filter input of a table page, passed to the API as the
// query parameter of the same name ("date" inputs become Unix seconds).
type filter struct {
	Name, Label, Type string
	Options           []string
	Value             string
}

type tableData struct {
	Intro   string
	Filters []filter
	Columns []column
	Rows    []map[string]any
	// Bars, when set, draws each row's value of this field as a bar
	// (usage charts).
	Bars    string
	Max     float64
	Actions string // the name of a row-actions block in the template
	Related []link
	NextURL string
	Extra   any
	// Names maps a column's ids to names (by field).
	Names map[string]map[string]string
}

type tablePage struct {
	title, nav, api, intro, bars, actions string
	filters                               []filter
	columns                               []column
	related                               []link
}

// link is a related page shown under a table page's heading.
type link struct{ Href, Label string }

// listPage serves a table page over a list endpoint of the API.
func listPage(tp tablePage) handler {
	return func(c *Console, q *req) error {
		d, err := c.table(q, tp, tp.api)
		if err != nil {
			return err
		}
		return c.show(q, http.StatusOK, "table", tp.title, tp.nav, d)
	}
}

func (c *Console) table(q *req, tp tablePage, api string) (tableData, error) {
	d := tableData{Intro: tp.intro, Columns: tp.columns, Bars: tp.bars, Actions: tp.actions, Related: tp.related}
	v := url.Values{}
	for _, f := range tp.filters {
		f.Value = strings.TrimSpace(q.r.URL.Query().Get(f.Name))
		d.Filters = append(d.Filters, f)
		if f.Value == "" {
			continue
		}
		val := f.Value
		if f.Type == "date" {
			t, err := time.Parse("2006-01-02", val)
			if err != nil {
				return d, apierr.Invalid(f.Name, "Dates are YYYY-MM-DD.")
			}
			if f.Name == "until" {
				t = t.Add(24 * time.Hour)
			}
			val = strconv.FormatInt(t.Unix(), 10)
		}
		v.Set(f.Name, val)
	}
	if a := q.r.URL.Query().Get("after"); a != "" {
		v.Set("after", a)
	}
	if len(v) > 0 {
		sep := "?"
		if strings.Contains(api, "?") {
			sep = "&"
		}
		api += sep + v.Encode()
	}
	var res struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
		LastID  *string          `json:"last_id"`
	}
	if err := c.call(q, "GET", api, nil, &res); err != nil {
		return d, err
	}
	d.Rows = res.Data
	for _, col := range d.Columns {
		if col.Names != "" {
			if d.Names == nil {
				d.Names = map[string]map[string]string{}
			}
			d.Names[col.Field] = c.names(q, col.Names)
		}
	}
	if res.HasMore && res.LastID != nil {
		nq := q.r.URL.Query()
		nq.Set("after", *res.LastID)
		d.NextURL = q.r.URL.Path + "?" + nq.Encode()
	}
	if d.Bars != "" {
		for _, r := range d.Rows {
			if f, ok := r[d.Bars].(float64); ok && f > d.Max {
				d.Max = f
			}
		}
	}
	return d, nil
}

// names reads the names of the team's workflows or keys by id, for
// showing names where the API gives ids (none where the session may not
// list them: the ids stay).
func (c *Console) names(q *req, what string) map[string]string {
	var res list[map[string]any]
	path := map[string]string{"workflows": "/v1/workflows?limit=100", "keys": "/v1/keys?team_id=" + url.QueryEscape(q.key.TeamID)}[what]
	if path == "" || c.call(q, "GET", path, nil, &res) != nil {
		return nil
	}
	out := make(map[string]string, len(res.Data))
	for _, o := range res.Data {
		id, _ := o["id"].(string)
		if n, _ := o["name"].(string); id != "" && n != "" {
			out[id] = n
		}
	}
	return out
}

// named is a cell's text: the name of its id where one is known.
func named(names map[string]map[string]string, field, id string) string {
	if n := names[field][id]; n != "" {
		return n
	}
	return id
}

// cell renders an object's field for a table cell: times (fields named
// *_at, created) as UTC dates, lists joined, objects as compact JSON.
func cell(row map[string]any, field string) string {
	v, ok := row[field]
	if !ok || v == nil {
		return "—"
	}
	switch x := v.(type) {
	case float64:
		if strings.HasSuffix(field, "_ms") {
			return duration(x)
		}
		if strings.HasSuffix(field, "_at") || field == "created" {
			if x == 0 {
				return "—"
			}
			return time.Unix(int64(x), 0).UTC().Format("2006-01-02 15:04:05 UTC")
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		if x == "" {
			return "—"
		}
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			if s, ok := e.(string); ok {
				parts[i] = s
			} else {
				b, _ := json.Marshal(e)
				parts[i] = string(b)
			}
		}
		return strings.Join(parts, ", ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func barWidth(row map[string]any, field string, max float64) string {
	f, _ := row[field].(float64)
	if max <= 0 {
		return "0"
	}
	return fmt.Sprintf("%.1f", 100*f/max)
}

var (
	decisionsPage = listPage(tablePage{title: "Policy decisions", nav: "decisions", api: "/v1/policy_decisions",
		intro: "What the policies decided about requests (docs/policies.md).", related: []link{{Prefix + "/logs", "Request logs"}, {Prefix + "/audit", "Audit chain"}},
		filters: []filter{{Name: "action", Label: "Action"}, {Name: "model", Label: "Model"}, {Name: "key_id", Label: "Key id"},
			{Name: "request_id", Label: "Request id"}, {Name: "since", Label: "Since", Type: "date"}, {Name: "until", Label: "Until", Type: "date"}},
		columns: []column{{Field: "id", Label: "Decision", Link: Prefix + "/decisions/"}, {Field: "created_at", Label: "Time"}, {Field: "request_id", Label: "Request", Link: Prefix + "/logs/"}, {Field: "policy", Label: "Policy"},
			{Field: "rule", Label: "Rule"}, {Field: "stage", Label: "Stage"}, {Field: "action", Label: "Action"}, {Field: "reason", Label: "Reason"}, {Field: "model", Label: "Model"}}})
	sourceLinksPage = listPage(tablePage{title: "Source links", nav: "sources", api: "/v1/source_links",
		intro: "Every citation an answer made, with the source it cited.", actions: "sourcelink",
		filters: []filter{{Name: "response_id", Label: "Response id"}, {Name: "collection_id", Label: "Collection id"}, {Name: "document_id", Label: "Document id"}},
		columns: []column{{Field: "created_at", Label: "Time"}, {Field: "response_id", Label: "Response", Link: Prefix + "/source_links?response_id="}, {Field: "model", Label: "Model"},
			{Field: "citation", Label: "Citation"}, {Field: "source", Label: "Source"}}})
	checkpointsTable = tablePage{title: "Audit chain", nav: "audit", api: "/v1/logs/checkpoints",
		intro: "The request log is a hash chain with Merkle checkpoints: each row is a signed-off tree root (docs/records.md). A record's page shows its inclusion proof.",
		columns: []column{{Field: "id", Label: "Checkpoint"}, {Field: "created_at", Label: "Time"}, {Field: "first_seq", Label: "First record"},
			{Field: "last_seq", Label: "Last record"}, {Field: "size", Label: "Tree size"}, {Field: "root", Label: "Root"}}}
	collectionsPage = listPage(tablePage{title: "Sources", nav: "sources", api: "/v1/collections",
		intro: "The team's collections of documents, searchable and citable.", related: []link{{Prefix + "/source_links", "Source links: every citation made"}},
		actions: "collection",
		columns: []column{{Field: "name", Label: "Name"}, {Field: "id", Label: "Id", Link: Prefix + "/sources/"}, {Field: "document_count", Label: "Documents"},
			{Field: "chunk_count", Label: "Chunks"}, {Field: "embedding_model", Label: "Embedding model"}, {Field: "created_at", Label: "Created"}}})
	runsPage = listPage(tablePage{title: "Workflow runs", nav: "workflows", api: "/v1/workflow_runs", related: []link{{Prefix + "/workflows", "Definitions"}, {Prefix + "/approvals?status=pending", "Pending approvals"}},
		filters: []filter{{Name: "workflow_id", Label: "Workflow id"}, {Name: "status", Label: "Status", Type: "select",
			Options: []string{"queued", "running", "waiting_approval", "succeeded", "failed", "cancelled"}}},
		columns: []column{{Field: "id", Label: "Run", Link: Prefix + "/runs/"}, {Field: "workflow_id", Label: "Workflow", Link: Prefix + "/workflows/", Names: "workflows"}, {Field: "status", Label: "Status"},
			{Field: "current_step", Label: "Step"}, {Field: "created_at", Label: "Created"}, {Field: "ended_at", Label: "Ended"}, {Field: "duration_ms", Label: "Duration"}}})
	approvalsPage = listPage(tablePage{title: "Approvals", nav: "approvals", api: "/v1/approvals", actions: "approval",
		intro:   "Steps of workflow runs waiting for a person's decision.",
		filters: []filter{{Name: "status", Label: "Status", Type: "select", Options: []string{"pending", "approved", "rejected", "expired"}}},
		columns: []column{{Field: "created_at", Label: "Asked"}, {Field: "run_id", Label: "Run", Link: Prefix + "/runs/"}, {Field: "step_id", Label: "Step"},
			{Field: "instructions", Label: "Instructions"}, {Field: "status", Label: "Status"}, {Field: "decided_by", Label: "Decided by"}, {Field: "comment", Label: "Comment"}}})
)

func redeliver(c *Console, q *req) error {
	id, did := q.r.PathValue("id"), q.r.PathValue("delivery")
	if err := c.call(q, "POST", "/v1/webhooks/"+url.PathEscape(id)+"/deliveries/"+url.PathEscape(did)+"/redeliver", map[string]any{}, nil); err != nil {
		return err
	}
	return redirect(q, Prefix+"/webhooks/"+url.PathEscape(id), "Delivery "+did+" queued again.")
}

func decideApproval(c *Console, q *req) error {
	id := q.r.PathValue("id")
	decision := q.r.PostFormValue("decision")
	if decision != "approve" && decision != "reject" {
		return apierr.Invalid("decision", "Choose approve or reject.")
	}
	body := map[string]any{"decision": decision}
	if cm := strings.TrimSpace(q.r.PostFormValue("comment")); cm != "" {
		body["comment"] = cm
	}
	if err := c.call(q, "POST", "/v1/approvals/"+url.PathEscape(id), body, nil); err != nil {
		return err
	}
	return redirect(q, Prefix+"/approvals", "Approval "+id+": "+decision+"d.")
}

func runPage(c *Console, q *req) error {
	var run map[string]any
	id := q.r.PathValue("id")
	if err := c.call(q, "GET", "/v1/workflow_runs/"+url.PathEscape(id), nil, &run); err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "run", "Run "+id, "workflows", run)
}

// sourceLinkPage is one source link: the citation, the source it cited
// (with its collection), and the answer's other links. The API lists links
// by answer (there is no read by id), so the page reads the answer's links
// and picks its own.
func sourceLinkPage(c *Console, q *req) error {
	id, resp := q.r.PathValue("id"), q.r.URL.Query().Get("response_id")
	var res struct {
		Data []map[string]any `json:"data"`
	}
	if resp != "" {
		if err := c.call(q, "GET", "/v1/source_links?limit=100&response_id="+url.QueryEscape(resp), nil, &res); err != nil {
			return err
		}
	}
	for _, l := range res.Data {
		if l["id"] == id {
			return c.show(q, http.StatusOK, "sourcelink", "Source link "+id, "sources", map[string]any{"Link": l, "Others": res.Data})
		}
	}
	return apierr.New(apierr.NotFound, "No source link "+id+" of that answer; open it from the source links list.")
}

// duration writes milliseconds for people: 850 ms, 12.4 s, 3 min 20 s.
func duration(ms float64) string {
	switch {
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	case ms < 60_000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	}
	s := int64(ms / 1000)
	return strconv.FormatInt(s/60, 10) + " min " + strconv.FormatInt(s%60, 10) + " s"
}
