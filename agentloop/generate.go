package agentloop

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// PromptTokens sums the prompts sent (one per engine call: a resumed
	// call resends the tokens so far), and CachedTokens those the engine
	// said it served from its prefix cache (server.TokenOutput).
	PromptTokens, CachedTokens int
	// RoutedExperts is the MoE routing of prompt ++ TokenIDs from position
	// 0 (or the request's RoutedExpertsFrom), when the request asked for
	// it (SamplingParams.RoutedExperts) and the engine returned it: the
	// first call's, with only the new tokens' rows of each resumed call
	// appended (verl's llm_server resume loop). A resume asks only for
	// those rows (RoutedExpertsFrom), where the engine can cut them.
	RoutedExperts *server.Routing
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
// and logprobs of the pieces are concatenated exactly.
//
// When ctx ends first the generation is cut, not thrown away: an engine
// that implements server.Aborter is asked to abort req.RequestID and its
// answer (the tokens so far, StopAbort) is awaited for a few seconds, so
// that HTTP engines, whose cancelled calls lose their answer, still return
// the partial turn; an engine that answers a cancelled call with its tokens
// and an error (the in-process engine) keeps them too. Either way the
// tokens so far come back with StopAbort and a nil error.
//
// On any other error the tokens produced before it are returned with it.
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
		if req.Params.RoutedExperts && g.RoutedExperts != nil {
			// A resume fetches only the rows not held yet (SGLang's
			// routed_experts_start_len; engines that cannot cut send all).
			r.Params.RoutedExpertsFrom = min(req.Params.RoutedExpertsFrom+g.RoutedExperts.Rows(), len(r.PromptIDs))
		}
		out, err := generateCut(ctx, srv, r)
		g.PromptTokens += len(r.PromptIDs)
		g.CachedTokens += out.CachedTokens
		if aerr := g.add(out, &haveVersion, r.Params.RoutedExpertsFrom); aerr != nil {
			return g, aerr
		}
		if err != nil {
			if ctx.Err() != nil {
				// The caller's cut: what the engine returned with the
				// error is the partial turn.
				g.StopReason = server.StopAbort
				return g, nil
			}
			return g, err
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

// add appends one engine output to g after checking it.
func (g *Generation) add(out server.TokenOutput, haveVersion *bool, from int) error {
	if out.Logprobs != nil && len(out.Logprobs) != len(out.TokenIDs) {
		return fmt.Errorf("%w: engine returned %d logprobs for %d tokens", server.ErrBadResponse, len(out.Logprobs), len(out.TokenIDs))
	}
	if len(g.TokenIDs) > 0 && len(out.TokenIDs) > 0 && (g.Logprobs != nil) != (out.Logprobs != nil) {
		return fmt.Errorf("%w: resumed generation returned logprobs inconsistently", server.ErrBadResponse)
	}
	if len(out.TokenIDs) > 0 || !*haveVersion {
		if !*haveVersion {
			g.MinWeightVersion, g.MaxWeightVersion = out.WeightVersion, out.WeightVersion
			*haveVersion = true
		} else {
			g.MinWeightVersion = min(g.MinWeightVersion, out.WeightVersion)
			g.MaxWeightVersion = max(g.MaxWeightVersion, out.WeightVersion)
		}
	}
	if err := g.addRouting(out.RoutedExperts, from); err != nil {
		return err
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
	return nil
}

// addRouting keeps the first output's routing and appends, of each later
// one, the rows of the positions not covered yet: the rows of tokens
// generated before a resume keep the routing of the weights that made them.
// A later output may start at any position up to the rows held (a resume
// asked only for the rows it lacked); the first starts where the request
// asked, from (0 for the whole sequence).
func (g *Generation) addRouting(r *server.Routing, from int) error {
	if r == nil {
		return nil
	}
	if err := r.Check(); err != nil {
		return fmt.Errorf("%w: %w", server.ErrBadResponse, err)
	}
	if g.RoutedExperts == nil {
		if r.Start != 0 && r.Start != from {
			return fmt.Errorf("%w: routed experts start at position %d, not 0 or the %d asked for", server.ErrBadResponse, r.Start, from)
		}
		g.RoutedExperts = &server.Routing{Start: r.Start, Layers: r.Layers, TopK: r.TopK, Experts: append([]int16(nil), r.Experts...)}
		return nil
	}
	have := g.RoutedExperts
	if r.Layers != have.Layers || r.TopK != have.TopK {
		return fmt.Errorf("%w: resumed generation's routed experts are %d layers × top-%d, before %d × %d", server.ErrBadResponse, r.Layers, r.TopK, have.Layers, have.TopK)
	}
	end := have.Start + have.Rows() // the first position not held
	if r.Start < have.Start || r.Start > end {
		return fmt.Errorf("%w: resumed generation's routed experts start at position %d, outside the %d..%d held", server.ErrBadResponse, r.Start, have.Start, end)
	}
	if rEnd := r.Start + r.Rows(); rEnd > end {
		w := r.Layers * r.TopK
		have.Experts = append(have.Experts, r.Experts[(end-r.Start)*w:]...)
	}
	return nil
}

// abortGrace bounds how long GenerateResumable waits for an engine to
// answer an aborted request after ctx ended; past it the call is cancelled
// and its tokens are lost. SGLang and vLLM answer an abort within one
// scheduler step, the in-process engine within one decode step: well under
// a second even for large batches.
const abortGrace = 3 * time.Second

// generateCut is one engine call. Without an Aborter (or a request id to
// abort) the call runs on ctx. With one it runs on a context detached from
// ctx, and ctx's end aborts the request instead of cancelling the call, so
// the engine's answer (the tokens so far) is not lost; the call is
// cancelled only if the engine has not answered abortGrace later.
func generateCut(ctx context.Context, srv server.LLMServer, req server.GenerateRequest) (server.TokenOutput, error) {
	ab, ok := srv.(server.Aborter)
	if !ok || req.RequestID == "" || ctx.Done() == nil {
		return srv.Generate(ctx, req)
	}
	if err := ctx.Err(); err != nil {
		return server.TokenOutput{}, err // nothing ran: nothing to keep
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cut)
		actx, acancel := context.WithTimeout(cctx, abortGrace)
		defer acancel()
		if err := ab.Abort(actx, req.RequestID); err != nil {
			cancel() // the engine will not answer the abort: cut the call
			return
		}
		<-actx.Done() // the call returned (cctx cancelled below) or the grace ran out
		cancel()
	})
	out, err := srv.Generate(cctx, req)
	if !stop() {
		cancel()
		<-cut // join the abort
	}
	return out, err
}
