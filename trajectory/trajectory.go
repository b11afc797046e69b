package trajectory

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// StopReason names why a trajectory ended.
type StopReason string

// Stop reasons every agent loop uses. Loops may add their own.
const (
	StopCompleted       StopReason = "completed"        // the model ended its turn without calling tools
	StopResponseLength  StopReason = "response_length"  // the response budget is used up
	StopPromptLength    StopReason = "prompt_length"    // the prompt alone exceeds its budget
	StopMaxTurns        StopReason = "max_turns"        // max assistant or user turns reached
	StopInvalidCalls    StopReason = "invalid_calls"    // too many consecutive invalid tool calls
	StopInteractionDone StopReason = "interaction_done" // the interaction (user simulator) ended the episode
	StopAborted         StopReason = "aborted"          // cancelled or aborted; the trajectory is partial
	StopError           StopReason = "error"            // an engine or internal error ended the loop
)

// Timing records where a trajectory's wall time went.
type Timing struct {
	Generate time.Duration `json:"generate_ns"`
	Tool     time.Duration `json:"tool_ns"`
	Reward   time.Duration `json:"reward_ns"`
	Total    time.Duration `json:"total_ns"`
}

// Trajectory is one rollout in token space, the unit the trainer consumes.
//
// The contract (README.md, "The trajectory contract"): ResponseMask[i] is 1
// exactly where ResponseIDs[i]
// was sampled by the policy; Logprobs, when present, is aligned with
// ResponseIDs and 0 wherever the mask is 0; PromptIDs ++ ResponseIDs is the
// sequence the engine saw last. Build trajectories with a Builder so the mask
// cannot be written by hand.
type Trajectory struct {
	// ID and Index identify the sample; GroupID ties the n rollouts of one
	// prompt together (GRPO groups).
	ID      string `json:"id,omitempty"`
	Index   int    `json:"index"`
	GroupID string `json:"group_id,omitempty"`

	PromptIDs    []int32 `json:"prompt_ids"`
	ResponseIDs  []int32 `json:"response_ids"`
	ResponseMask []int8  `json:"response_mask"`
	// Logprobs are the rollout logprobs; nil when the engine returned none.
	Logprobs []float32 `json:"rollout_logprobs,omitempty"`

	// Reward is the trajectory reward; nil when it has not been scored.
	Reward      *float64  `json:"reward,omitempty"`
	TurnRewards []float64 `json:"turn_rewards,omitempty"`
	ToolRewards []float64 `json:"tool_rewards,omitempty"`

	NumTurns   int        `json:"num_turns"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	// ToolCalls counts the tool calls the agent loop attempted (run, not
	// run over its per-turn limit, unparsable) and ToolErrors the failed
	// ones among them; NumPreempted counts generations resumed after an
	// engine abort (partial rollout). Typed here, not in Extra, so that
	// metrics and collation read them without decoding JSON.
	ToolCalls    int `json:"tool_calls,omitempty"`
	ToolErrors   int `json:"tool_errors,omitempty"`
	NumPreempted int `json:"num_preempted,omitempty"`
	// MinWeightVersion and MaxWeightVersion bound the weight versions that
	// produced the response tokens (they differ after a partial rollout
	// resumed across a weight update).
	MinWeightVersion int64  `json:"min_weight_version"`
	MaxWeightVersion int64  `json:"max_weight_version"`
	Timing           Timing `json:"timing"`

	// RoutedExperts is the MoE routing the rollout engine reported for
	// the sequence (routing replay, R3); nil for dense models or when not
	// requested.
	RoutedExperts *Routing `json:"routed_experts,omitempty"`

	// MultiModal is the trajectory's images (prompt and tool results) for
	// a vision-language model; nil for text.
	MultiModal *MultiModal `json:"multi_modal,omitempty"`

	// RolloutID, Session and Output are set on the trajectories of a
	// multi-output rollout (verl's list[AgentLoopOutput]; agentloop's
	// MultiAgentLoop): RolloutID is the rollout's id, shared by all its
	// trajectories, Session the rollout's place in its group (verl's
	// session_id) and Output this trajectory's place among the rollout's
	// (verl's index). They are empty for a single-output rollout, whose ID
	// is the rollout's. See Key and RolloutKey.
	RolloutID string `json:"rollout_id,omitempty"`
	Session   int    `json:"session,omitempty"`
	Output    int    `json:"output,omitempty"`

	// Extra carries caller-defined fields through JSONL unchanged.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// MultiOutput reports whether t is one of several trajectories of one
// rollout.
func (t *Trajectory) MultiOutput() bool { return t.RolloutID != "" }

// Key is verl's key for the trajectory, {uid}_{session}_{index}
// (verl/trainer/ppo/v1/agent_loop_tq.py), for the trajectory of a
// multi-output rollout; a single-output trajectory's key is its ID.
func (t *Trajectory) Key() string {
	if !t.MultiOutput() {
		return t.ID
	}
	return t.GroupID + "_" + strconv.Itoa(t.Session) + "_" + strconv.Itoa(t.Output)
}

// RolloutKey names the rollout t came from: RolloutID for the trajectories
// of a multi-output rollout, ID otherwise. GRPO counts a group's rollouts,
// not its trajectories, by it.
func (t *Trajectory) RolloutKey() string {
	if t.MultiOutput() {
		return t.RolloutID
	}
	return t.ID
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid trajectory")

// FieldError says which field of a trajectory is wrong and where.
type FieldError struct {
	Field string // "response_mask", "rollout_logprobs", ...
	Pos   int    // token position, -1 when the error is not about one token
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("%s[%d]: %s", e.Field, e.Pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

func (e *FieldError) Unwrap() error { return ErrInvalid }

// Validate checks the contract. The error is a *FieldError naming the field
// and position; errors.Is(err, ErrInvalid) holds. A nil trajectory is
// invalid too.
func (t *Trajectory) Validate() error {
	if t == nil {
		return &FieldError{"trajectory", -1, "nil"}
	}
	n := len(t.ResponseIDs)
	if len(t.ResponseMask) != n {
		return &FieldError{"response_mask", -1, fmt.Sprintf("length %d, response_ids has %d", len(t.ResponseMask), n)}
	}
	if t.Logprobs != nil && len(t.Logprobs) != n {
		return &FieldError{"rollout_logprobs", -1, fmt.Sprintf("length %d, response_ids has %d", len(t.Logprobs), n)}
	}
	for i, id := range t.PromptIDs {
		if id < 0 {
			return &FieldError{"prompt_ids", i, fmt.Sprintf("negative token id %d", id)}
		}
	}
	for i, id := range t.ResponseIDs {
		if id < 0 {
			return &FieldError{"response_ids", i, fmt.Sprintf("negative token id %d", id)}
		}
	}
	for i, m := range t.ResponseMask {
		if m != 0 && m != 1 {
			return &FieldError{"response_mask", i, fmt.Sprintf("mask must be 0 or 1, got %d", m)}
		}
	}
	for i, lp := range t.Logprobs {
		if math.IsNaN(float64(lp)) || math.IsInf(float64(lp), 0) {
			return &FieldError{"rollout_logprobs", i, fmt.Sprintf("not finite: %v", lp)}
		}
		if t.ResponseMask[i] == 0 && lp != 0 {
			return &FieldError{"rollout_logprobs", i, fmt.Sprintf("logprob %v on a mask-0 token (must be 0)", lp)}
		}
	}
	if t.Reward != nil && (math.IsNaN(*t.Reward) || math.IsInf(*t.Reward, 0)) {
		return &FieldError{"reward", -1, fmt.Sprintf("not finite: %v", *t.Reward)}
	}
	if t.RoutedExperts != nil {
		if err := t.RoutedExperts.validate(len(t.PromptIDs) + n); err != nil {
			return err
		}
	}
	if t.MinWeightVersion > t.MaxWeightVersion {
		return &FieldError{"min_weight_version", -1, fmt.Sprintf("%d > max_weight_version %d", t.MinWeightVersion, t.MaxWeightVersion)}
	}
	if t.NumTurns < 0 {
		return &FieldError{"num_turns", -1, fmt.Sprintf("negative: %d", t.NumTurns)}
	}
	if t.Session < 0 || t.Output < 0 {
		return &FieldError{"session", -1, fmt.Sprintf("session %d and output %d must not be negative", t.Session, t.Output)}
	}
	if !t.MultiOutput() && (t.Session != 0 || t.Output != 0) {
		return &FieldError{"rollout_id", -1, fmt.Sprintf("empty, but session %d and output %d are set (only a multi-output rollout's trajectories have them)", t.Session, t.Output)}
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"tool_calls", t.ToolCalls}, {"tool_errors", t.ToolErrors}, {"num_preempted", t.NumPreempted}} {
		if c.n < 0 {
			return &FieldError{c.field, -1, fmt.Sprintf("negative counter: %d", c.n)}
		}
	}
	if t.ToolErrors > t.ToolCalls {
		return &FieldError{"tool_errors", -1, fmt.Sprintf("%d > tool_calls %d", t.ToolErrors, t.ToolCalls)}
	}
	return nil
}

// MaskOnes counts the policy tokens of the response.
func (t *Trajectory) MaskOnes() int {
	n := 0
	for _, m := range t.ResponseMask {
		n += int(m)
	}
	return n
}
