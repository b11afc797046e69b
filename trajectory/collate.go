package trajectory

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
)

// ErrPromptTooLong is returned by Collate when a prompt exceeds PromptLen and
// TruncatePrompts is off.
var ErrPromptTooLong = errors.New("prompt longer than PromptLen")

// ErrMixedLogprobs is returned by Collate when some rows carry rollout
// logprobs and others do not: padding the missing ones with zeros would feed
// wrong numbers into importance-sampling corrections.
var ErrMixedLogprobs = errors.New("some rows have rollout logprobs and some do not")

// FitLongest as CollateOptions.PromptLen or ResponseLen pads to the
// longest prompt or response of the batch (at least 1) instead of a fixed
// width: no row is truncated, and no column is padding in every row.
const FitLongest = -1

// MaxCollateElements bounds a batch: rows × (PromptLen + ResponseLen) must
// not exceed it (2^30, a few GiB across the batch's tensors). Collate
// checks it before allocating anything, so a mistyped width is an error,
// not the process running out of memory.
const MaxCollateElements = 1 << 30

// ErrMixedRouting is returned by Collate when some rows carry MoE routing
// and others do not, or their layers and top-k differ: a row of zeros would
// replay expert 0 everywhere.
var ErrMixedRouting = errors.New("rows differ in routed experts")

// CollateOptions shape a Batch.
type CollateOptions struct {
	// PromptLen and ResponseLen are the padded widths: each > 0, or
	// FitLongest; rows × (PromptLen + ResponseLen) is at most
	// MaxCollateElements.
	PromptLen   int
	ResponseLen int
	// PadTokenID fills padded positions of prompts, responses and input_ids.
	PadTokenID int32
	// TruncatePrompts keeps the last PromptLen tokens of a longer prompt and
	// counts it in Batch.PromptsTruncated; when false such a prompt is an
	// error (ErrPromptTooLong).
	TruncatePrompts bool
}

// Batch is a padded, row-major batch in verl's layout. Every 2-D tensor is a
// flat slice of Size×width values; row i of Prompts is
// Prompts[i*PromptLen:(i+1)*PromptLen].
type Batch struct {
	Size        int
	PromptLen   int // P
	ResponseLen int // R

	Prompts   []int32 // [B,P] left-padded
	Responses []int32 // [B,R] right-padded
	InputIDs  []int32 // [B,P+R] prompts ++ responses
	// AttentionMask is 1 on real tokens, 0 on padding. [B,P+R]
	AttentionMask []int32
	// PositionIDs is verl's compute_position_id_with_mask:
	// clip(cumsum(AttentionMask)−1, min=0), so left padding is 0, real
	// tokens count from 0 and right padding repeats the last position.
	// [B,P+R]
	PositionIDs []int32
	// ResponseMask is the policy mask times the response attention. [B,R]
	ResponseMask []int32
	// RolloutLogprobs is 0 on padding and mask-0 tokens; nil when no row has
	// logprobs. [B,R]
	RolloutLogprobs []float32
	// TokenLevelScores holds each row's reward on its last valid response
	// token (verl's rm_scores). A row with an empty response has it on the
	// last column, where verl's index −1 puts it, so that sequence-level sums
	// (GRPO's group baseline) still see it. [B,R]
	TokenLevelScores []float32
	// Rewards is each row's sequence reward (0 when missing) and HasReward
	// says which rows were scored; kept so that a reward on a row with an
	// empty response is not lost. [B]
	Rewards   []float32
	HasReward []int32
	NumTurns  []int32 // [B]
	// ResponseLens is the number of valid response tokens per row after
	// cutting to ResponseLen. [B]
	ResponseLens []int32
	// RoutedExperts is verl's routed_experts (routing replay, R3) when the
	// rows carry routing: each row's Routing at the left-pad offset, so
	// that position j of input_ids has its experts at [i, j]; zeros on
	// padding and past the rows the engine reported. nil otherwise.
	// [B, P+R, RoutingLayers, RoutingTopK]
	RoutedExperts              []int16
	RoutingLayers, RoutingTopK int

	// MultiModal is set when some row has images (Trajectory.MultiModal):
	// verl's multi_modal_inputs and M-RoPE position ids; nil for text.
	MultiModal *BatchMultiModal

	IDs         []string
	Indices     []int32
	GroupIDs    []string
	StopReasons []string
	// RolloutIDs and LossMask are set only when some row comes from a
	// multi-output rollout (Trajectory.MultiOutput), so that a batch of
	// single-output rollouts is what it always was. RolloutIDs is each
	// row's Trajectory.RolloutKey (rows of one rollout share it: GRPO
	// counts them once); LossMask is verl V1's loss_mask, the response
	// mask. [B] and [B,R]. NonTensor then also has "key", each row's
	// Trajectory.Key ({uid}_{session}_{index}).
	RolloutIDs []string
	LossMask   []int32

	// NonTensor is verl's non_tensor_batch: per-row JSON values by key.
	// Collate fills "uid" (the group id), "index", "turn_scores",
	// "tool_rewards", "__num_turns__" and every key found in a row's
	// Trajectory.Extra (null in rows without it), e.g. "raw_prompt".
	NonTensor map[string][]json.RawMessage
	// Metrics is verl's meta_info["metrics"]: per row, the seconds spent
	// generating ("generate_sequences") and in tool calls ("tool_calls"),
	// and "num_preempted".
	Metrics []RowMetrics

	// PromptsTruncated counts rows whose prompt was left-truncated;
	// ResponsesTruncated counts rows whose response was cut to ResponseLen.
	PromptsTruncated   int
	ResponsesTruncated int
}

// RowError says which row of a batch was rejected.
type RowError struct {
	Row int
	Err error
}

func (e *RowError) Error() string { return fmt.Sprintf("row %d: %v", e.Row, e.Err) }
func (e *RowError) Unwrap() error { return e.Err }

// Collate validates every trajectory and pads them into a Batch. An invalid
// row is an error (*RowError wrapping the field error) naming the row and
// the field.
func Collate(trajs []*Trajectory, opts CollateOptions) (*Batch, error) {
	P, R := opts.PromptLen, opts.ResponseLen
	if (P <= 0 && P != FitLongest) || (R <= 0 && R != FitLongest) {
		return nil, fmt.Errorf("trajectory: Collate: PromptLen and ResponseLen must be > 0 or FitLongest, got %d and %d", P, R)
	}
	B := len(trajs)
	if P == FitLongest || R == FitLongest {
		longP, longR := 1, 1
		for _, t := range trajs {
			if t != nil { // a nil row is reported below
				longP, longR = max(longP, len(t.PromptIDs)), max(longR, len(t.ResponseIDs))
			}
		}
		if P == FitLongest {
			P = longP
		}
		if R == FitLongest {
			R = longR
		}
		opts.PromptLen, opts.ResponseLen = P, R
	}
	// Each width is checked alone first, so that P+R and B×(P+R) cannot
	// overflow.
	if P > MaxCollateElements || R > MaxCollateElements || P+R > MaxCollateElements/max(B, 1) {
		return nil, fmt.Errorf("trajectory: Collate: %d rows × (PromptLen %d + ResponseLen %d) is over MaxCollateElements (%d)", B, P, R, MaxCollateElements)
	}
	// Logprobs are present when any row carries them; a row with policy
	// tokens but no logprobs then cannot be padded honestly. Rows without
	// policy tokens need none (their logprobs are all 0 by the contract).
	hasLP, lpRow := false, 0
	for i, t := range trajs {
		if t == nil {
			return nil, &RowError{i, fmt.Errorf("%w: nil trajectory", ErrInvalid)}
		}
		if err := t.Validate(); err != nil {
			return nil, &RowError{i, err}
		}
		if !opts.TruncatePrompts && len(t.PromptIDs) > P {
			return nil, &RowError{i, fmt.Errorf("%w: prompt_ids has %d tokens, PromptLen is %d", ErrPromptTooLong, len(t.PromptIDs), P)}
		}
		if t.Logprobs != nil && !hasLP {
			hasLP, lpRow = true, i
		}
	}
	var routing *Routing
	for i, t := range trajs {
		r := t.RoutedExperts
		switch {
		case i == 0:
			routing = r
		case (r == nil) != (routing == nil):
			return nil, &RowError{i, fmt.Errorf("%w: row 0 has routing %v, this row %v", ErrMixedRouting, routing != nil, r != nil)}
		case r != nil && (r.Layers != routing.Layers || r.TopK != routing.TopK):
			return nil, &RowError{i, fmt.Errorf("%w: %d layers × top-%d, row 0 has %d × %d", ErrMixedRouting, r.Layers, r.TopK, routing.Layers, routing.TopK)}
		}
	}
	if routing != nil {
		// routed_experts holds layers × top-k values per position: the
		// same bound, counted in values, before it is allocated.
		if w := routing.Layers * routing.TopK; w > MaxCollateElements/(max(B, 1)*(P+R)) {
			return nil, fmt.Errorf("trajectory: Collate: routed_experts of %d rows × %d positions × %d values is over MaxCollateElements (%d)", B, P+R, w, MaxCollateElements)
		}
	}
	mm, err := collateMultiModal(trajs, P, R)
	if err != nil {
		return nil, err
	}
	if hasLP {
		for i, t := range trajs {
			if t.Logprobs == nil && t.MaskOnes() > 0 {
				return nil, &RowError{i, fmt.Errorf("%w: row %d has rollout_logprobs, this row has policy tokens without them", ErrMixedLogprobs, lpRow)}
			}
		}
	}
	L := P + R
	b := &Batch{
		Size: B, PromptLen: P, ResponseLen: R,
		Prompts:          make([]int32, B*P),
		Responses:        make([]int32, B*R),
		InputIDs:         make([]int32, B*L),
		AttentionMask:    make([]int32, B*L),
		PositionIDs:      make([]int32, B*L),
		ResponseMask:     make([]int32, B*R),
		TokenLevelScores: make([]float32, B*R),
		Rewards:          make([]float32, B),
		HasReward:        make([]int32, B),
		NumTurns:         make([]int32, B),
		ResponseLens:     make([]int32, B),
		IDs:              make([]string, B),
		Indices:          make([]int32, B),
		GroupIDs:         make([]string, B),
		StopReasons:      make([]string, B),
		Metrics:          make([]RowMetrics, B),
	}
	if hasLP {
		b.RolloutLogprobs = make([]float32, B*R)
	}
	if routing != nil {
		b.RoutingLayers, b.RoutingTopK = routing.Layers, routing.TopK
		b.RoutedExperts = make([]int16, B*L*routing.Layers*routing.TopK)
	}
	// Rows are independent: large batches are filled by one goroutine per
	// core (each owns a contiguous range of rows and is joined here).
	workers := 1
	if B*L >= 1<<20 {
		workers = min(runtime.GOMAXPROCS(0), B)
	}
	pTrunc := make([]int, workers)
	rTrunc := make([]int, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := B*w/workers, B*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			pTrunc[w], rTrunc[w] = b.fillRows(trajs[lo:hi], lo, opts)
		}()
	}
	wg.Wait()
	for w := range pTrunc {
		b.PromptsTruncated += pTrunc[w]
		b.ResponsesTruncated += rTrunc[w]
	}
	b.NonTensor = nonTensor(trajs)
	if mm != nil {
		b.MultiModal = mm
		mm.fill(b, trajs)
	}
	if slices.ContainsFunc(trajs, (*Trajectory).MultiOutput) {
		b.RolloutIDs = make([]string, B)
		keys := make([]json.RawMessage, B)
		for i, t := range trajs {
			b.RolloutIDs[i] = t.RolloutKey()
			keys[i] = jsonString(t.Key())
		}
		b.NonTensor[NonTensorKey] = keys
		b.LossMask = slices.Clone(b.ResponseMask) // verl V1: loss_mask = response_mask
	}
	return b, nil
}

func jsonString(s string) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		return json.RawMessage(`""`)
	}
	return b
}

// RowMetrics are one row's entries of verl's meta_info["metrics"]
// (AgentLoopMetrics): times in seconds.
type RowMetrics struct {
	GenerateSequences float64 `json:"generate_sequences"`
	ToolCalls         float64 `json:"tool_calls"`
	NumPreempted      int     `json:"num_preempted"`
}

// Keys of Batch.NonTensor that Collate always fills.
const (
	NonTensorUID         = "uid"
	NonTensorIndex       = "index"
	NonTensorTurnScores  = "turn_scores"
	NonTensorToolRewards = "tool_rewards"
	NonTensorNumTurns    = "__num_turns__"
	// NonTensorKey is filled only in batches with multi-output rows
	// (see Batch.RolloutIDs).
	NonTensorKey = "key"
)

// nonTensor builds verl's non_tensor_batch for the rows.
func nonTensor(trajs []*Trajectory) map[string][]json.RawMessage {
	B := len(trajs)
	nt := map[string][]json.RawMessage{}
	col := func(k string) []json.RawMessage {
		c, ok := nt[k]
		if !ok {
			c = make([]json.RawMessage, B)
			for i := range c {
				c[i] = json.RawMessage("null")
			}
			nt[k] = c
		}
		return c
	}
	floats := func(v []float64) json.RawMessage {
		if v == nil {
			return json.RawMessage("[]") // verl's lists start empty
		}
		b, err := json.Marshal(v)
		if err != nil { // Validate rejects non-finite rewards, not turn scores
			return json.RawMessage("null")
		}
		return b
	}
	for i, t := range trajs {
		uid, err := json.Marshal(t.GroupID)
		if err != nil {
			uid = json.RawMessage(`""`)
		}
		col(NonTensorUID)[i] = uid
		col(NonTensorIndex)[i] = json.RawMessage(strconv.Itoa(t.Index))
		col(NonTensorTurnScores)[i] = floats(t.TurnRewards)
		col(NonTensorToolRewards)[i] = floats(t.ToolRewards)
		col(NonTensorNumTurns)[i] = json.RawMessage(strconv.Itoa(t.NumTurns))
		for k, v := range t.Extra {
			switch k {
			case NonTensorUID, NonTensorIndex, NonTensorTurnScores, NonTensorToolRewards, NonTensorNumTurns, NonTensorKey:
				continue // the trajectory's own fields win
			}
			if len(v) > 0 {
				col(k)[i] = v
			}
		}
	}
	return nt
}

// fillRows writes rows first..first+len(trajs) of b and returns how many
// prompts and responses it truncated.
func (b *Batch) fillRows(trajs []*Trajectory, first int, opts CollateOptions) (pTrunc, rTrunc int) {
	P, R := b.PromptLen, b.ResponseLen
	L := P + R
	for k, t := range trajs {
		i := first + k
		prompt := t.PromptIDs
		if len(prompt) > P {
			prompt = prompt[len(prompt)-P:]
			pTrunc++
		}
		n := len(t.ResponseIDs)
		if n > R {
			n = R
			rTrunc++
		}
		np := len(prompt)
		pad := P - np

		// Prompt row: left padding, then tokens.
		prow := b.Prompts[i*P : (i+1)*P]
		fill(prow[:pad], opts.PadTokenID)
		copy(prow[pad:], prompt)
		// Response row: tokens, then right padding.
		rrow := b.Responses[i*R : (i+1)*R]
		copy(rrow, t.ResponseIDs[:n])
		fill(rrow[n:], opts.PadTokenID)

		in := b.InputIDs[i*L : (i+1)*L]
		copy(in[:P], prow)
		copy(in[P:], rrow)

		att := b.AttentionMask[i*L : (i+1)*L]
		fill(att[pad:P+n], 1) // make() already zeroed the padding
		pos := b.PositionIDs[i*L : (i+1)*L]
		seq := pos[pad : P+n]
		for k := range seq {
			seq[k] = int32(k)
		}
		if last := len(seq) - 1; last > 0 {
			fill(pos[P+n:], int32(last)) // verl repeats the last position
		}

		rm := b.ResponseMask[i*R : i*R+n]
		for k, m := range t.ResponseMask[:n] {
			rm[k] = int32(m)
		}
		if t.Logprobs != nil {
			copy(b.RolloutLogprobs[i*R:i*R+n], t.Logprobs[:n])
		}
		if r := t.RoutedExperts; r != nil && b.RoutedExperts != nil {
			b.fillRouting(i, r, len(t.PromptIDs)-np, pad, np+n)
		}
		if t.Reward != nil {
			b.Rewards[i] = float32(*t.Reward)
			b.HasReward[i] = 1
			// verl indexes attention_mask[:, P:].sum()-1, which is −1,
			// the last column, for an empty response.
			at := n - 1
			if n == 0 {
				at = R - 1
			}
			b.TokenLevelScores[i*R+at] = float32(*t.Reward)
		}
		b.NumTurns[i] = int32(t.NumTurns)
		b.ResponseLens[i] = int32(n)
		b.IDs[i] = t.ID
		b.Indices[i] = int32(t.Index)
		b.GroupIDs[i] = t.GroupID
		b.StopReasons[i] = string(t.StopReason)
		b.Metrics[i] = RowMetrics{
			GenerateSequences: t.Timing.Generate.Seconds(),
			ToolCalls:         t.Timing.Tool.Seconds(),
			NumPreempted:      t.NumPreempted,
		}
	}
	return pTrunc, rTrunc
}

// fillRouting places row i's routing as verl's _postprocess does: position
// k of the kept sequence (the prompt without its cut tokens, then the
// response cut to R) at column pad+k, where pad is the prompt's left
// padding; cut is the number of prompt tokens truncated away and kept the
// length of the kept sequence.
func (b *Batch) fillRouting(i int, r *Routing, cut, pad, kept int) {
	w := r.Layers * r.TopK
	L := b.PromptLen + b.ResponseLen
	row := b.RoutedExperts[i*L*w : (i+1)*L*w]
	rows := min(r.Rows()-cut, kept)
	if rows <= 0 {
		return
	}
	copy(row[pad*w:(pad+rows)*w], r.Experts[cut*w:(cut+rows)*w])
}

func fill(s []int32, v int32) {
	if v == 0 {
		clear(s)
		return
	}
	for i := range s {
		s[i] = v
	}
}
