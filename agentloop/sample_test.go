package agentloop

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

func TestRegistryAndAgentConfigs(t *testing.T) {
	reg := NewRegistry()
	// TestGlobalRegister adds a loop to the process-wide set, which a new
	// registry starts from; with -count > 1 it is there before this test.
	names := func() []string {
		return slices.DeleteFunc(reg.Names(), func(n string) bool { return n == "test_custom_agent" })
	}
	require.Equal(t, []string{SingleTurnAgent, ToolAgentName}, names())
	_, err := reg.LoadConfigs(strings.NewReader(`
- name: math_agent
  agent: tool_agent
  config:
    max_assistant_turns: 3
    max_parallel_calls: 2
    format: hermes
    tool_response_truncate_side: left
- name: math_agent_short
  agent: math_agent
  config: {max_assistant_turns: 1}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"math_agent", "math_agent_short", SingleTurnAgent, ToolAgentName}, names())
	cfg, err := reg.Config("math_agent")
	require.NoError(t, err)
	require.Equal(t, Config{MaxAssistantTurns: 3, MaxParallelCalls: 2, Format: "hermes", ToolResponseTruncateSide: "left"}, cfg)

	env := &Env{Server: servertest.New(servertest.Config{}), Tokenizer: qwen3(t)}
	l, err := reg.New("math_agent", env)
	require.NoError(t, err)
	require.IsType(t, &ToolAgent{}, l)
	_, err = reg.New("nope", env)
	require.ErrorIs(t, err, ErrUnknownAgent)
	require.ErrorContains(t, err, "registered: "+strings.Join(reg.Names(), ", "))

	for _, c := range []struct{ yaml, want string }{
		{"- name: a\n  agent: tool_agent\n  config: {max_turns: 3}", `unknown field "max_turns"`},
		{"- name: a\n  agent: ghost", `unknown agent "ghost"`},
		{"- name: tool_agent\n  agent: tool_agent", "already registered"},
		{"- name: a\n  agent: tool_agent\n  config: {tool_response_truncate_side: up}", "tool_response_truncate_side"},
		{"- name: a\n  agent: tool_agent\n  config: {max_parallel_calls: -1}", "max_parallel_calls -1 < 0"},
		{"- agent: tool_agent", "name is required"},
	} {
		_, err := NewRegistry().LoadConfigs(strings.NewReader(c.yaml))
		require.ErrorContains(t, err, c.want, c.yaml)
	}
	// A bad parser format fails when it is registered, naming the formats.
	reg2 := NewRegistry()
	require.ErrorContains(t, reg2.Register("bad", NewToolAgent, Config{Format: "nope"}), "hermes")
}

var registerOnce sync.Once

type customLoop struct{ env *Env }

func (c customLoop) Run(ctx context.Context, s Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	return nil, nil
}

func TestGlobalRegister(t *testing.T) {
	registerOnce.Do(func() {
		Register("test_custom_agent", func(env *Env, _ Config) (AgentLoop, error) { return customLoop{env}, nil })
	})
	require.Contains(t, NewRegistry().Names(), "test_custom_agent")
	require.Panics(t, func() { Register("test_custom_agent", func(*Env, Config) (AgentLoop, error) { return nil, nil }) })
	require.Panics(t, func() { Register(ToolAgentName, func(*Env, Config) (AgentLoop, error) { return nil, nil }) })
}
