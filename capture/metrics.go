package capture

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/server/httpapi"
)

// The counters behind Stats that go beyond totals: calls by dialect and
// outcome, the capture latency histogram and the rebuild outcomes. They
// are atomics in fixed arrays, so a call pays a few atomic adds and no
// lock (capture/captureprom reads them at scrape time).

// Dialects are the dialects Stats.Calls is broken down by (httpapi's
// names); a call of none of them (a refused path) counts as "other".
var Dialects = []string{httpapi.DialectChat, httpapi.DialectResponses, httpapi.DialectMessages, "other"}

// Call outcomes, as Stats.Calls names them.
const (
	OutcomeRecorded = "recorded" // answered, its record durable first
	OutcomeAborted  = "aborted"  // begun and ended without an answer
	OutcomeRefused  = "refused"  // refused before the engine: no rollout, finished, over MaxCalls, n > 1
)

// Outcomes are the call outcomes.
var Outcomes = []string{OutcomeRecorded, OutcomeAborted, OutcomeRefused}

// Indices into Outcomes.
const (
	outRecorded = iota
	outAborted
	outRefused
)

// DropKinds are the kinds of dropped calls: the first word of a
// Report's Dropped reasons, as Stats.Rebuild.Dropped counts them.
var DropKinds = []string{"retry", "auxiliary", "aborted"}

// LatencyBounds are the upper bounds, in seconds, of the capture latency
// histogram's buckets: from a tenth of a millisecond (a continuation's
// check and delta) to a second (a stalled disk).
var LatencyBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

type metrics struct {
	calls   [4][3]atomic.Int64
	latency [14]atomic.Int64 // per bucket (not cumulative); the last is +Inf
	latSum  atomic.Int64     // nanoseconds
	// rebuilds, their trajectories and incomplete reports; dropped by
	// DropKinds, the last slot any other reason.
	rebuilds, chains, incomplete atomic.Int64
	dropped                      [4]atomic.Int64
}

func dialectIndex(d string) int {
	for i, x := range Dialects[:3] {
		if x == d {
			return i
		}
	}
	return 3
}

// dialectOfPath is the dialect of a model endpoint's path, for calls
// refused before httpapi decoded them.
func dialectOfPath(path string) string {
	switch {
	case strings.HasPrefix(path, "/v1/chat/"):
		return httpapi.DialectChat
	case strings.HasPrefix(path, "/v1/responses"):
		return httpapi.DialectResponses
	case strings.HasPrefix(path, "/v1/messages"):
		return httpapi.DialectMessages
	}
	return "other"
}

func (m *metrics) call(dialect string, outcome int) { m.calls[dialectIndex(dialect)][outcome].Add(1) }

// observe adds one recorded call's capture latency: the time Begin and
// Record took (continuation check, delta, records, the sync), not the
// engine's.
func (m *metrics) observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(LatencyBounds) && s > LatencyBounds[i] {
		i++
	}
	m.latency[i].Add(1)
	m.latSum.Add(int64(d))
}

// rebuilt counts one Rebuild's report.
func (m *metrics) rebuilt(rep Report) {
	m.rebuilds.Add(1)
	m.chains.Add(int64(rep.Trajectories))
	if rep.Incomplete {
		m.incomplete.Add(1)
	}
	for _, d := range rep.Dropped {
		kind, _, _ := strings.Cut(d.Reason, ":")
		i := 0
		for i < len(DropKinds) && DropKinds[i] != kind {
			i++
		}
		m.dropped[i].Add(1)
	}
}

// Latency is a histogram of capture latencies.
type Latency struct {
	// Counts[i] counts the calls of at most LatencyBounds[i] seconds
	// (and more than the bound before); the last entry those above every
	// bound. Not cumulative.
	Counts []int64
	Sum    time.Duration
}

// Count is the number of calls in the histogram.
func (l Latency) Count() int64 {
	n := int64(0)
	for _, c := range l.Counts {
		n += c
	}
	return n
}

// Rebuilds are the outcomes of the Rebuild calls so far (a rollout
// rebuilt twice, for its trajectories and its report, counts twice).
type Rebuilds struct {
	Rebuilds, Trajectories, Incomplete int64
	// Dropped counts the dropped calls by kind (DropKinds, and "other").
	Dropped map[string]int64
}

func (m *metrics) stats(st *Stats) {
	st.Calls = map[string]map[string]int64{}
	for i, d := range Dialects {
		byOutcome := map[string]int64{}
		for j, o := range Outcomes {
			byOutcome[o] = m.calls[i][j].Load()
		}
		st.Calls[d] = byOutcome
	}
	st.Latency.Counts = make([]int64, len(m.latency))
	for i := range m.latency {
		st.Latency.Counts[i] = m.latency[i].Load()
	}
	st.Latency.Sum = time.Duration(m.latSum.Load())
	st.Rebuild = Rebuilds{Rebuilds: m.rebuilds.Load(), Trajectories: m.chains.Load(), Incomplete: m.incomplete.Load(),
		Dropped: map[string]int64{}}
	for i, k := range append(DropKinds[:len(DropKinds):len(DropKinds)], "other") {
		st.Rebuild.Dropped[k] = m.dropped[i].Load()
	}
}
