package view

// CaptureRollout describes one black-box capture rollout for the report:
// how its calls became trajectories and what was kept out. It is a plain
// description — view does not import capture; cmd/agentrl fills it from
// capture's Report, which HarnessLoop stores in each trajectory.
type CaptureRollout struct {
	Rollout string
	// Calls recorded, Trajectories built from them.
	Calls, Trajectories int
	// Segments are the calls that start a segment (a new root: the
	// first call, a rewritten history, a sub-agent), each with why and
	// the ids of the trajectories it became.
	Segments []CaptureSegment
	// Dropped are the calls not trained (retries, auxiliary calls,
	// aborts), Ambiguous those whose parent could have been another
	// call; each with why.
	Dropped, Ambiguous []CaptureCall
	// Incomplete marks a rollout with a lost call or one that expired:
	// its trajectories are withheld unless asked for.
	Incomplete       bool
	IncompleteReason string
	// SampledTokens the engine sampled, DeliveredTokens trained (mask 1).
	SampledTokens, DeliveredTokens int
}

// CaptureSegment is a segment's first call.
type CaptureSegment struct {
	Call, Reason string
	Trajectories []string
}

// CaptureCall is a call and why it is reported.
type CaptureCall struct{ Call, Reason string }

// captureView is a CaptureRollout as the page shows it: segments linked
// to the rows of their trajectories.
type captureView struct {
	CaptureRollout
	Delivered string
	Links     [][]captureLink
}

// captureLink is a trajectory a segment became: its row number when the
// report has it (-1 when not, e.g. withheld).
type captureLink struct {
	ID string
	N  int
}

func captureViews(rs []CaptureRollout, rows []Row) []captureView {
	byID := make(map[string]int, len(rows))
	for _, r := range rows {
		if r.ID != "" {
			byID[r.ID] = r.N
		}
	}
	out := make([]captureView, len(rs))
	for i, r := range rs {
		v := captureView{CaptureRollout: r, Delivered: "—"}
		if r.SampledTokens > 0 {
			v.Delivered = num(100*float64(r.DeliveredTokens)/float64(r.SampledTokens)) + "%"
		}
		for _, s := range r.Segments {
			var links []captureLink
			for _, id := range s.Trajectories {
				n, ok := byID[id]
				if !ok {
					n = -1
				}
				links = append(links, captureLink{ID: id, N: n})
			}
			v.Links = append(v.Links, links)
		}
		out[i] = v
	}
	return out
}
