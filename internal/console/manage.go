package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/events"
)

// The pages that manage objects: webhooks (create, edit, rotate the
// secret, delete), workflow definitions (create, edit, delete, start a
// run) and a team's capture setting. Thin handlers: decode the form, call
// the API as the session's key, render or redirect.

// ---------------------------------------------------------------- webhooks

type webhooksData struct {
	Webhooks []map[string]any
	NextURL  string
	Types    []string
	// Form is what was typed, kept when the API refused it.
	Form    webhookForm
	Created map[string]any // the new webhook with its secret, shown once
	Refused *apierr.Error
}

type webhookForm struct {
	URL, Description string
	Events           []string
}

func webhookTypes() []string { return append([]string{"*"}, events.Types...) }

func (c *Console) webhooksData(q *req) (webhooksData, error) {
	d := webhooksData{Types: webhookTypes(), Form: webhookForm{Events: []string{"*"}}}
	path := "/v1/webhooks?limit=100"
	if a := q.r.URL.Query().Get("after"); a != "" {
		path += "&after=" + url.QueryEscape(a)
	}
	var res struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
		LastID  *string          `json:"last_id"`
	}
	if err := c.call(q, "GET", path, nil, &res); err != nil {
		return d, err
	}
	d.Webhooks = res.Data
	if res.HasMore && res.LastID != nil {
		d.NextURL = Prefix + "/webhooks?after=" + url.QueryEscape(*res.LastID)
	}
	return d, nil
}

func webhooksPage(c *Console, q *req) error {
	d, err := c.webhooksData(q)
	if err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "webhooks", "Webhooks", "webhooks", d)
}

// createWebhook registers an endpoint and shows its signing secret once,
// on the page that answers the post (never in a URL or stored).
func createWebhook(c *Console, q *req) error {
	f := q.r.PostForm
	form := webhookForm{URL: strings.TrimSpace(f.Get("url")), Description: strings.TrimSpace(f.Get("description")), Events: f["events"]}
	body := map[string]any{"url": form.URL, "events": nonNil(form.Events), "description": form.Description}
	var wh map[string]any
	err := c.call(q, "POST", "/v1/webhooks", body, &wh)
	d, lerr := c.webhooksData(q)
	if lerr != nil {
		return lerr
	}
	if err != nil {
		return c.refused(q, "webhooks", "Webhooks", "webhooks", err, func(ae *apierr.Error) any {
			d.Form, d.Refused = form, ae
			return d
		})
	}
	d.Created = wh
	return c.show(q, http.StatusCreated, "webhooks", "Webhooks", "webhooks", d)
}

// refused renders page name again with the API's refusal (its status, its
// message and the field it names) so that what was typed is kept; any
// other error fails the request.
func (c *Console) refused(q *req, name, title, nav string, err error, data func(*apierr.Error) any) error {
	var ae *apierr.Error
	if !errors.As(err, &ae) {
		return err
	}
	p := q.page(title, nav, data(ae))
	p.Error = ae.Message
	if ae.Param != "" {
		p.Error = ae.Param + ": " + ae.Message
	}
	c.render(q.w, ae.Status(), name, p)
	return nil
}

type webhookData struct {
	Webhook  map[string]any
	Events   []string
	Types    []string
	Secret   string // after a rotation, shown once
	Table    tableData
	Refused  *apierr.Error
	Rotating bool
}

var deliveriesTable = tablePage{actions: "delivery",
	filters: []filter{{Name: "status", Label: "Status", Type: "select", Options: []string{"pending", "delivering", "succeeded", "failed"}}},
	columns: []column{{Field: "created_at", Label: "Created"}, {Field: "event_type", Label: "Event"}, {Field: "status", Label: "Status"},
		{Field: "attempt_count", Label: "Attempts"}, {Field: "last_status_code", Label: "Last code"}, {Field: "last_error", Label: "Last error"},
		{Field: "next_attempt_at", Label: "Next attempt"}}}

func (c *Console) webhookData(q *req) (webhookData, error) {
	id := url.PathEscape(q.r.PathValue("id"))
	d := webhookData{Types: webhookTypes()}
	if err := c.call(q, "GET", "/v1/webhooks/"+id, nil, &d.Webhook); err != nil {
		return d, err
	}
	for _, e := range anyList(d.Webhook["events"]) {
		d.Events = append(d.Events, e)
	}
	t, err := c.table(q, deliveriesTable, "/v1/webhooks/"+id+"/deliveries")
	if err != nil {
		return d, err
	}
	t.Extra = q.r.PathValue("id")
	d.Table = t
	return d, nil
}

// webhookPage is a webhook: its settings (edit, enable/disable), rotate
// the secret, delete, and its deliveries with redeliver.
func webhookPage(c *Console, q *req) error {
	d, err := c.webhookData(q)
	if err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "webhook", "Webhook "+q.r.PathValue("id"), "webhooks", d)
}

// updateWebhook is the edit form: PATCH url, events, description, enabled.
func updateWebhook(c *Console, q *req) error {
	id := q.r.PathValue("id")
	f := q.r.PostForm
	body := map[string]any{"url": strings.TrimSpace(f.Get("url")), "events": nonNil(f["events"]),
		"description": strings.TrimSpace(f.Get("description")), "enabled": f.Get("enabled") != ""}
	if err := c.call(q, "PATCH", "/v1/webhooks/"+url.PathEscape(id), body, nil); err != nil {
		d, derr := c.webhookData(q)
		if derr != nil {
			return derr
		}
		return c.refused(q, "webhook", "Webhook "+id, "webhooks", err, func(ae *apierr.Error) any {
			// Keep what was typed.
			d.Webhook["url"], d.Webhook["description"], d.Webhook["enabled"] = body["url"], body["description"], body["enabled"]
			d.Events, d.Refused = f["events"], ae
			return d
		})
	}
	return redirect(q, Prefix+"/webhooks/"+url.PathEscape(id), "Webhook saved.")
}

// rotateWebhook makes a new signing secret and shows it once; the old one
// keeps signing for the grace period chosen.
func rotateWebhook(c *Console, q *req) error {
	id := q.r.PathValue("id")
	body := map[string]any{}
	if g := strings.TrimSpace(q.r.PostFormValue("grace_hours")); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil || n < 0 {
			return apierr.Invalid("grace_hours", "The grace period is a whole number of hours, 0 or more.")
		}
		body["grace_period_seconds"] = n * 3600
	}
	var wh map[string]any
	if err := c.call(q, "POST", "/v1/webhooks/"+url.PathEscape(id)+"/rotate_secret", body, &wh); err != nil {
		return err
	}
	d, err := c.webhookData(q)
	if err != nil {
		return err
	}
	d.Secret, _ = wh["secret"].(string)
	d.Rotating = true
	return c.show(q, http.StatusOK, "webhook", "Webhook "+id, "webhooks", d)
}

func deleteWebhook(c *Console, q *req) error {
	id := q.r.PathValue("id")
	if err := c.call(q, "DELETE", "/v1/webhooks/"+url.PathEscape(id), nil, nil); err != nil {
		return err
	}
	return redirect(q, Prefix+"/webhooks", "Webhook "+id+" deleted.")
}

// ---------------------------------------------------------------- workflows

// exampleDefinition fills the create form: one transform step.
const exampleDefinition = `{
  "steps": [
    {"id": "greet", "type": "transform", "template": "Hello, {{ input.name }}!"}
  ],
  "output": {"greeting": "{{ steps.greet.output.text }}"}
}`

type workflowsData struct {
	Table   tableData
	Form    workflowForm
	Refused *apierr.Error
}

type workflowForm struct {
	Name, Description, Definition string
}

var workflowsTable = tablePage{
	columns: []column{{Field: "name", Label: "Name"}, {Field: "id", Label: "Id", Link: Prefix + "/workflows/"}, {Field: "version", Label: "Version"},
		{Field: "description", Label: "Description"}, {Field: "updated_at", Label: "Updated"}}}

func workflowsPage(c *Console, q *req) error {
	t, err := c.table(q, workflowsTable, "/v1/workflows")
	if err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "workflows", "Workflows", "workflows", workflowsData{Table: t, Form: workflowForm{Definition: exampleDefinition}})
}

// definitionBody is the API request of the definition form; a textarea
// that is not JSON is refused here, naming the field.
func definitionBody(f url.Values) (workflowForm, map[string]any, error) {
	form := workflowForm{Name: strings.TrimSpace(f.Get("name")), Description: strings.TrimSpace(f.Get("description")), Definition: f.Get("definition")}
	body := map[string]any{"name": form.Name, "description": form.Description}
	def := strings.TrimSpace(form.Definition)
	if def != "" {
		if !json.Valid([]byte(def)) {
			var v any
			err := json.Unmarshal([]byte(def), &v)
			return form, nil, apierr.Invalid("definition", "The definition is not JSON: "+err.Error())
		}
		body["definition"] = json.RawMessage(def)
	}
	return form, body, nil
}

func createWorkflow(c *Console, q *req) error {
	form, body, err := definitionBody(q.r.PostForm)
	var wf map[string]any
	if err == nil {
		err = c.call(q, "POST", "/v1/workflows", body, &wf)
	}
	if err != nil {
		t, terr := c.table(q, workflowsTable, "/v1/workflows")
		if terr != nil {
			return terr
		}
		return c.refused(q, "workflows", "Workflows", "workflows", err, func(ae *apierr.Error) any {
			return workflowsData{Table: t, Form: form, Refused: ae}
		})
	}
	id, _ := wf["id"].(string)
	return redirect(q, Prefix+"/workflows/"+url.PathEscape(id), "Workflow created.")
}

// definitionForm is the definition form's partial (_definition.html).
type definitionForm struct {
	CSRF, Action, Button string
	Form                 workflowForm
	Refused              *apierr.Error
}

// Names reports whether the refusal names field (or a field inside it).
func (f definitionForm) Names(field string) bool {
	if f.Refused == nil {
		return false
	}
	p := f.Refused.Param
	return p == field || strings.HasPrefix(p, field+".") || strings.HasPrefix(p, field+"[")
}

type workflowData struct {
	Workflow map[string]any
	Form     workflowForm
	Input    string
	Runs     tableData
	Refused  *apierr.Error
	// RunRefused is a refusal of the start-run form.
	RunRefused bool
}

var workflowRunsTable = tablePage{
	columns: []column{{Field: "id", Label: "Run", Link: Prefix + "/runs/"}, {Field: "status", Label: "Status"}, {Field: "version", Label: "Version"},
		{Field: "created_at", Label: "Created"}, {Field: "ended_at", Label: "Ended"}}}

func (c *Console) workflowData(q *req) (workflowData, error) {
	id := url.PathEscape(q.r.PathValue("id"))
	d := workflowData{Input: "{\n  \"name\": \"world\"\n}"}
	var body json.RawMessage
	if err := c.call(q, "GET", "/v1/workflows/"+id, nil, &body); err != nil {
		return d, err
	}
	// The definition as stored (its members in their order), indented.
	var raw struct {
		Definition json.RawMessage `json:"definition"`
	}
	if err := json.Unmarshal(body, &d.Workflow); err != nil {
		return d, err
	}
	def := []byte("{}")
	if json.Unmarshal(body, &raw) == nil {
		var b bytes.Buffer
		if json.Indent(&b, raw.Definition, "", "  ") == nil {
			def = b.Bytes()
		}
	}
	d.Form = workflowForm{Name: cell(d.Workflow, "name"), Description: str(d.Workflow["description"]), Definition: string(def)}
	if d.Form.Name == "—" {
		d.Form.Name = ""
	}
	runs, err := c.table(q, workflowRunsTable, "/v1/workflow_runs?limit=10&workflow_id="+url.QueryEscape(q.r.PathValue("id")))
	if err != nil {
		return d, err
	}
	d.Runs = runs
	return d, nil
}

// workflowPage is a definition: edit it (PUT), delete it, start a run with
// a JSON input, its latest runs.
func workflowPage(c *Console, q *req) error {
	d, err := c.workflowData(q)
	if err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "workflow", d.Form.Name, "workflows", d)
}

func updateWorkflow(c *Console, q *req) error {
	id := q.r.PathValue("id")
	form, body, err := definitionBody(q.r.PostForm)
	if err == nil {
		err = c.call(q, "PUT", "/v1/workflows/"+url.PathEscape(id), body, nil)
	}
	if err != nil {
		d, derr := c.workflowData(q)
		if derr != nil {
			return derr
		}
		return c.refused(q, "workflow", d.Form.Name, "workflows", err, func(ae *apierr.Error) any {
			d.Form, d.Refused = form, ae
			return d
		})
	}
	return redirect(q, Prefix+"/workflows/"+url.PathEscape(id), "Workflow saved (a new version).")
}

func deleteWorkflow(c *Console, q *req) error {
	id := q.r.PathValue("id")
	if err := c.call(q, "DELETE", "/v1/workflows/"+url.PathEscape(id), nil, nil); err != nil {
		return err
	}
	return redirect(q, Prefix+"/workflows", "Workflow "+id+" deleted.")
}

// startRun starts a run with the form's JSON input and lands on the run's
// live page.
func startRun(c *Console, q *req) error {
	id := q.r.PathValue("id")
	in := strings.TrimSpace(q.r.PostFormValue("input"))
	body := map[string]any{}
	var err error
	if in != "" {
		if !json.Valid([]byte(in)) {
			err = apierr.Invalid("input", "The input is not JSON.")
		} else {
			body["input"] = json.RawMessage(in)
		}
	}
	var run map[string]any
	if err == nil {
		err = c.call(q, "POST", "/v1/workflows/"+url.PathEscape(id)+"/runs", body, &run)
	}
	if err != nil {
		d, derr := c.workflowData(q)
		if derr != nil {
			return derr
		}
		return c.refused(q, "workflow", d.Form.Name, "workflows", err, func(ae *apierr.Error) any {
			d.Input, d.Refused, d.RunRefused = q.r.PostFormValue("input"), ae, true
			return d
		})
	}
	rid, _ := run["id"].(string)
	return redirect(q, Prefix+"/runs/"+url.PathEscape(rid), "Run started.")
}

// ---------------------------------------------------------------- teams

// teamCapture is the admin's capture toggle: PATCH /v1/teams/{id}.
func teamCapture(c *Console, q *req) error {
	id := q.r.PathValue("id")
	on := q.r.PostFormValue("capture") == "on"
	var t map[string]any
	if err := c.call(q, "PATCH", "/v1/teams/"+url.PathEscape(id), map[string]any{"capture": on}, &t); err != nil {
		return err
	}
	state := "off"
	if on {
		state = "on"
	}
	return redirect(q, Prefix+"/keys", "Capture of team "+cell(t, "name")+" is "+state+".")
}

// ---------------------------------------------------------------- helpers

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func anyList(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
