package view_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/view"
)

// tables are the rows (cell texts) of the tables with class in doc.
func tables(doc *html.Node, class string) [][]string {
	var rows [][]string
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "table" {
			return
		}
		if c, _ := attr(n, "class"); c != class {
			return
		}
		walk(n, func(tr *html.Node) {
			if tr.Type != html.ElementNode || tr.Data != "tr" {
				return
			}
			var cells []string
			for td := tr.FirstChild; td != nil; td = td.NextSibling {
				if td.Type == html.ElementNode && td.Data == "td" {
					cells = append(cells, strings.TrimSpace(text(td)))
				}
			}
			if cells != nil {
				rows = append(rows, cells)
			}
		})
	})
	return rows
}

// The capture section shows each rollout's segments, linked to the rows
// of the trajectories they became, and the calls dropped, with why —
// the reasons as text, however hostile (they quote what a harness sent).
func TestCaptureSegmentsAndDrops(t *testing.T) {
	a, b := planted(t), planted(t)
	a.ID, b.ID = "ro_1-0", "ro_1-1"
	ro := view.CaptureRollout{Rollout: "ro_1", Calls: 5, Trajectories: 2,
		Segments: []view.CaptureSegment{
			{Call: "c0", Reason: "first call of the rollout", Trajectories: []string{"ro_1-0"}},
			{Call: "c3", Reason: "history rewritten: " + hostileScript, Trajectories: []string{"ro_1-1"}},
			{Call: "c4", Reason: "history rewritten: other tools"},
		},
		Dropped:       []view.CaptureCall{{Call: "c1", Reason: "retry: same prompt as c2, which the harness continued"}, {Call: "c4", Reason: "auxiliary: " + hostileAttr}},
		Ambiguous:     []view.CaptureCall{{Call: "c2", Reason: "ambiguous parent: also matches c1"}},
		SampledTokens: 40, DeliveredTokens: 30}
	withheld := view.CaptureRollout{Rollout: "ro_2", Calls: 1, Incomplete: true, IncompleteReason: "calls begun and never recorded (lost): [c1]",
		Segments: []view.CaptureSegment{{Call: "c0", Reason: "first call of the rollout", Trajectories: []string{"ro_2-0"}}}, SampledTokens: 8}
	raw, doc := render(t, []*trajectory.Trajectory{a, b}, view.Options{Capture: []view.CaptureRollout{ro, withheld}})
	require.NotContains(t, raw, hostileScript)
	require.NotContains(t, raw, "<img")

	require.Equal(t, [][]string{
		{"c0", "first call of the rollout", "#0 ro_1-0"},
		{"c3", "history rewritten: " + hostileScript, "#1 ro_1-1"},
		{"c4", "history rewritten: other tools", "none"},
		{"c0", "first call of the rollout", "ro_2-0 (not in this file)"},
	}, tables(doc, "capsegs"))
	require.Equal(t, [][]string{
		{"c1", "retry: same prompt as c2, which the harness continued"},
		{"c4", "auxiliary: " + hostileAttr},
	}, tables(doc, "capdropped"))
	require.Equal(t, [][]string{{"c2", "ambiguous parent: also matches c1"}}, tables(doc, "capambiguous"))

	// The links go to the trajectories' sections.
	var hrefs []string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "a" {
			if h, ok := attr(n, "href"); ok {
				hrefs = append(hrefs, h)
			}
		}
	})
	require.Equal(t, []string{"#t-0", "#t-1"}, hrefs)
	require.Contains(t, raw, "delivered 75% of 40 sampled tokens")
	require.Contains(t, raw, "incomplete: calls begun and never recorded (lost): [c1]")

	// Without capture rollouts there is no section.
	raw, _ = render(t, []*trajectory.Trajectory{a}, view.Options{})
	require.NotContains(t, raw, "capture rollouts")
}
