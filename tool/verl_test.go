package tool

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// verl's Geo3kTool scores geometry answers for image prompts: its example
// config fails with the reason, not as an unknown class.
func TestVerlImageToolsExplainWhy(t *testing.T) {
	_, err := LoadConfig(context.Background(), "testdata/geo3k_tool_config.yaml")
	require.ErrorIs(t, err, ErrNeedsImages)
	require.ErrorContains(t, err, `class_name "verl.tools.geo3k_tool.Geo3kTool"`)
	require.ErrorContains(t, err, "mathruler")
	s, err := LoadConfig(context.Background(), "testdata/gsm8k_tool_config.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"calc_gsm8k_reward"}, s.Names())
}
