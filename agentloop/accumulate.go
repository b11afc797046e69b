package agentloop

import (
	"fmt"
	"time"

	"github.com/agentrl/agentrl/trajectory"
)

// Accumulator gathers finished groups into a batch: every Result (for the
// metrics and the errors), the kept trajectories (Result.All of the groups
// Options.KeepGroup did not filter: every trajectory of a multi-output
// rollout, nil entries left out) in the order the groups were added, and
// their collation. Generate uses it, and so does a
// caller that consumes Stream itself (the CLI's rollout), so that both
// keep, count and collate alike. It is not safe for concurrent use.
type Accumulator struct {
	start   time.Time
	results []Result
	kept    []*trajectory.Trajectory
}

// NewAccumulator starts an accumulator; Metrics' wall time runs from here.
func NewAccumulator() *Accumulator { return &Accumulator{start: time.Now()} }

// Add records a finished group and returns its kept trajectories (none
// when the group was filtered).
func (a *Accumulator) Add(r Result) []*trajectory.Trajectory {
	a.results = append(a.results, r)
	if r.Filtered {
		return nil
	}
	n := len(a.kept)
	a.kept = append(a.kept, r.All()...) // a multi-output rollout's every trajectory is a row
	return a.kept[n:len(a.kept):len(a.kept)]
}

// Results are the groups added, in order.
func (a *Accumulator) Results() []Result { return a.results }

// Trajectories are the kept trajectories, in group and rollout order: the
// rows of Collate's batch.
func (a *Accumulator) Trajectories() []*trajectory.Trajectory { return a.kept }

// Metrics summarizes every group added (filtered ones included) over the
// wall time since NewAccumulator.
func (a *Accumulator) Metrics() Metrics {
	return ComputeMetrics(a.results, time.Since(a.start))
}

// Collate collates the kept trajectories; a nil batch when none was kept.
func (a *Accumulator) Collate(opts trajectory.CollateOptions) (*trajectory.Batch, error) {
	if len(a.kept) == 0 {
		return nil, nil
	}
	b, err := trajectory.Collate(a.kept, opts)
	if err != nil {
		return nil, fmt.Errorf("agentloop: collating %d trajectories: %w", len(a.kept), err)
	}
	return b, nil
}
