package trajectory

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// multiRows are a group of two rollouts: rollout 0 of one loop returned two
// trajectories (verl's list[AgentLoopOutput]), rollout 1 one.
func multiRows() []*Trajectory {
	r := 1.0
	return []*Trajectory{
		{ID: "g/0/0", GroupID: "g", RolloutID: "g/0", Session: 0, Output: 0, PromptIDs: []int32{1}, ResponseIDs: []int32{2, 3}, ResponseMask: []int8{1, 0}, Reward: &r},
		{ID: "g/0/1", GroupID: "g", RolloutID: "g/0", Session: 0, Output: 1, PromptIDs: []int32{1, 2, 3}, ResponseIDs: []int32{4}, ResponseMask: []int8{1}, Reward: &r},
		{ID: "g/1", GroupID: "g", PromptIDs: []int32{1}, ResponseIDs: []int32{5}, ResponseMask: []int8{1}},
	}
}

func TestMultiOutputKeys(t *testing.T) {
	rows := multiRows()
	require.Equal(t, []string{"g_0_0", "g_0_1", "g/1"}, []string{rows[0].Key(), rows[1].Key(), rows[2].Key()})
	require.Equal(t, []string{"g/0", "g/0", "g/1"}, []string{rows[0].RolloutKey(), rows[1].RolloutKey(), rows[2].RolloutKey()})
	bad := *rows[2]
	bad.Output = 1
	require.ErrorContains(t, bad.Validate(), "rollout_id: empty, but session 0 and output 1 are set")
	bad = *rows[1]
	bad.Session = -1
	require.ErrorIs(t, bad.Validate(), ErrInvalid)
}

// A batch with a multi-output rollout carries verl V1's loss_mask and key
// per row, and the rollout of each row; through safetensors and JSONL they
// come back unchanged. A batch of single-output rows has none of them.
func TestMultiOutputBatch(t *testing.T) {
	b, err := Collate(multiRows(), CollateOptions{PromptLen: 3, ResponseLen: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"g/0", "g/0", "g/1"}, b.RolloutIDs)
	require.Equal(t, b.ResponseMask, b.LossMask)
	require.Equal(t, []int32{1, 0, 1, 0, 1, 0}, b.LossMask)
	require.Equal(t, []json.RawMessage{json.RawMessage(`"g_0_0"`), json.RawMessage(`"g_0_1"`), json.RawMessage(`"g/1"`)}, b.NonTensor[NonTensorKey])

	var buf bytes.Buffer
	require.NoError(t, b.WriteSafetensors(&buf))
	back, err := ReadSafetensorsBatch(&buf)
	require.NoError(t, err)
	require.Equal(t, b.RolloutIDs, back.RolloutIDs)
	require.Equal(t, b.LossMask, back.LossMask)
	require.Equal(t, b.NonTensor[NonTensorKey], back.NonTensor[NonTensorKey])

	single, err := Collate(multiRows()[2:], CollateOptions{PromptLen: 3, ResponseLen: 2})
	require.NoError(t, err)
	require.Nil(t, single.RolloutIDs)
	require.Nil(t, single.LossMask)
	require.NotContains(t, single.NonTensor, NonTensorKey)
	buf.Reset()
	require.NoError(t, single.WriteSafetensors(&buf))
	require.NotContains(t, buf.String(), "loss_mask")
	require.NotContains(t, buf.String(), "rollout_ids")

	buf.Reset()
	w := NewJSONLWriter(&buf)
	for _, r := range multiRows() {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Flush())
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Contains(t, string(lines[1]), `"rollout_id":"g/0","output":1`)
	require.NotContains(t, string(lines[2]), "rollout_id", "a single-output row's JSON is what it always was")
	got, err := ReadJSONL(&buf)
	require.NoError(t, err)
	require.Equal(t, multiRows(), got)
}
