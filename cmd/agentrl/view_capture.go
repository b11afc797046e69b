package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/view"
)

// captureRollouts is the glue between capture and view (which does not
// import capture): the capture rollouts the trajectories came from,
// each as view describes it. HarnessLoop stores its rollout's rebuild
// Report in every trajectory of it (capture.ExtraCaptureReport), and
// Rebuild the chain a trajectory holds (capture.ExtraCapture), which
// links each segment to the trajectories it became.
type captureRollouts struct {
	order   []string
	reports map[string]capture.Report
	// trajs[rollout][root call] are the trajectory ids of that segment.
	trajs map[string]map[string][]string
}

func newCaptureRollouts() *captureRollouts {
	return &captureRollouts{reports: map[string]capture.Report{}, trajs: map[string]map[string][]string{}}
}

// add reads t's capture extras, if any.
func (cr *captureRollouts) add(t *trajectory.Trajectory) error {
	if raw, ok := t.Extra[capture.ExtraCaptureReport]; ok {
		var rep capture.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			return fmt.Errorf("trajectory %q: extra %q: %w", t.ID, capture.ExtraCaptureReport, err)
		}
		if _, seen := cr.reports[rep.Rollout]; !seen {
			cr.order = append(cr.order, rep.Rollout)
		}
		cr.reports[rep.Rollout] = rep
	}
	if raw, ok := t.Extra[capture.ExtraCapture]; ok {
		var ci capture.ChainInfo
		if err := json.Unmarshal(raw, &ci); err != nil {
			return fmt.Errorf("trajectory %q: extra %q: %w", t.ID, capture.ExtraCapture, err)
		}
		if cr.trajs[ci.Rollout] == nil {
			cr.trajs[ci.Rollout] = map[string][]string{}
		}
		cr.trajs[ci.Rollout][ci.Root] = append(cr.trajs[ci.Rollout][ci.Root], t.ID)
	}
	return nil
}

// rollouts are the rollouts seen, in the order their first trajectory
// came.
func (cr *captureRollouts) rollouts() []view.CaptureRollout {
	out := make([]view.CaptureRollout, 0, len(cr.order))
	for _, id := range cr.order {
		rep := cr.reports[id]
		v := view.CaptureRollout{Rollout: id, Calls: rep.Calls, Trajectories: rep.Trajectories,
			Incomplete: rep.Incomplete, IncompleteReason: rep.IncompleteReason,
			SampledTokens: rep.SampledTokens, DeliveredTokens: rep.DeliveredTokens}
		for _, r := range rep.Roots {
			v.Segments = append(v.Segments, view.CaptureSegment{Call: r.Call, Reason: r.Reason, Trajectories: cr.trajs[id][r.Call]})
		}
		for _, d := range rep.Dropped {
			v.Dropped = append(v.Dropped, view.CaptureCall{Call: d.Call, Reason: d.Reason})
		}
		for _, d := range rep.Ambiguous {
			v.Ambiguous = append(v.Ambiguous, view.CaptureCall{Call: d.Call, Reason: d.Reason})
		}
		out = append(out, v)
	}
	return out
}

// captureRolloutsOf reads the file at path once, streaming (for --serve,
// where the trajectories are not all in memory).
func captureRolloutsOf(path string) ([]view.CaptureRollout, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := newCaptureRollouts()
	r := trajectory.NewJSONLReader(f)
	for {
		t, err := r.Next()
		if errors.Is(err, io.EOF) {
			return cr.rollouts(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := cr.add(t); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}
