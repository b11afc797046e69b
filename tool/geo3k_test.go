package tool

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// TestGeo3KTool follows verl's Geo3kTool.execute call by call: the score
// is grade_answer's, the step reward 0 only when the score rose above the
// previous call's, and the text is Python's f"Current parsed {answer=}
// {reward=}".
func TestGeo3KTool(t *testing.T) {
	ctx := context.Background()
	s, err := NewSet(NewGeo3K(chat.ToolSchema{}))
	require.NoError(t, err)
	ss := s.Session(map[string]map[string]any{"calc_geo3k_reward": {"ground_truth": "52.3"}})
	defer func() { require.NoError(t, ss.Close(ctx)) }()

	steps := []struct {
		args, text string
		reward     float64
		score      float64
	}{
		{`{"answer": "52"}`, "Current parsed answer='52' reward=0.0", GSM8KPenalty, 0},
		{`{"answer": "52.30"}`, "Current parsed answer='52.30' reward=1.0", 0, 1},
		{`{"answer": "52.3 cm"}`, "Current parsed answer='52.3 cm' reward=1.0", GSM8KPenalty, 1},
		{`{"answer": "\\boxed{52.3}"}`, `Current parsed answer='\\boxed{52.3}' reward=1.0`, GSM8KPenalty, 1},
		{`{"answer": "it's 52.3"}`, `Current parsed answer="it's 52.3" reward=0.0`, GSM8KPenalty, 0},
		{`{"answer": "$52.3$"}`, "Current parsed answer='$52.3$' reward=1.0", 0, 1},
	}
	for _, st := range steps {
		r := ss.Call(ctx, call("calc_geo3k_reward", st.args))
		require.NoError(t, r.Err)
		require.Equal(t, st.text, r.Text)
		require.Equal(t, st.reward, r.Reward)
		require.Equal(t, map[string]float64{"score": st.score}, r.Metrics)
	}

	// A number as ground truth (parquet rows may carry one) is its decimal
	// spelling; a missing one is an error the agent loop sees.
	ss2 := s.Session(map[string]map[string]any{"calc_geo3k_reward": {"ground_truth": float64(3)}})
	r := ss2.Call(ctx, call("calc_geo3k_reward", `{"answer": "3.0"}`))
	require.NoError(t, r.Err)
	require.Equal(t, 1.0, r.Metrics["score"])
	require.NoError(t, ss2.Close(ctx))
	ss3 := s.Session(nil)
	r = ss3.Call(ctx, call("calc_geo3k_reward", `{"answer": "1"}`))
	require.ErrorIs(t, r.Err, ErrExecution)
	require.Contains(t, r.Text, `geo3k: create kwargs have no "ground_truth"`)
	require.NoError(t, ss3.Close(ctx))
}
