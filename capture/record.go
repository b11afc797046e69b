package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
)

// Record kinds: a rollout's log is a sequence of these, in the order they
// happened.
const (
	KindRollout = "rollout" // created: id, key digest, group
	KindBegin   = "begin"   // a call was accepted and dispatched (an intent)
	KindCall    = "call"    // a call's answer, recorded before it was sent
	KindAbort   = "abort"   // a call ended without an answer
	KindReward  = "reward"  // the rollout's reward was set
	KindFinish  = "finish"  // the rollout was finished (or expired)
)

// Record is one line of a rollout's log.
type Record struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Rollout is set on KindRollout.
	Rollout *RolloutInfo `json:"rollout,omitempty"`
	// Call is set on KindCall.
	Call *CallRecord `json:"call,omitempty"`
	// CallID names the call of KindBegin and KindAbort.
	CallID string `json:"call_id,omitempty"`
	// Reason says why, on KindAbort and KindFinish ("expired").
	Reason string `json:"reason,omitempty"`
	// Reward is set on KindReward.
	Reward *float64 `json:"reward,omitempty"`
}

// RolloutInfo is what a rollout was created with. The key itself is never
// stored: KeySHA256 is its digest, which is all that checking a key needs.
type RolloutInfo struct {
	ID        string            `json:"id"`
	KeySHA256 string            `json:"key_sha256"`
	Group     string            `json:"group,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Created   time.Time         `json:"created"`
}

// CallRecord is one model call, token-exact.
type CallRecord struct {
	ID      string `json:"id"`
	Dialect string `json:"dialect"`
	// Request is the body as received; Header its headers, with the
	// rollout key (Authorization, x-api-key) removed.
	Request json.RawMessage     `json:"request"`
	Header  map[string][]string `json:"header,omitempty"`
	// Messages and Tools are the conversation as the template saw it:
	// what a later call must extend to continue this one.
	Messages []chat.Message    `json:"messages"`
	Tools    []chat.ToolSchema `json:"tools,omitempty"`
	// TemplateKwargs went to the chat template.
	TemplateKwargs map[string]any `json:"template_kwargs,omitempty"`
	// Parent is the call this one continues ("" for a new segment), and
	// Segment says why a new segment started.
	Parent  string `json:"parent,omitempty"`
	Segment string `json:"segment,omitempty"`
	// PromptIDs is the whole prompt of a new segment; DeltaIDs, with a
	// Parent, is what followed the parent's prompt and sampled ids (the
	// new messages as a tokenizer delta), so the prompt is
	// parent prompt ++ parent sampled ++ DeltaIDs.
	PromptIDs []int32 `json:"prompt_ids,omitempty"`
	DeltaIDs  []int32 `json:"delta_ids,omitempty"`
	// SampledIDs are the engine's tokens as answered, Logprobs theirs.
	SampledIDs    []int32   `json:"sampled_ids"`
	Logprobs      []float32 `json:"logprobs,omitempty"`
	StopReason    string    `json:"stop_reason"`
	WeightVersion int64     `json:"weight_version"`
	// Sampling is what the engine was given: the request's parameters,
	// or the server's defaults for those a harness omits (many send
	// none), so a trainer knows which distribution Logprobs are of.
	Sampling *Sampling `json:"sampling,omitempty"`
	// Answer is the assistant message the client was told of.
	Answer chat.Message `json:"answer"`
	// Received, Dispatched and Recorded time the call: the request read,
	// the engine called, the answer recorded.
	Received   time.Time `json:"received"`
	Dispatched time.Time `json:"dispatched"`
	Recorded   time.Time `json:"recorded"`
}

// Sampling is the sampling parameters a call's engine request carried
// (server.SamplingParams, with JSON names).
type Sampling struct {
	Temperature       float64 `json:"temperature"`
	TopP              float64 `json:"top_p"`
	TopK              int     `json:"top_k,omitempty"`
	MinP              float64 `json:"min_p,omitempty"`
	RepetitionPenalty float64 `json:"repetition_penalty,omitempty"`
	MaxNewTokens      int     `json:"max_new_tokens"`
	StopTokenIDs      []int32 `json:"stop_token_ids,omitempty"`
	Seed              *uint64 `json:"seed,omitempty"`
	Logprobs          bool    `json:"logprobs"`
}

func samplingOf(p server.SamplingParams) *Sampling {
	return &Sampling{Temperature: p.Temperature, TopP: p.TopP, TopK: p.TopK, MinP: p.MinP,
		RepetitionPenalty: p.RepetitionPenalty, MaxNewTokens: p.MaxNewTokens, StopTokenIDs: p.StopTokenIDs,
		Seed: p.Seed, Logprobs: p.Logprobs}
}

// maxRecordBytes bounds one log line (a call with a long prompt and its
// request body): a longer line is refused rather than buffered.
const maxRecordBytes = 256 << 20

// ErrRecord is wrapped by every error about a malformed record.
var ErrRecord = errors.New("capture: malformed record")

// DecodeRecord reads one log line. It checks what later code relies on:
// a known kind with the part that kind needs, and a call's token arrays
// consistent.
func DecodeRecord(line []byte) (Record, error) {
	var r Record
	if len(line) > maxRecordBytes {
		return r, fmt.Errorf("%w: %d bytes, over the %d limit", ErrRecord, len(line), maxRecordBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	if dec.More() {
		return Record{}, fmt.Errorf("%w: data after the record", ErrRecord)
	}
	if err := r.check(); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	return r, nil
}

func (r Record) check() error {
	switch r.Kind {
	case KindRollout:
		if r.Rollout == nil || !validID(r.Rollout.ID) || len(r.Rollout.KeySHA256) != 64 {
			return errors.New(`kind "rollout" needs "rollout" with a valid id and a 64-hex-digit key_sha256`)
		}
	case KindBegin, KindAbort:
		if r.CallID == "" {
			return fmt.Errorf("kind %q needs call_id", r.Kind)
		}
	case KindCall:
		c := r.Call
		if c == nil || c.ID == "" {
			return errors.New(`kind "call" needs "call" with an id`)
		}
		if c.Logprobs != nil && len(c.Logprobs) != len(c.SampledIDs) {
			return fmt.Errorf("call %s: %d logprobs for %d sampled ids", c.ID, len(c.Logprobs), len(c.SampledIDs))
		}
		if c.Parent == "" && (len(c.PromptIDs) == 0 || c.DeltaIDs != nil) || c.Parent != "" && c.PromptIDs != nil {
			return fmt.Errorf("call %s: a new segment has prompt_ids and no delta_ids; a continuation (parent) has delta_ids and no prompt_ids", c.ID)
		}
		for _, ids := range [][]int32{c.PromptIDs, c.DeltaIDs, c.SampledIDs} {
			for i, id := range ids {
				if id < 0 {
					return fmt.Errorf("call %s: negative token id %d at %d", c.ID, id, i)
				}
			}
		}
	case KindReward:
		if r.Reward == nil {
			return errors.New(`kind "reward" needs "reward"`)
		}
	case KindFinish:
	default:
		return fmt.Errorf("unknown kind %q", r.Kind)
	}
	return nil
}

// validID says whether s can name a rollout: it is also a file name and
// a URL path segment.
func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
