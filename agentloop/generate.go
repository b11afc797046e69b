package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/server"
)

// Generation is one model turn, possibly stitched together from several
// engine calls.
type Generation struct {
	TokenIDs []int32
	// Logprobs is aligned with TokenIDs; nil when the engine returned none.
	Logprobs   []float32
	StopReason server.StopReason
	// MinWeightVersion and MaxWeightVersion bound the weight versions of
	// the outputs that produced TokenIDs.
	MinWeightVersion int64
	MaxWeightVersion int64
	// Preempted counts engine aborts that were resumed.
	Preempted int
}

// maxIdleResumes bounds resends after aborts that produced no token, so an
// engine that aborts everything forever cannot hang a trajectory.
const maxIdleResumes = 16

// ErrResume is returned when an engine keeps aborting a generation without
// producing tokens.
var ErrResume = errors.New("agentloop: engine keeps aborting the generation")

// GenerateResumable runs req and, when the engine aborts it while ctx is
// still live (a weight update paused the engine: partial rollout), resends
// the prompt plus the tokens produced so far with the remaining
// MaxNewTokens budget, until the generation ends for another reason. Tokens
// and logprobs of the pieces are concatenated exactly. When ctx is done the
// abort is the caller's: the tokens so far are returned with StopAbort.
//
// On an error the tokens produced before it are returned with it.
func GenerateResumable(ctx context.Context, srv server.LLMServer, req server.GenerateRequest) (Generation, error) {
	var g Generation
	budget := req.Params.MaxNewTokens
	prompt := req.PromptIDs
	haveVersion := false
	idle := 0
	for {
		r := req
		if len(g.TokenIDs) > 0 {
			seq := make([]int32, 0, len(prompt)+len(g.TokenIDs))
			r.PromptIDs = append(append(seq, prompt...), g.TokenIDs...)
		}
		if budget > 0 {
			r.Params.MaxNewTokens = budget - len(g.TokenIDs)
		}
		out, err := srv.Generate(ctx, r)
		if err != nil {
			return g, err
		}
		if out.Logprobs != nil && len(out.Logprobs) != len(out.TokenIDs) {
			return g, fmt.Errorf("%w: engine returned %d logprobs for %d tokens", server.ErrBadResponse, len(out.Logprobs), len(out.TokenIDs))
		}
		if len(g.TokenIDs) > 0 && len(out.TokenIDs) > 0 && (g.Logprobs != nil) != (out.Logprobs != nil) {
			return g, fmt.Errorf("%w: resumed generation returned logprobs inconsistently", server.ErrBadResponse)
		}
		if len(out.TokenIDs) > 0 || !haveVersion {
			if !haveVersion {
				g.MinWeightVersion, g.MaxWeightVersion = out.WeightVersion, out.WeightVersion
				haveVersion = true
			} else {
				g.MinWeightVersion = min(g.MinWeightVersion, out.WeightVersion)
				g.MaxWeightVersion = max(g.MaxWeightVersion, out.WeightVersion)
			}
		}
		if len(out.TokenIDs) > 0 {
			if out.Logprobs != nil && g.Logprobs == nil && len(g.TokenIDs) == 0 {
				g.Logprobs = make([]float32, 0, len(out.Logprobs))
			}
			g.TokenIDs = append(g.TokenIDs, out.TokenIDs...)
			if out.Logprobs != nil {
				g.Logprobs = append(g.Logprobs, out.Logprobs...)
			}
		}
		if out.StopReason != server.StopAbort {
			g.StopReason = out.StopReason
			return g, nil
		}
		if ctx.Err() != nil {
			g.StopReason = server.StopAbort
			return g, nil
		}
		if budget > 0 && len(g.TokenIDs) >= budget {
			g.StopReason = server.StopLength
			return g, nil
		}
		g.Preempted++
		if len(out.TokenIDs) == 0 {
			idle++
			if idle > maxIdleResumes {
				return g, fmt.Errorf("%w: %d aborts in a row with no new token", ErrResume, idle)
			}
		} else {
			idle = 0
		}
	}
}
