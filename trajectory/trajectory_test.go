package trajectory

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func f64(v float64) *float64 { return &v }

func TestBuilderMasksAndLogprobs(t *testing.T) {
	b := NewBuilder([]int32{1, 2, 3})
	require.NoError(t, b.AppendObservation([]int32{9})) // glue before the first model turn
	require.NoError(t, b.AppendModel([]int32{10, 11}, []float32{-0.5, -1}))
	require.NoError(t, b.AppendObservation([]int32{20, 21, 22}))
	require.NoError(t, b.AppendModel([]int32{12}, []float32{-2}))
	tr := b.Build()
	require.Equal(t, []int32{9, 10, 11, 20, 21, 22, 12}, tr.ResponseIDs)
	require.Equal(t, []int8{0, 1, 1, 0, 0, 0, 1}, tr.ResponseMask)
	require.Equal(t, []float32{0, -0.5, -1, 0, 0, 0, -2}, tr.Logprobs)
	require.Equal(t, []int32{1, 2, 3, 9, 10, 11, 20, 21, 22, 12}, b.Sequence())
	require.NoError(t, tr.Validate())
	require.Equal(t, 3, tr.MaskOnes())

	// Build copies: growing the builder does not change the built trajectory.
	require.NoError(t, b.AppendModel([]int32{13}, []float32{-3}))
	require.Len(t, tr.ResponseIDs, 7)
}

func TestBuilderRejectsInconsistentLogprobs(t *testing.T) {
	b := NewBuilder(nil)
	require.NoError(t, b.AppendModel([]int32{1}, []float32{-1}))
	err := b.AppendModel([]int32{2}, nil)
	require.ErrorIs(t, err, ErrLogprobs)
	require.Contains(t, err.Error(), "without logprobs after segments with")

	b = NewBuilder(nil)
	require.NoError(t, b.AppendModel([]int32{1}, nil))
	require.ErrorIs(t, b.AppendModel([]int32{2}, []float32{-1}), ErrLogprobs)

	require.ErrorIs(t, NewBuilder(nil).AppendModel([]int32{1, 2}, []float32{-1}), ErrLogprobs)
	require.ErrorIs(t, NewBuilder(nil).AppendModel([]int32{1}, []float32{float32(math.NaN())}), ErrLogprobs)
	require.ErrorIs(t, NewBuilder(nil).AppendModel([]int32{-1}, nil), ErrInvalid)
	require.ErrorIs(t, NewBuilder(nil).AppendObservation([]int32{-5}), ErrInvalid)

	// No logprobs anywhere is fine and yields nil Logprobs.
	b = NewBuilder(nil)
	require.NoError(t, b.AppendModel([]int32{1}, nil))
	require.NoError(t, b.AppendObservation([]int32{2}))
	require.Nil(t, b.Build().Logprobs)
}

func TestValidateErrorsNameFieldAndPosition(t *testing.T) {
	cases := []struct {
		name string
		tr   Trajectory
		want string
	}{
		{"mask length", Trajectory{ResponseIDs: []int32{1, 2}, ResponseMask: []int8{1}}, "response_mask: length 1, response_ids has 2"},
		{"logprob length", Trajectory{ResponseIDs: []int32{1}, ResponseMask: []int8{1}, Logprobs: []float32{-1, -2}}, "rollout_logprobs: length 2, response_ids has 1"},
		{"mask value", Trajectory{ResponseIDs: []int32{1, 2}, ResponseMask: []int8{1, 2}}, "response_mask[1]: mask must be 0 or 1, got 2"},
		{"logprob on mask 0", Trajectory{ResponseIDs: []int32{1, 2}, ResponseMask: []int8{1, 0}, Logprobs: []float32{-1, -0.25}}, "rollout_logprobs[1]: logprob -0.25 on a mask-0 token"},
		{"nan logprob", Trajectory{ResponseIDs: []int32{1}, ResponseMask: []int8{1}, Logprobs: []float32{float32(math.NaN())}}, "rollout_logprobs[0]: not finite"},
		{"negative prompt id", Trajectory{PromptIDs: []int32{4, -1}}, "prompt_ids[1]: negative token id -1"},
		{"negative response id", Trajectory{ResponseIDs: []int32{-3}, ResponseMask: []int8{0}}, "response_ids[0]: negative"},
		{"inf reward", Trajectory{Reward: f64(math.Inf(1))}, "reward: not finite"},
		{"versions", Trajectory{MinWeightVersion: 3, MaxWeightVersion: 2}, "min_weight_version: 3 > max_weight_version 2"},
		{"turns", Trajectory{NumTurns: -1}, "num_turns: negative"},
		{"tool_calls counter", Trajectory{ToolCalls: -1}, "tool_calls: negative counter: -1"},
		{"tool_errors counter", Trajectory{ToolCalls: 1, ToolErrors: -2}, "tool_errors: negative counter: -2"},
		{"num_preempted counter", Trajectory{NumPreempted: -1}, "num_preempted: negative counter: -1"},
		{"tool errors", Trajectory{ToolCalls: 1, ToolErrors: 2}, "tool_errors: 2 > tool_calls 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.tr.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			require.True(t, errors.Is(err, ErrInvalid))
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
		})
	}
}

// TestBuilderTokensIsAStableView: Tokens hands out the Builder's own
// buffer; earlier views keep their contents as the Builder grows (also
// across reallocations), and appending to a view never writes into the
// Builder.
func TestBuilderTokensIsAStableView(t *testing.T) {
	b := NewBuilder([]int32{1, 2})
	first := b.Tokens()
	require.Equal(t, []int32{1, 2}, first)
	require.Equal(t, len(first), cap(first), "capacity cut")
	mine := append(first, 99) // the caller's append must not land in b
	require.NoError(t, b.AppendModel([]int32{3}, nil))
	require.Equal(t, []int32{1, 2, 99}, mine)
	require.Equal(t, []int32{1, 2, 3}, b.Tokens())
	views := [][]int32{b.Tokens()}
	for i := int32(0); i < 2000; i++ { // past NewBuilder's headroom: reallocates
		require.NoError(t, b.AppendObservation([]int32{100 + i}))
		views = append(views, b.Tokens())
	}
	for k, v := range views {
		require.Len(t, v, 3+k)
		require.Equal(t, b.Sequence()[:len(v)], v, "view %d changed", k)
	}
	require.Equal(t, b.PromptLen()+b.Len(), len(b.Tokens()))
}
