package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// RebuildOptions tune Rebuild.
type RebuildOptions struct {
	// KeepIncomplete returns the trajectories of an incomplete rollout
	// (a call begun and never recorded, or expiry) instead of none.
	KeepIncomplete bool
	// Auxiliary recognizes auxiliary calls (title generation, summaries,
	// memory extraction): a segment whose first call matches a rule is
	// kept out of training, so it takes neither the main chain nor the
	// reward, and is reported. nil means DefaultAuxiliary; an empty
	// non-nil list trains every segment.
	Auxiliary []AuxRule
}

// AuxRule recognizes an auxiliary call: every field that is set must
// match the segment's first call.
type AuxRule struct {
	// Name is what the report says.
	Name string
	// SystemContains: the call's system message contains this text.
	SystemContains string
	// LastUserContains: its last user message contains this text.
	LastUserContains string
	// NoTools: it offers no tools while another segment of the rollout
	// does (a harness's side call next to its tool loop).
	NoTools bool
	// SingleCall: the segment is this one call (nothing continued it).
	SingleCall bool
}

// DefaultAuxiliary is the rule measured harnesses need: a one-call
// segment without the tools the rest of the rollout offers is a side
// call (opencode's and crush's title generation, qwen-code's memory
// extraction).
var DefaultAuxiliary = []AuxRule{{Name: "a one-call segment without the rollout's tools (title, memory)", NoTools: true, SingleCall: true}}

// matches says whether r recognizes the segment rooted at root.
func (r AuxRule) matches(root *callState, continued, toolsElsewhere bool) bool {
	m := root.rec.Messages
	if r.SystemContains != "" && !(len(m) > 0 && m[0].Role == "system" && strings.Contains(m[0].Content, r.SystemContains)) {
		return false
	}
	if r.LastUserContains != "" {
		last := ""
		for _, msg := range m {
			if msg.Role == "user" {
				last = msg.Content
			}
		}
		if !strings.Contains(last, r.LastUserContains) {
			return false
		}
	}
	if r.NoTools && (len(root.rec.Tools) > 0 || !toolsElsewhere) {
		return false
	}
	if r.SingleCall && continued {
		return false
	}
	return r.SystemContains != "" || r.LastUserContains != "" || r.NoTools || r.SingleCall
}

// Report says what a Rebuild made of a rollout's calls.
type Report struct {
	Rollout string `json:"rollout"`
	Calls   int    `json:"calls"`
	// Trajectories is how many were built: one per chain of verified
	// continuations; a fork or a sub-agent is a chain of its own that
	// starts where it left its parent's.
	Trajectories int `json:"trajectories"`
	// Roots are the calls that start a segment, each with why.
	Roots []Dropped `json:"roots"`
	// Dropped are calls not trained, each with why (retries, aborts).
	Dropped []Dropped `json:"dropped,omitempty"`
	// Ambiguous are calls whose parent could have been another call with
	// other tokens.
	Ambiguous []Dropped `json:"ambiguous,omitempty"`
	// Incomplete marks a rollout with a lost call or one that expired;
	// its trajectories are withheld unless KeepIncomplete.
	Incomplete       bool   `json:"incomplete"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	// SampledTokens counts the tokens of every recorded call,
	// DeliveredTokens those with mask 1 in the trajectories returned;
	// Delivered is their ratio (1 when nothing was sampled).
	SampledTokens   int     `json:"sampled_tokens"`
	DeliveredTokens int     `json:"delivered_tokens"`
	Delivered       float64 `json:"delivered"`
}

// ExtraCapture is the Trajectory.Extra key under which Rebuild says
// which calls a trajectory holds (ChainInfo, JSON).
const ExtraCapture = "capture"

// ChainInfo is what a rebuilt trajectory says of its chain.
type ChainInfo struct {
	Rollout string `json:"rollout"`
	// Calls are the chain's calls trained in this trajectory (mask 1),
	// in order; the SharedCalls before them are in its prompt, trained
	// in another trajectory of the rollout.
	Calls       []string `json:"calls"`
	SharedCalls int      `json:"shared_calls"`
	// Root is the call the chain's segment starts at, and Segment why it
	// starts one.
	Root    string `json:"root"`
	Segment string `json:"segment"`
}

// Dropped names a call and why it is reported.
type Dropped struct {
	Call   string `json:"call"`
	Reason string `json:"reason"`
}

// dropped is Dropped within the package.
type dropped = Dropped

// Rebuild turns the rollout's recorded calls into trajectories through
// trajectory.Builder: for each chain, the prompt is its first call's
// prompt, then each call's sampled tokens (mask 1, their logprobs) and
// the next call's delta (mask 0), so prompt ++ response is the chain's
// last sequence. Calls form a tree by their verified parents; each leaf
// gives a chain from the root, longest first, and a chain that shares
// calls with one built before starts after them (its prompt holds them),
// so no sampled token is trained twice. A retry — a call with the same
// prompt as a sibling — is dropped when the harness continued the
// sibling, and the last of several unanswered retries is kept. The
// rollout's reward goes to every trajectory (broadcast), its group is
// their GroupID, and each gets its own ID ("{rollout}-{n}").
func (c *Capture) Rebuild(ctx context.Context, id string, opts RebuildOptions) ([]*trajectory.Trajectory, Report, error) {
	trajs, rep, err := c.rebuild(ctx, id, opts)
	if err == nil {
		c.m.rebuilt(rep)
	}
	return trajs, rep, err
}

func (c *Capture) rebuild(ctx context.Context, id string, opts RebuildOptions) ([]*trajectory.Trajectory, Report, error) {
	rep := Report{Rollout: id, Delivered: 1}
	if _, err := c.lookup(ctx, id); err != nil {
		return nil, rep, err
	}
	recs, err := c.cfg.Store.Load(ctx, id)
	if err != nil {
		return nil, rep, err
	}
	ro, err := replay(id, recs)
	if err != nil {
		return nil, rep, err
	}
	// replay drops a finished rollout's index; Rebuild indexes the
	// calls again.
	idx := newRollout(ro.info, ro.keyHash)
	for _, r := range recs {
		if r.Kind != KindCall {
			continue
		}
		prompt, err := idx.promptOf(r.Call)
		if err != nil {
			return nil, rep, fmt.Errorf("capture: rollout %s: %w", id, err)
		}
		idx.add(r.Call, prompt)
	}
	calls, reward := idx.calls, ro.reward
	rep.Calls = len(calls)
	rep.Dropped = append(rep.Dropped, ro.aborted...)
	if len(ro.lost) > 0 {
		sort.Strings(ro.lost)
		rep.Incomplete, rep.IncompleteReason = true, fmt.Sprintf("calls begun and never recorded (lost): %v", ro.lost)
	} else if ro.finishReason == "expired" {
		rep.Incomplete, rep.IncompleteReason = true, "the rollout expired while idle"
	}
	for _, cs := range calls {
		rep.SampledTokens += len(cs.rec.SampledIDs)
		if cs.rec.Parent == "" {
			rep.Roots = append(rep.Roots, Dropped{Call: cs.rec.ID, Reason: cs.rec.Segment})
		} else if len(cs.rec.Segment) > 0 {
			rep.Ambiguous = append(rep.Ambiguous, Dropped{Call: cs.rec.ID, Reason: cs.rec.Segment})
		}
	}

	kept, retryDrops := dropRetries(calls)
	rep.Dropped = append(rep.Dropped, retryDrops...)
	rep.Dropped = append(rep.Dropped, dropAuxiliary(calls, kept, opts.Auxiliary)...)
	paths := chains(calls, kept)
	if rep.Incomplete && !opts.KeepIncomplete {
		rep.Delivered = fraction(0, rep.SampledTokens)
		return nil, rep, nil
	}
	claimed := map[*callState]bool{}
	var out []*trajectory.Trajectory
	for _, path := range paths {
		u := 0
		for u < len(path) && claimed[path[u]] {
			u++
		}
		t, err := buildChain(path[u:])
		if err != nil {
			return nil, rep, fmt.Errorf("capture: rollout %s: %w", id, err)
		}
		for _, cs := range path[u:] {
			claimed[cs] = true
		}
		t.ID, t.Index, t.GroupID = fmt.Sprintf("%s-%d", id, len(out)), len(out), ro.info.Group
		if imgs := chainImages(path[len(path)-1].rec.Messages); len(imgs) > 0 {
			seq := append(append(make([]int32, 0, len(t.PromptIDs)+len(t.ResponseIDs)), t.PromptIDs...), t.ResponseIDs...)
			if t.MultiModal, err = c.cfg.Vision.MultiModal(ctx, imgs, seq, "trajectory "+t.ID); err != nil {
				return nil, rep, fmt.Errorf("capture: rollout %s: %w", id, err)
			}
		}
		if reward != nil {
			v := *reward
			t.Reward = &v
		}
		ids := make([]string, 0, len(path)-u)
		for _, cs := range path[u:] {
			ids = append(ids, cs.rec.ID)
		}
		extra, _ := json.Marshal(ChainInfo{Rollout: id, Calls: ids, Root: path[0].rec.ID, Segment: path[0].rec.Segment, SharedCalls: u})
		t.Extra = map[string]json.RawMessage{ExtraCapture: extra}
		rep.DeliveredTokens += t.MaskOnes()
		out = append(out, t)
	}
	rep.Trajectories = len(out)
	rep.Delivered = fraction(rep.DeliveredTokens, rep.SampledTokens)
	return out, rep, nil
}

// chainImages are the images of a chain's last call's conversation, in
// the order of their blocks: every image of the trajectory, since each
// call's history holds the earlier calls' and assistant turns have none.
func chainImages(msgs []chat.Message) []*chat.Image {
	var out []*chat.Image
	for _, m := range msgs {
		out = append(out, m.Images()...)
	}
	return out
}

func fraction(n, d int) float64 {
	if d == 0 {
		return 1
	}
	return float64(n) / float64(d)
}

// dropRetries keeps the calls worth training: of siblings with the same
// whole prompt (a harness retry: it never saw the first answer), those
// the harness continued, or, when it continued none, the last one.
func dropRetries(calls []*callState) (map[*callState]bool, []Dropped) {
	kept := map[*callState]bool{}
	hasChild := map[string]bool{}
	for _, cs := range calls {
		kept[cs] = true
		if cs.rec.Parent != "" {
			hasChild[cs.rec.Parent] = true
		}
	}
	type sibKey struct{ parent, prompt string }
	groups := map[sibKey][]*callState{}
	var order []sibKey
	for _, cs := range calls {
		k := sibKey{cs.rec.Parent, fmt.Sprint(cs.prompt)}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], cs)
	}
	var drops []Dropped
	for _, k := range order {
		sibs := groups[k]
		if len(sibs) < 2 {
			continue
		}
		var continued []*callState
		for _, cs := range sibs {
			if hasChild[cs.rec.ID] {
				continued = append(continued, cs)
			}
		}
		if len(continued) == 0 {
			last := sibs[len(sibs)-1]
			for _, cs := range sibs[:len(sibs)-1] {
				kept[cs] = false
				drops = append(drops, Dropped{Call: cs.rec.ID, Reason: fmt.Sprintf("retry: same prompt as %s, whose answer is kept (the last; ambiguous: the harness continued neither)", last.rec.ID)})
			}
			continue
		}
		for _, cs := range sibs {
			if !hasChild[cs.rec.ID] {
				kept[cs] = false
				drops = append(drops, Dropped{Call: cs.rec.ID, Reason: fmt.Sprintf("retry: same prompt as %s, which the harness continued", continued[0].rec.ID)})
			}
		}
	}
	return kept, drops
}

// dropAuxiliary unkeeps the segments an AuxRule recognizes, root and
// descendants.
func dropAuxiliary(calls []*callState, kept map[*callState]bool, rules []AuxRule) []Dropped {
	if rules == nil {
		rules = DefaultAuxiliary
	}
	children := map[string][]*callState{}
	withTools := 0
	for _, cs := range calls {
		if cs.rec.Parent != "" {
			children[cs.rec.Parent] = append(children[cs.rec.Parent], cs)
		}
		if len(cs.rec.Tools) > 0 {
			withTools++
		}
	}
	var drops []Dropped
	for _, root := range calls {
		if root.rec.Parent != "" || !kept[root] {
			continue
		}
		toolsElsewhere := withTools > 0 && len(root.rec.Tools) == 0
		for _, r := range rules {
			if !r.matches(root, len(children[root.rec.ID]) > 0, toolsElsewhere) {
				continue
			}
			stack := []*callState{root}
			for len(stack) > 0 {
				cs := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if kept[cs] {
					kept[cs] = false
					drops = append(drops, Dropped{Call: cs.rec.ID, Reason: "auxiliary: " + r.Name})
				}
				stack = append(stack, children[cs.rec.ID]...)
			}
			break
		}
	}
	return drops
}

// chains are the root-to-leaf paths of the kept calls, longest first
// (by calls, then sampled tokens), then in recording order.
func chains(calls []*callState, kept map[*callState]bool) [][]*callState {
	byID := map[string]*callState{}
	hasKeptChild := map[string]bool{}
	for _, cs := range calls {
		byID[cs.rec.ID] = cs
		if kept[cs] && cs.rec.Parent != "" {
			hasKeptChild[cs.rec.Parent] = true
		}
	}
	var paths [][]*callState
	for _, cs := range calls {
		if !kept[cs] || hasKeptChild[cs.rec.ID] {
			continue
		}
		var path []*callState
		for p := cs; p != nil; p = byID[p.rec.Parent] {
			path = append(path, p)
			if p.rec.Parent == "" {
				break
			}
		}
		for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
			path[i], path[j] = path[j], path[i]
		}
		paths = append(paths, path)
	}
	sampled := func(p []*callState) int {
		n := 0
		for _, cs := range p {
			n += len(cs.rec.SampledIDs)
		}
		return n
	}
	sort.SliceStable(paths, func(i, j int) bool {
		if len(paths[i]) != len(paths[j]) {
			return len(paths[i]) > len(paths[j])
		}
		return sampled(paths[i]) > sampled(paths[j])
	})
	return paths
}

// buildChain is one trajectory: path[0]'s prompt, then each call's
// sampled tokens and the next call's delta, through a Builder.
func buildChain(path []*callState) (*trajectory.Trajectory, error) {
	first := path[0]
	b := trajectory.NewBuilder(first.prompt)
	minV, maxV := first.rec.WeightVersion, first.rec.WeightVersion
	var t trajectory.Timing
	for i, cs := range path {
		if i > 0 {
			prev := path[i-1]
			if len(cs.prompt) < len(prev.full) || !equalIDs(cs.prompt[:len(prev.full)], prev.full) {
				return nil, fmt.Errorf("call %s's prompt does not start with %s's prompt and sampled tokens", cs.rec.ID, prev.rec.ID)
			}
			if err := b.AppendObservation(cs.prompt[len(prev.full):]); err != nil {
				return nil, fmt.Errorf("call %s: %w", cs.rec.ID, err)
			}
		}
		if err := b.AppendModel(cs.rec.SampledIDs, cs.rec.Logprobs); err != nil {
			return nil, fmt.Errorf("call %s: %w", cs.rec.ID, err)
		}
		minV, maxV = min(minV, cs.rec.WeightVersion), max(maxV, cs.rec.WeightVersion)
		t.Generate += cs.rec.Recorded.Sub(cs.rec.Dispatched)
	}
	tr := b.Build()
	last := path[len(path)-1].rec
	tr.NumTurns = len(path)
	tr.MinWeightVersion, tr.MaxWeightVersion = minV, maxV
	tr.Timing = trajectory.Timing{Generate: t.Generate, Total: last.Recorded.Sub(first.rec.Received)}
	switch server.StopReason(last.StopReason) {
	case server.StopLength:
		tr.StopReason = trajectory.StopResponseLength
	case server.StopAbort:
		tr.StopReason = trajectory.StopAborted
	default:
		tr.StopReason = trajectory.StopCompleted
	}
	return tr, nil
}
