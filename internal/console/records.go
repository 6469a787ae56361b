package console

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// The records pages beyond the shared table: usage as a per-day chart
// (server-rendered SVG: no chart library, no script) with the model and key
// breakdowns, the limits with what remains, a policy decision's page.

type usageRow struct {
	Group            string  `json:"group"`
	Requests         float64 `json:"requests"`
	Errors           float64 `json:"errors"`
	PromptTokens     float64 `json:"prompt_tokens"`
	CompletionTokens float64 `json:"completion_tokens"`
	TotalTokens      float64 `json:"total_tokens"`
	// Name is the group's name where it is an id with one (a key's).
	Name string `json:"-"`
}

// bar is one day of the chart, its geometry computed here (the CSP allows
// no inline style; SVG attributes are not styles).
type bar struct {
	Day                 string
	Label               string // the axis label (every few days)
	Row                 usageRow
	X, Y, W, H          float64
	ErrY, ErrH, LabelX  float64
	ShowLabel, HasValue bool
}

type usageData struct {
	Since, Until   string // YYYY-MM-DD, the form's values
	Metric         string // total_tokens or requests
	Days           []bar
	Max            float64
	Ticks          []tick
	Width, Height  float64
	PlotTop, PlotH float64
	ByModel, ByKey []usageRow
	MaxModel       float64
	MaxKey         float64
	Totals         usageRow
}

type tick struct {
	Y     float64
	Label string
}

const (
	chartW, chartH  = 960.0, 260.0
	chartLeft       = 64.0
	chartTop        = 12.0
	chartBottom     = 36.0
	maxDaysInChart  = 366
	defaultDaysBack = 30
)

func usagePage(c *Console, q *req) error {
	qs := q.r.URL.Query()
	d := usageData{Since: qs.Get("since"), Until: qs.Get("until"), Metric: qs.Get("metric"), Width: chartW, Height: chartH}
	if d.Metric != "requests" {
		d.Metric = "total_tokens"
	}
	now := time.Now().UTC()
	until := now.Truncate(24 * time.Hour)
	since := until.AddDate(0, 0, -(defaultDaysBack - 1))
	if d.Until != "" {
		t, err := time.Parse("2006-01-02", d.Until)
		if err != nil {
			return apierr.Invalid("until", "Dates are YYYY-MM-DD.")
		}
		until = t
	}
	if d.Since != "" {
		t, err := time.Parse("2006-01-02", d.Since)
		if err != nil {
			return apierr.Invalid("since", "Dates are YYYY-MM-DD.")
		}
		since = t
	} else if d.Until != "" {
		since = until.AddDate(0, 0, -(defaultDaysBack - 1))
	}
	if until.Before(since) {
		return apierr.Invalid("until", "'until' is before 'since'.")
	}
	if until.Sub(since) > maxDaysInChart*24*time.Hour {
		since = until.AddDate(0, 0, -(maxDaysInChart - 1))
	}
	d.Since, d.Until = since.Format("2006-01-02"), until.Format("2006-01-02")
	v := url.Values{"since": {strconv.FormatInt(since.Unix(), 10)}, "until": {strconv.FormatInt(until.Add(24*time.Hour).Unix(), 10)}}
	get := func(group string) ([]usageRow, error) {
		v.Set("group_by", group)
		var res struct {
			Data []usageRow `json:"data"`
		}
		err := c.call(q, "GET", "/v1/usage?"+v.Encode(), nil, &res)
		return res.Data, err
	}
	days, err := get("day")
	if err != nil {
		return err
	}
	if d.ByModel, err = get("model"); err != nil {
		return err
	}
	if d.ByKey, err = get("key"); err != nil {
		return err
	}
	metric := func(r usageRow) float64 {
		if d.Metric == "requests" {
			return r.Requests
		}
		return r.TotalTokens
	}
	byDay := map[string]usageRow{}
	for _, r := range days {
		byDay[r.Group] = r
		d.Totals.Requests += r.Requests
		d.Totals.Errors += r.Errors
		d.Totals.PromptTokens += r.PromptTokens
		d.Totals.CompletionTokens += r.CompletionTokens
		d.Totals.TotalTokens += r.TotalTokens
		d.Max = max(d.Max, metric(r))
	}
	for _, r := range d.ByModel {
		d.MaxModel = max(d.MaxModel, r.TotalTokens)
	}
	keyNames := c.names(q, "keys")
	for i, r := range d.ByKey {
		d.ByKey[i].Name = keyNames[r.Group]
		d.MaxKey = max(d.MaxKey, r.TotalTokens)
	}
	sortRows(d.ByModel)
	sortRows(d.ByKey)
	// One bar a day, days without use included (a gap is information).
	n := int(until.Sub(since).Hours()/24) + 1
	plotW := chartW - chartLeft - 8
	d.PlotTop, d.PlotH = chartTop, chartH-chartTop-chartBottom
	slot := plotW / float64(n)
	every := max(1, n/10)
	scale := niceMax(d.Max)
	for i := range 5 {
		if scale == 0 && i < 4 {
			continue // no use: only the baseline
		}
		val := scale * float64(4-i) / 4
		d.Ticks = append(d.Ticks, tick{Y: chartTop + d.PlotH*float64(i)/4, Label: short(val)})
	}
	for i := 0; i < n; i++ {
		day := since.AddDate(0, 0, i).Format("2006-01-02")
		r, ok := byDay[day]
		b := bar{Day: day, Row: r, HasValue: ok, X: chartLeft + float64(i)*slot + slot*0.15, W: max(1, slot*0.7), LabelX: chartLeft + float64(i)*slot + slot/2}
		if r.Group == "" {
			b.Row.Group = day
		}
		if scale > 0 {
			b.H = d.PlotH * metric(r) / scale
			if d.Metric == "requests" && r.Errors > 0 {
				b.ErrH = d.PlotH * r.Errors / scale
			}
		}
		b.Y = chartTop + d.PlotH - b.H
		b.ErrY = chartTop + d.PlotH - b.ErrH
		b.X, b.W, b.LabelX, b.H, b.Y, b.ErrH, b.ErrY = r2(b.X), r2(b.W), r2(b.LabelX), r2(b.H), r2(b.Y), r2(b.ErrH), r2(b.ErrY)
		if i%every == 0 || i == n-1 {
			b.ShowLabel, b.Label = true, day[5:]
		}
		d.Days = append(d.Days, b)
	}
	return c.show(q, http.StatusOK, "usage", "Usage", "usage", d)
}

// r2 rounds a coordinate to hundredths (shorter attributes).
func r2(v float64) float64 { return math.Round(v*100) / 100 }

func sortRows(rs []usageRow) {
	slices.SortStableFunc(rs, func(a, b usageRow) int {
		switch {
		case a.TotalTokens > b.TotalTokens:
			return -1
		case a.TotalTokens < b.TotalTokens:
			return 1
		}
		return strings.Compare(a.Group, b.Group)
	})
}

// niceMax rounds the chart's top up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short renders a count for an axis: 950, 1.2k, 3.4M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// ---------------------------------------------------------------- limits

func limitsPage(c *Console, q *req) error {
	var res struct {
		Data []map[string]any `json:"data"`
	}
	if err := c.call(q, "GET", "/v1/limits", nil, &res); err != nil {
		// The page with the API's reason (no limits enforced, a scope).
		return c.refused(q, "limits", "Limits", "limits", err, func(*apierr.Error) any { return []map[string]any(nil) })
	}
	return c.show(q, http.StatusOK, "limits", "Limits", "limits", res.Data)
}

// ---------------------------------------------------------------- decisions

func decisionPage(c *Console, q *req) error {
	id := q.r.PathValue("id")
	var d map[string]any
	if err := c.call(q, "GET", "/v1/policy_decisions/"+url.PathEscape(id), nil, &d); err != nil {
		return err
	}
	// The other decisions about the same request.
	var others struct {
		Data []map[string]any `json:"data"`
	}
	if rid := str(d["request_id"]); rid != "" {
		_ = c.call(q, "GET", "/v1/policy_decisions?limit=100&request_id="+url.QueryEscape(rid), nil, &others)
	}
	var siblings []map[string]any
	for _, o := range others.Data {
		if str(o["id"]) != id {
			siblings = append(siblings, o)
		}
	}
	return c.show(q, http.StatusOK, "decision", "Policy decision "+id, "decisions", map[string]any{"Decision": d, "Others": siblings})
}

// requestDecisions lists the policy decisions about a request (none when
// the key may not read them).
func (c *Console) requestDecisions(q *req, requestID string) []map[string]any {
	var res struct {
		Data []map[string]any `json:"data"`
	}
	_ = c.call(q, "GET", "/v1/policy_decisions?limit=100&request_id="+url.QueryEscape(requestID), nil, &res)
	return res.Data
}

type breakdownView struct {
	Title, Kind string
	Rows        []usageRow
	Max         float64
}

func init() {
	funcs["f0"] = func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	// pct is a as a percentage of b (0 when b is not positive).
	funcs["pct"] = func(a, b any) string {
		x, y := num(a), num(b)
		if y <= 0 {
			return "0"
		}
		return strconv.FormatFloat(max(0, min(100, 100*x/y)), 'f', 1, 64)
	}
	funcs["breakdown"] = func(title, kind string, rows []usageRow, m float64) breakdownView {
		return breakdownView{Title: title, Kind: kind, Rows: rows, Max: m}
	}
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}
