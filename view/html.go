package view

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"sort"

	"github.com/agentrl/agentrl/trajectory"
)

//go:embed report.tmpl report_js.tmpl
var templateFS embed.FS

var tmpl = template.Must(template.New("").ParseFS(templateFS, "report.tmpl", "report_js.tmpl"))

// page is what the "page" template renders.
type page struct {
	Title      string
	Source     string
	Serve      bool
	Total      int
	StopCounts []KV
	Sources    []string
	Plots      []Plot
	Rows       []Row
	Details    []Detail
	Capture    []captureView
}

func newPage(rows []Row, opts Options) page {
	p := page{Title: opts.Title, Total: len(rows), Plots: plots(rows), Capture: captureViews(opts.Capture, rows)}
	if p.Title == "" {
		p.Title = "agentrl trajectories"
	}
	stops := map[string]int{}
	sources := map[string]bool{}
	for _, r := range rows {
		stops[r.Stop]++
		if r.DataSource != "" {
			sources[r.DataSource] = true
		}
	}
	for s, c := range stops {
		p.StopCounts = append(p.StopCounts, KV{s, fmt.Sprint(c)})
	}
	sort.Slice(p.StopCounts, func(i, j int) bool { return p.StopCounts[i].Key < p.StopCounts[j].Key })
	for s := range sources {
		p.Sources = append(p.Sources, s)
	}
	sort.Strings(p.Sources)
	return p
}

// WriteHTML writes the self-contained report of trajs to w: the table,
// the summary plots and every trajectory in full. For files too large to
// show at once, serve them with NewHandler instead.
func WriteHTML(w io.Writer, trajs []*trajectory.Trajectory, opts Options) error {
	rows := make([]Row, len(trajs))
	details := make([]Detail, len(trajs))
	for i, t := range trajs {
		details[i] = DetailOf(i, t, opts)
		rows[i] = details[i].Row
	}
	p := newPage(rows, opts)
	p.Rows, p.Details = rows, details
	if err := tmpl.ExecuteTemplate(w, "page", p); err != nil {
		return fmt.Errorf("view: writing the report: %w", err)
	}
	return nil
}
