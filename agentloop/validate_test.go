package agentloop

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestNewManagerChecksUpFront is issue 35's "checked up front": settings
// that would fail every sample of a batch are NewManager's (or the
// registry's) error, naming the setting, before anything runs.
func TestNewManagerChecksUpFront(t *testing.T) {
	tok := qwen3(t)
	env := &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(1)}), Tokenizer: tok}

	t.Run("nil env", func(t *testing.T) {
		_, err := NewManager(nil, nil, Options{})
		require.ErrorContains(t, err, "Env is nil")
		_, err = NewManager(nil, &Env{Tokenizer: tok}, Options{})
		require.ErrorContains(t, err, "Env.Server")
	})
	t.Run("unknown format", func(t *testing.T) {
		reg := NewRegistry()
		err := reg.SetConfig(ToolAgentName, Config{Format: "nope"})
		require.ErrorIs(t, err, ErrConfig)
		require.ErrorIs(t, err, parser.ErrUnknownFormat)
		require.ErrorContains(t, err, `"nope"`)
		require.ErrorIs(t, reg.Register("mine", NewToolAgent, Config{Format: "nope"}), parser.ErrUnknownFormat)
		// An alias is a known format.
		require.NoError(t, reg.Register("qwen_agent", NewToolAgent, Config{Format: "qwen25"}))
	})
	t.Run("default loop built", func(t *testing.T) {
		reg := NewRegistry()
		boom := errors.New("the factory failed")
		require.NoError(t, reg.Register("broken", func(*Env, Config) (AgentLoop, error) { return nil, boom }, Config{}))
		_, err := NewManager(reg, env, Options{DefaultAgent: "broken"})
		require.ErrorIs(t, err, boom)
		require.ErrorContains(t, err, "default agent")
		_, err = NewManager(reg, env, Options{DefaultAgent: "absent"})
		require.ErrorIs(t, err, ErrUnknownAgent)
	})
	t.Run("sampling", func(t *testing.T) {
		for _, c := range []struct {
			opts Options
			want string
		}{
			{Options{Sampling: server.SamplingParams{TopP: 2}}, "Options.Sampling: bad request: top_p 2"},
			{Options{Sampling: server.SamplingParams{Temperature: -1}}, "Options.Sampling: bad request: temperature -1"},
			{Options{Sampling: server.SamplingParams{MaxNewTokens: -5}}, "Options.Sampling: bad request: max_new_tokens -5"},
			{Options{Validation: ValidationOptions{Sampling: server.SamplingParams{MinP: 3}}}, "Options.Validation.Sampling: bad request: min_p 3"},
		} {
			_, err := NewManager(nil, env, c.opts)
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorIs(t, err, server.ErrBadRequest)
			require.True(t, strings.Contains(err.Error(), c.want), "%v: want %q", err, c.want)
		}
	})
}
