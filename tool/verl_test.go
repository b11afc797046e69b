package tool

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// verl's example configs for its answer-checking tools load unchanged:
// geo3k's (Geo3kTool, graded with mathruler's grade_answer) and gsm8k's.
func TestVerlAnswerToolConfigs(t *testing.T) {
	ctx := context.Background()
	s, err := LoadConfig(ctx, "testdata/geo3k_tool_config.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"calc_geo3k_reward"}, s.Names())
	ss := s.Session(map[string]map[string]any{"calc_geo3k_reward": {"ground_truth": `2\sqrt{3}`}})
	r := ss.Call(ctx, call("calc_geo3k_reward", `{"answer": "\\sqrt{12}"}`))
	require.NoError(t, r.Err)
	require.Equal(t, `Current parsed answer='\\sqrt{12}' reward=1.0`, r.Text)
	require.NoError(t, ss.Close(ctx))
	require.NoError(t, s.Close(ctx))

	s, err = LoadConfig(ctx, "testdata/gsm8k_tool_config.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"calc_gsm8k_reward"}, s.Names())
}
