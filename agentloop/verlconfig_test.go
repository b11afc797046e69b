package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// verl's agent-loop config format, as documented in
// verl/trainer/config/rollout/rollout.yaml (agent.agent_loop_config_path,
// volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7): a list of
// {name, _target_, **kwargs} entries instantiated by hydra.
func TestRegistryLoadsVerlAgentLoopConfig(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.SetConfig(ToolAgentName, Config{MaxAssistantTurns: 5, Format: "hermes"}))
	require.NoError(t, Register2(reg, "react_agent"))
	_, err := reg.LoadConfigs(strings.NewReader(`
- name: math_tool_agent
  _target_: verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop
  max_parallel_calls: 2
- name: plain
  _target_: verl.experimental.agent_loop.single_turn_agent_loop.SingleTurnAgentLoop
- name: react
  _target_: recipe.langgraph_agent.react_agent_loop.ReactAgentLoop
  tools: ["get_current_temperature"]
- name: agentrl_style
  agent: math_tool_agent
  config: {max_assistant_turns: 1}
`))
	require.NoError(t, err)
	cfg, err := reg.Config("math_tool_agent")
	require.NoError(t, err)
	// The multi_turn settings of tool_agent are the base; kwargs override.
	require.Equal(t, Config{MaxAssistantTurns: 5, Format: "hermes", MaxParallelCalls: 2}, cfg)
	cfg, err = reg.Config("react")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"tools": []any{"get_current_temperature"}}, cfg.Extra)
	env := &Env{Server: servertest.New(servertest.Config{}), Tokenizer: qwen3(t)}
	l, err := reg.New("math_tool_agent", env)
	require.NoError(t, err)
	require.IsType(t, &ToolAgent{}, l)
	l, err = reg.New("plain", env)
	require.NoError(t, err)
	require.IsType(t, &SingleTurn{}, l)

	for _, c := range []struct{ yaml, want string }{
		{"- name: a\n  _target_: verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop\n  tools: [x]", `takes no keyword argument "tools"`},
		{"- name: a\n  _target_: my.pkg.GhostLoop", `_target_ "my.pkg.GhostLoop"`},
		{"- name: a\n  _target_: 3", "_target_ must be a class path"},
		{"- name: a\n  _target_: x.ToolAgentLoop\n  max_parallel_calls: -1", "max_parallel_calls -1 < 0"},
		{"name: a", "want a list of entries"},
	} {
		_, err := NewRegistry().LoadConfigs(strings.NewReader(c.yaml))
		require.ErrorContains(t, err, c.want, c.yaml)
	}
}

// Register2 registers a custom loop in one registry under name (the test
// stand-in for a recipe's @register).
func Register2(reg *Registry, name string) error {
	return reg.Register(name, func(env *Env, _ Config) (AgentLoop, error) { return customLoop{env}, nil }, Config{})
}

func TestCamelToSnake(t *testing.T) {
	for in, want := range map[string]string{
		"ToolAgentLoop": "tool_agent_loop", "ReactAgentLoop": "react_agent_loop",
		"MCPAgentLoop": "mcp_agent_loop", "SingleTurnAgentLoop": "single_turn_agent_loop", "Agent2Loop": "agent2_loop",
	} {
		require.Equal(t, want, camelToSnake(in), in)
	}
}

// verl's examples/sglang_multiturn/config/interaction_config/
// gsm8k_interaction_config.yaml (volcengine/verl@b178a3cd), unchanged.
const verlGSM8KInteractionConfig = `interaction:
  - name: "gsm8k"
    class_name: "verl.interactions.gsm8k_interaction.Gsm8kInteraction"
    config: {}`

func TestLoadInteractions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "interaction.yaml")
	require.NoError(t, os.WriteFile(path, []byte(verlGSM8KInteractionConfig), 0o644))
	m, err := LoadInteractionsFile(path)
	require.NoError(t, err)
	require.Len(t, m, 1)
	in := m["gsm8k"]
	require.NotNil(t, in)

	// verl/interactions/gsm8k_interaction.py: a wrong answer asks to try
	// again with reward 0; the right one (strict "#### N") ends the episode.
	ctx := context.Background()
	id, err := in.Start(ctx, map[string]any{"name": "gsm8k", "query": "q", "ground_truth": "72"})
	require.NoError(t, err)
	rep, err := in.Respond(ctx, id, []chat.Message{{Role: chat.RoleUser, Content: "q"}, {Role: chat.RoleAssistant, Content: "it is 72"}})
	require.NoError(t, err)
	require.Equal(t, Reply{Text: "Your response is incorrect! You need to reflect on your answer and try again.", Reward: 0}, rep)
	rep, err = in.Respond(ctx, id, []chat.Message{{Role: chat.RoleAssistant, Content: "#### 72"}, {Role: chat.RoleUser, Content: "x"}})
	require.NoError(t, err)
	require.Equal(t, Reply{Text: "Your response is correct!", Reward: 1, Terminate: true}, rep)
	score, err := in.FinalScore(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 1.0, score)
	require.NoError(t, in.Finalize(ctx, id))
	_, err = in.FinalScore(ctx, id)
	require.Error(t, err)
	_, err = in.Start(ctx, map[string]any{"name": "gsm8k"})
	require.ErrorContains(t, err, "ground_truth")

	// A missing name comes from the class name, as in verl.
	m, err = LoadInteractions(strings.NewReader("interaction:\n  - class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction\n"))
	require.NoError(t, err)
	require.Contains(t, m, "gsm8k")

	for _, c := range []struct{ yaml, want string }{
		{"interaction:\n  - name: a\n    class_name: my.Thing", "unknown class_name"},
		{"interaction:\n  - name: a\n    class_name: gsm8k\n  - name: a\n    class_name: gsm8k", `duplicate interaction name "a"`},
		{"interaction:\n  - name: a\n    class_name: gsm8k\n    config: {x: 1}", `unknown config key "x"`},
		{"interaction:\n  - name: a\n    clas_name: gsm8k", `unknown field "clas_name"`},
		{"interactions: []", `unknown field "interactions"`},
		{"interaction: []", "no entries"},
	} {
		_, err := LoadInteractions(strings.NewReader(c.yaml))
		require.ErrorIs(t, err, ErrConfig, c.yaml)
		require.ErrorContains(t, err, c.want, c.yaml)
	}
}

// TestInteractionOnlyWhenConfigured: verl's GSM8K tool dataset
// (examples/data_preprocess/gsm8k_multiturn_w_tool.py) writes
// interaction_kwargs into every row; verl's ToolAgentLoop starts an
// interaction only when interaction_config_path is set. Without
// interactions the row runs as a plain tool-agent row; with verl's GSM8K
// interaction config it gets the interaction's turns.
func TestInteractionOnlyWhenConfigured(t *testing.T) {
	tok := qwen3(t)
	s := Sample{ID: "s", Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 70+2?"}},
		InteractionKwargs: map[string]any{"query": "What is 70+2?", "ground_truth": "72"}}
	for _, configured := range []bool{false, true} {
		script := [][]int32{turn(t, tok, "It is 71."), turn(t, tok, "#### 72")}
		rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"s": script}, nil)})}
		env := &Env{Server: rec, Tokenizer: tok}
		if configured {
			m, err := LoadInteractions(strings.NewReader(verlGSM8KInteractionConfig))
			require.NoError(t, err)
			env.Interactions = m
			s.InteractionKwargs["name"] = "gsm8k"
		}
		loop, err := NewToolAgent(env, Config{})
		require.NoError(t, err)
		tr, err := loop.Run(context.Background(), s, server.SamplingParams{Logprobs: true})
		require.NoError(t, err, "configured=%v", configured)
		if !configured {
			require.Equal(t, trajectory.StopCompleted, tr.StopReason)
			require.Len(t, rec.reqs, 1)
			require.Empty(t, tr.TurnRewards)
			continue
		}
		require.Equal(t, trajectory.StopInteractionDone, tr.StopReason)
		require.Len(t, rec.reqs, 2)
		require.Equal(t, []float64{0, 1}, tr.TurnRewards)
		require.Equal(t, 1, ExtraInt(tr, ExtraInteractionScore))
	}
}

// infoTool records the tool.CallInfo of each call and fails on {"fail": true}.
type infoTool struct {
	mu    sync.Mutex
	infos []tool.CallInfo
}

func (t *infoTool) Schema() chat.ToolSchema {
	return chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{Name: "peek",
		Parameters: json.RawMessage(`{"type":"object","properties":{"fail":{"type":"boolean"}}}`)}}
}
func (t *infoTool) Create(context.Context, map[string]any) (string, error) { return "", nil }
func (t *infoTool) Release(context.Context, string) error                  { return nil }
func (t *infoTool) Execute(ctx context.Context, _ string, args json.RawMessage) (tool.Result, error) {
	info, ok := tool.CallInfoFrom(ctx)
	if !ok {
		return tool.Result{}, errors.New("no call info")
	}
	t.mu.Lock()
	c := *info
	c.Messages = append([]chat.Message(nil), info.Messages...) // valid during the call only
	t.infos = append(t.infos, c)
	t.mu.Unlock()
	if strings.Contains(string(args), "true") {
		return tool.Result{}, errors.New("failed on purpose")
	}
	return tool.Result{Text: "seen " + strconv.Itoa(len(info.Messages)), Reward: 0.5}, nil
}

// Tools see the trajectory (verl passes agent_data to execute): the
// conversation so far, ending with the calling turn, and the sample. A
// failed call adds a tool reward of 0, as in verl.
func TestToolsSeeTheTrajectory(t *testing.T) {
	tok := qwen3(t)
	peek := &infoTool{}
	set, err := tool.NewSet(peek)
	require.NoError(t, err)
	call := func(args string) string {
		return "<tool_call>\n{\"name\": \"peek\", \"arguments\": " + args + "}\n</tool_call>"
	}
	script := [][]int32{turn(t, tok, call(`{}`)+"\n"+call(`{"fail": true}`)), turn(t, tok, "Done.")}
	rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"s": script}, nil)})}
	loop, err := NewToolAgent(&Env{Server: rec, Tokenizer: tok, Tools: set}, Config{MaxParallelCalls: 2})
	require.NoError(t, err)
	s := Sample{ID: "s", GroupID: "g7", Index: 7, Messages: []chat.Message{{Role: chat.RoleUser, Content: "Go."}},
		DataSource: "openai/gsm8k", GroundTruth: "72", Extra: map[string]any{"split": "test"}}
	tr, err := loop.Run(context.Background(), s, server.SamplingParams{Logprobs: true})
	require.NoError(t, err)
	require.Equal(t, trajectory.StopCompleted, tr.StopReason)
	require.Len(t, peek.infos, 2)
	sort.Slice(peek.infos, func(i, j int) bool { return peek.infos[i].Call.ID < peek.infos[j].Call.ID })
	for i, info := range peek.infos {
		require.Equal(t, "s", info.TrajectoryID)
		require.Equal(t, "g7", info.GroupID)
		require.Equal(t, 7, info.Index)
		require.Equal(t, "openai/gsm8k", info.DataSource)
		require.Equal(t, "72", info.GroundTruth)
		require.Equal(t, map[string]any{"split": "test"}, info.Extra)
		require.Equal(t, "call_1_"+strconv.Itoa(i), info.Call.ID)
		require.Len(t, info.Messages, 2)
		require.Equal(t, chat.RoleUser, info.Messages[0].Role)
		last := info.Messages[1]
		require.Equal(t, chat.RoleAssistant, last.Role)
		require.Len(t, last.ToolCalls, 2)
	}
	require.Equal(t, []float64{0.5, 0}, tr.ToolRewards, "the failed call's reward is 0, as in verl")
	require.Equal(t, 1, tr.ToolErrors)
}

// Example_verlInteractionConfig loads verl's interaction config format
// (interaction_config_path) and plays one episode of verl's GSM8K
// interaction.
func Example_verlInteractionConfig() {
	m, err := LoadInteractions(strings.NewReader(`interaction:
  - name: "gsm8k"
    class_name: "verl.interactions.gsm8k_interaction.Gsm8kInteraction"
    config: {}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	in := m["gsm8k"]
	id, _ := in.Start(ctx, map[string]any{"name": "gsm8k", "ground_truth": "72"})
	rep, _ := in.Respond(ctx, id, []chat.Message{{Role: chat.RoleAssistant, Content: "#### 72"}})
	fmt.Println(rep.Text, rep.Reward, rep.Terminate)
	_ = in.Finalize(ctx, id)
	// Output: Your response is correct! 1 true
}

// verl's agent_loop.py overwrites registry names from the agent-loop config
// file (_agent_loop_registry[agent_loop_config.name] = agent_loop_config,
// volcengine/verl@b178a3cd), built-in ones included; users redeclare
// tool_agent with verl's ToolAgentLoop. Each replacement is reported.
func TestVerlAgentLoopConfigReplaces(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.SetConfig(ToolAgentName, Config{MaxAssistantTurns: 5, Format: "hermes"}))
	require.NoError(t, Register2(reg, "react_agent"))
	reps, err := reg.LoadConfigs(strings.NewReader(`
- name: tool_agent
  _target_: verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop
  max_assistant_turns: 2
- name: single_turn_agent
  _target_: recipe.langgraph_agent.react_agent_loop.ReactAgentLoop
- name: react_agent
  _target_: verl.experimental.agent_loop.single_turn_agent_loop.SingleTurnAgentLoop
- name: tool_agent
  _target_: verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop
  max_parallel_calls: 3
- name: new_one
  _target_: verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop
`))
	require.NoError(t, err)
	const tl = "verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop"
	require.Equal(t, []Replacement{
		{Name: ToolAgentName, Old: "built-in", New: "agent config entry 0 (_target_ " + tl + ")"},
		{Name: SingleTurnAgent, Old: "built-in", New: "agent config entry 1 (_target_ recipe.langgraph_agent.react_agent_loop.ReactAgentLoop)"},
		{Name: "react_agent", Old: "Registry.Register", New: "agent config entry 2 (_target_ verl.experimental.agent_loop.single_turn_agent_loop.SingleTurnAgentLoop)"},
		{Name: ToolAgentName, Old: "agent config entry 0 (_target_ " + tl + ")", New: "agent config entry 3 (_target_ " + tl + ")"},
	}, reps, "a new name is no replacement")
	cfg, err := reg.Config(ToolAgentName)
	require.NoError(t, err)
	require.Equal(t, Config{MaxAssistantTurns: 2, Format: "hermes", MaxParallelCalls: 3}, cfg, "each redeclaration starts from the loop's current settings")

	// react_agent (entry 2) is verl's SingleTurnAgentLoop although the name
	// single_turn_agent holds the react loop by then: hydra instantiates
	// _target_ whatever the registry says.
	env := &Env{Server: servertest.New(servertest.Config{}), Tokenizer: qwen3(t)}
	for name, want := range map[string]any{ToolAgentName: &ToolAgent{}, SingleTurnAgent: customLoop{}, "react_agent": &SingleTurn{}, "new_one": &ToolAgent{}} {
		l, err := reg.New(name, env)
		require.NoError(t, err, name)
		require.IsType(t, want, l, name)
	}

	// agentrl's own format derives a new loop and keeps names strict; so
	// does Register for Go callers.
	_, err = reg.LoadConfigs(strings.NewReader("- name: tool_agent\n  agent: single_turn_agent\n"))
	require.ErrorContains(t, err, `agent "tool_agent" is already registered`)
	require.ErrorContains(t, reg.Register(ToolAgentName, NewSingleTurn, Config{}), "already registered")
	replaced, err := reg.Replace(ToolAgentName, NewSingleTurn, Config{})
	require.NoError(t, err)
	require.True(t, replaced)
	replaced, err = reg.Replace("fresh", NewSingleTurn, Config{})
	require.NoError(t, err)
	require.False(t, replaced)
	_, err = reg.Replace("bad", NewSingleTurn, Config{MaxParallelCalls: -1})
	require.ErrorContains(t, err, "max_parallel_calls -1 < 0")
	// A failed entry keeps the replacements before it.
	reps, err = NewRegistry().LoadConfigs(strings.NewReader("- name: tool_agent\n  _target_: x.ToolAgentLoop\n- name: b\n  _target_: my.GhostLoop\n"))
	require.ErrorContains(t, err, "agent config 1")
	require.Len(t, reps, 1)
}
