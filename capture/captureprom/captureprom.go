// Package captureprom exports a capture's counters to Prometheus: rollouts
// open and created, calls by dialect and outcome, the capture latency
// histogram (what capture adds to a call, the engine's time excluded),
// the time spent making records durable, and the rebuild outcomes —
// rebuilds, trajectories (chains), incomplete rollouts and dropped calls
// by reason. It reads capture.Stats at scrape time, so a call pays only
// the capture's own atomic counters.
//
//	reg.MustRegister(captureprom.New(c, captureprom.Options{}))
package captureprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentrl/agentrl/capture"
)

// Source is what the collector reads; *capture.Capture implements it.
type Source interface {
	Stats() capture.Stats
}

// Options configure a Collector.
type Options struct {
	// Namespace prefixes every metric name; "" means "agentrl".
	Namespace   string
	ConstLabels prometheus.Labels
}

// Collector is a prometheus.Collector over a capture's Stats.
type Collector struct {
	src                             Source
	open, created, calls, latency   *prometheus.Desc
	recordSeconds, rebuilds, chains *prometheus.Desc
	incomplete, dropped             *prometheus.Desc
}

// New returns a Collector reading src.
func New(src Source, opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "agentrl"
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "capture", name), help, labels, opts.ConstLabels)
	}
	return &Collector{
		src:           src,
		open:          d("rollouts_open", "Rollouts created and not finished, expired or deleted."),
		created:       d("rollouts_created_total", "Rollouts created."),
		calls:         d("calls_total", "Model calls by dialect and outcome: recorded (answered, the record durable first), aborted (ended without an answer), refused (before the engine).", "dialect", "outcome"),
		latency:       d("latency_seconds", "What capture adds to a recorded call: the continuation check, the delta, the records and the sync; the engine's time excluded."),
		recordSeconds: d("record_seconds_total", "Time spent making answers durable (the store's synced append)."),
		rebuilds:      d("rebuilds_total", "Rebuild calls (a rollout rebuilt for its trajectories and for its report counts twice)."),
		chains:        d("rebuild_trajectories_total", "Trajectories the rebuilds made: one per chain of verified continuations."),
		incomplete:    d("rebuild_incomplete_total", "Rebuilds of incomplete rollouts (a lost call, or expiry): their trajectories are withheld unless asked for."),
		dropped:       d("rebuild_dropped_calls_total", "Calls the rebuilds kept out of training, by reason: retry, auxiliary, aborted, other.", "reason"),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.created, c.calls, c.latency, c.recordSeconds, c.rebuilds, c.chains, c.incomplete, c.dropped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	k := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(st.RolloutsOpen))
	k(c.created, float64(st.RolloutsCreated))
	for _, d := range capture.Dialects {
		for _, o := range capture.Outcomes {
			k(c.calls, float64(st.Calls[d][o]), d, o)
		}
	}
	buckets := make(map[float64]uint64, len(capture.LatencyBounds))
	var cum uint64
	for i, b := range capture.LatencyBounds {
		cum += uint64(st.Latency.Counts[i])
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.latency, uint64(st.Latency.Count()), st.Latency.Sum.Seconds(), buckets)
	k(c.recordSeconds, st.RecordTime.Seconds())
	k(c.rebuilds, float64(st.Rebuild.Rebuilds))
	k(c.chains, float64(st.Rebuild.Trajectories))
	k(c.incomplete, float64(st.Rebuild.Incomplete))
	for _, r := range append(capture.DropKinds[:len(capture.DropKinds):len(capture.DropKinds)], "other") {
		k(c.dropped, float64(st.Rebuild.Dropped[r]), r)
	}
}
