package capture

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/chat"
)

// rollout is one rollout's in-memory index, rebuilt from its log on
// restart.
type rollout struct {
	info    RolloutInfo
	keyHash [32]byte

	mu       sync.Mutex
	calls    []*callState
	byID     map[string]*callState
	begun    map[string]bool // begun, neither recorded nor aborted
	aborted  []dropped
	reward   *float64
	finished bool
	// finishReason is "" for Finish, "expired" for idle expiry.
	finishReason string
	// lost are calls begun and never recorded nor aborted when the log
	// was replayed: the process died mid-call.
	lost []string
	// lastUsed is when the rollout was last used (Unix nanoseconds),
	// outside mu: expiry checks it without waiting for a call's sync.
	lastUsed atomic.Int64
	nextCall int
	deleted  bool
	// ended are the calls aborted; with a shared store, seen is how many
	// records of the log this replica has applied (see Capture.catchUp).
	ended map[string]bool
	seen  int
	// here are the calls this process began and has not yet recorded nor
	// aborted. With a shared store begun also holds other replicas'
	// calls, in flight there or lost with a replica that died: only here
	// are this process's to abort, and a dead replica's must stay begun
	// and never recorded, so that the rollout is incomplete.
	here map[string]bool
}

// callState is a recorded call and its whole sequence (prompt ++ sampled).
type callState struct {
	rec    *CallRecord
	prompt []int32
	full   []int32
}

func newRollout(info RolloutInfo, digest [32]byte) *rollout {
	return &rollout{info: info, keyHash: digest, byID: map[string]*callState{}, begun: map[string]bool{}, ended: map[string]bool{}, here: map[string]bool{}}
}

// add indexes a recorded call whose whole prompt is prompt.
func (ro *rollout) add(rec *CallRecord, prompt []int32) {
	rec = indexed(rec)
	full := make([]int32, 0, len(prompt)+len(rec.SampledIDs))
	full = append(append(full, prompt...), rec.SampledIDs...)
	cs := &callState{rec: rec, prompt: full[:len(prompt):len(prompt)], full: full}
	ro.calls = append(ro.calls, cs)
	ro.byID[rec.ID] = cs
}

func (ro *rollout) finish(reason string) {
	ro.finished, ro.finishReason = true, reason
	// The index is only needed to continue calls; Rebuild reads the log.
	ro.byID = map[string]*callState{}
	ro.calls = nil
}

// replay rebuilds a rollout from its log after a restart: calls begun
// and never recorded nor aborted are lost (the process died mid-call).
func replay(id string, recs []Record) (*rollout, error) {
	ro, err := replayRecords(id, recs)
	if err != nil {
		return nil, err
	}
	for cid := range ro.begun {
		ro.lost = append(ro.lost, cid)
	}
	ro.begun = map[string]bool{}
	return ro, nil
}

// replayRecords rebuilds a rollout from its log, calls begun and not
// recorded left in begun.
func replayRecords(id string, recs []Record) (*rollout, error) {
	if len(recs) == 0 || recs[0].Kind != KindRollout {
		return nil, fmt.Errorf("capture: rollout %s's log does not start with its rollout record", id)
	}
	info := *recs[0].Rollout
	if info.ID != id {
		return nil, fmt.Errorf("capture: rollout %s's log names rollout %s", id, info.ID)
	}
	var digest [32]byte
	if _, err := hex.Decode(digest[:], []byte(info.KeySHA256)); err != nil {
		return nil, fmt.Errorf("capture: rollout %s: key_sha256: %w", id, err)
	}
	ro := newRollout(info, digest)
	for i, r := range recs[1:] {
		if err := ro.apply(r); err != nil {
			return nil, fmt.Errorf("capture: rollout %s's log, record %d: %w", id, i+2, err)
		}
	}
	return ro, nil
}

// apply brings ro up to date with the next record of its log. It is
// idempotent per call id, because with a shared store a replica reads
// back its own records, which it indexed when it wrote them (and a log
// with a record twice indexes it once).
func (ro *rollout) apply(r Record) error {
	switch r.Kind {
	case KindRollout:
		return errors.New("a second rollout record")
	case KindBegin:
		ro.nextCall++
		if ro.byID[r.CallID] == nil && !ro.ended[r.CallID] {
			ro.begun[r.CallID] = true
		}
	case KindAbort:
		delete(ro.begun, r.CallID)
		if !ro.ended[r.CallID] {
			ro.ended[r.CallID] = true
			ro.aborted = append(ro.aborted, dropped{Call: r.CallID, Reason: "aborted: " + r.Reason})
		}
	case KindCall:
		delete(ro.begun, r.Call.ID)
		if ro.byID[r.Call.ID] != nil || ro.finished {
			return nil
		}
		prompt, err := ro.promptOf(r.Call)
		if err != nil {
			return err
		}
		ro.add(r.Call, prompt)
	case KindReward:
		v := *r.Reward
		ro.reward = &v
	case KindFinish:
		if !ro.finished {
			ro.finish(r.Reason)
		}
	}
	return nil
}

// promptOf is a recorded call's whole prompt.
func (ro *rollout) promptOf(c *CallRecord) ([]int32, error) {
	if c.Parent == "" {
		return c.PromptIDs, nil
	}
	p := ro.byID[c.Parent]
	if p == nil {
		return nil, fmt.Errorf("call %s continues %s, which is not recorded before it", c.ID, c.Parent)
	}
	prompt := make([]int32, 0, len(p.full)+len(c.DeltaIDs))
	return append(append(prompt, p.full...), c.DeltaIDs...), nil
}

// chainLink is what a new call continues: the parent call and where its
// answer sits in the new messages, or why there is none.
type chainLink struct {
	parent    *callState
	answerAt  int
	why       string
	ambiguous []string
}

// link finds the recorded call that msgs continue: a call whose messages
// are msgs' prefix, message by message up to canonical changes (see
// sameMessage), whose answer is the next message, and after which only
// non-assistant messages (tool results, user turns) were added. Of
// several, the one with the longest history wins, then one whose tool
// call ids the harness echoed, then the newest; the others with the same
// sampled tokens differ only in logprobs (a retry), and any with other
// tokens are reported as ambiguous. With none, why says what the closest
// call differs in.
func (ro *rollout) link(msgs []chat.Message, tools []chat.ToolSchema, kwargs map[string]any, eos []int32) chainLink {
	if len(ro.calls) == 0 {
		return chainLink{why: "first call of the rollout"}
	}
	var best *callState
	bestScore := -1
	var cands []*callState
	closest, closestWhy, closestAt := "", "", -1
	for i := len(ro.calls) - 1; i >= 0; i-- {
		cs := ro.calls[i]
		at, why := extends(cs, msgs, tools, kwargs, eos)
		if why != "" {
			if at > closestAt {
				closest, closestWhy, closestAt = cs.rec.ID, why, at
			}
			continue
		}
		cands = append(cands, cs)
		score := 2 * len(cs.rec.Messages)
		if echoedIDs(cs.rec.Answer, msgs[len(cs.rec.Messages)]) {
			score++
		}
		if score > bestScore {
			best, bestScore = cs, score
		}
	}
	if best == nil {
		return chainLink{why: fmt.Sprintf("history rewritten: %s (closest: %s)", closestWhy, closest)}
	}
	l := chainLink{parent: best, answerAt: len(best.rec.Messages)}
	for _, cs := range cands {
		if cs != best && len(cs.rec.Messages) == len(best.rec.Messages) && !equalIDs(cs.rec.SampledIDs, best.rec.SampledIDs) {
			l.ambiguous = append(l.ambiguous, cs.rec.ID)
		}
	}
	return l
}

// extends says whether msgs continue cs; if not, why, and how many
// messages matched.
func extends(cs *callState, msgs []chat.Message, tools []chat.ToolSchema, kwargs map[string]any, eos []int32) (int, string) {
	prev := cs.rec.Messages
	for i := range prev {
		if i >= len(msgs) {
			return i, fmt.Sprintf("the conversation is shorter than %s's (%d messages, it had %d)", cs.rec.ID, len(msgs), len(prev))
		}
		if d := sameMessage(prev[i], msgs[i]); d != "" {
			return i, fmt.Sprintf("messages[%d] (%s) differs from %s's: %s", i, msgs[i].Role, cs.rec.ID, d)
		}
	}
	k := len(prev)
	if k >= len(msgs) {
		return k, fmt.Sprintf("no answer of %s follows", cs.rec.ID)
	}
	if d := sameAnswer(cs.rec.Answer, msgs[k]); d != "" {
		return k, fmt.Sprintf("messages[%d] is not %s's answer: %s", k, cs.rec.ID, d)
	}
	if k+1 >= len(msgs) {
		return k + 1, fmt.Sprintf("nothing was added after %s's answer", cs.rec.ID)
	}
	for i := k + 1; i < len(msgs); i++ {
		if msgs[i].Role == chat.RoleAssistant {
			return i, fmt.Sprintf("messages[%d] is an assistant turn the model did not sample", i)
		}
	}
	if d := sameTools(cs.rec.Tools, tools); d != "" {
		return k + 1, d
	}
	if !jsonEqualValues(cs.rec.TemplateKwargs, kwargs) {
		return k + 1, "chat_template_kwargs changed"
	}
	if n := len(cs.rec.SampledIDs); n == 0 || !contains(eos, cs.rec.SampledIDs[n-1]) {
		return k + 1, fmt.Sprintf("%s did not end its turn (stop %q): its tokens cannot be continued", cs.rec.ID, cs.rec.StopReason)
	}
	return k + 1, ""
}

// echoedIDs says whether the harness sent back the tool call ids agentrl
// gave a's calls (dialects prefix them: "call_", "toolu_").
func echoedIDs(a, m chat.Message) bool {
	if len(a.ToolCalls) == 0 || len(a.ToolCalls) != len(m.ToolCalls) {
		return false
	}
	for i, c := range a.ToolCalls {
		if c.ID == "" || !strings.HasSuffix(m.ToolCalls[i].ID, c.ID) {
			return false
		}
	}
	return true
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
