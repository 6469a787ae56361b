package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// The Sources pages: create a collection; a collection's page with its
// documents, a text document form (plain POST), a file upload with
// progress (sources.js, through /console/api), and search with mode and
// rerank.

type collectionData struct {
	Collection map[string]any
	Documents  []map[string]any
	Query      string
	Mode       string
	Rerank     bool
	TopK       int
	Results    []map[string]any
	SearchMs   any
	Searched   bool
}

func createCollection(c *Console, q *req) error {
	body := map[string]any{"name": strings.TrimSpace(q.r.PostFormValue("name"))}
	if d := strings.TrimSpace(q.r.PostFormValue("description")); d != "" {
		body["description"] = d
	}
	var col map[string]any
	if err := c.call(q, "POST", "/v1/collections", body, &col); err != nil {
		return err
	}
	id, _ := col["id"].(string)
	return redirect(q, Prefix+"/sources/"+url.PathEscape(id), "Collection created.")
}

func (c *Console) collection(q *req, d *collectionData) error {
	id := url.PathEscape(q.r.PathValue("id"))
	if err := c.call(q, "GET", "/v1/collections/"+id, nil, &d.Collection); err != nil {
		return err
	}
	var docs struct {
		Data []map[string]any `json:"data"`
	}
	if err := c.call(q, "GET", "/v1/collections/"+id+"/documents?limit=100", nil, &docs); err != nil {
		return err
	}
	d.Documents = docs.Data
	if d.Mode == "" {
		d.Mode = "hybrid"
	}
	if d.TopK == 0 {
		d.TopK = 5
	}
	return nil
}

func collectionPage(c *Console, q *req) error {
	var d collectionData
	if err := c.collection(q, &d); err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "collection", cell(d.Collection, "name"), "sources", d)
}

func addDocument(c *Console, q *req) error {
	id := q.r.PathValue("id")
	body := map[string]any{"text": q.r.PostFormValue("text")}
	if t := strings.TrimSpace(q.r.PostFormValue("title")); t != "" {
		body["title"] = t
	}
	if err := c.call(q, "POST", "/v1/collections/"+url.PathEscape(id)+"/documents", body, nil); err != nil {
		return err
	}
	return redirect(q, Prefix+"/sources/"+url.PathEscape(id), "Document added; it is searchable once ready.")
}

func searchCollection(c *Console, q *req) error {
	f := q.r.PostForm
	d := collectionData{Query: strings.TrimSpace(f.Get("query")), Mode: f.Get("mode"), Rerank: f.Get("rerank") != "", Searched: true}
	if n, err := strconv.Atoi(f.Get("top_k")); err == nil && n > 0 {
		d.TopK = n
	}
	if err := c.collection(q, &d); err != nil {
		return err
	}
	body := map[string]any{"query": d.Query, "mode": d.Mode, "top_k": d.TopK}
	if d.Rerank {
		body["rerank"] = true
	}
	var res struct {
		Data     []map[string]any `json:"data"`
		SearchMs any              `json:"search_ms"`
	}
	p := q.page(cell(d.Collection, "name"), "sources", &d)
	if err := c.call(q, "POST", "/v1/collections/"+url.PathEscape(q.r.PathValue("id"))+"/search", body, &res); err != nil {
		ae := apierr.From(err)
		p.Error = ae.Message
		c.render(q.w, ae.Status(), "collection", p)
		return nil
	}
	d.Results, d.SearchMs = res.Data, res.SearchMs
	c.render(q.w, http.StatusOK, "collection", p)
	return nil
}
