package agentloop

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// callInfoTool records the tool.CallInfo each call carries.
type callInfoTool struct {
	mu    sync.Mutex
	infos []tool.CallInfo
}

func (i *callInfoTool) Schema() chat.ToolSchema {
	return chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
		Name: "info", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
}
func (i *callInfoTool) Create(context.Context, map[string]any) (string, error) { return "i", nil }
func (i *callInfoTool) Release(context.Context, string) error                  { return nil }
func (i *callInfoTool) Execute(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
	info, ok := tool.CallInfoFrom(ctx)
	if !ok {
		return tool.Result{Text: "no call info"}, nil
	}
	i.mu.Lock()
	i.infos = append(i.infos, *info)
	i.mu.Unlock()
	return tool.Result{Text: "seen " + info.TrajectoryID, Reward: 0.25}, nil
}

// A custom loop on ToolKit gets everything ToolAgent's tool step does:
// call ids, tool.CallInfo, trace events, counters, rewards, the per-turn
// call limit, the invalid-call limit and the session's release, with only
// its own logic written.
func TestToolEpisodeCustomLoop(t *testing.T) {
	tok := qwen3(t)
	call := func(name, args string) string {
		return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
	}
	info := &callInfoTool{}
	echo := &countingTool{name: "echo"}
	set, err := tool.NewSet(info, echo, addTool(t))
	require.NoError(t, err)

	var mu sync.Mutex
	var events []Event
	trace := func(ev Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }
	scripts := map[string][][]int32{
		// Three calls with MaxParallelCalls 2: the third is refused.
		"par": {turn(t, tok, call("info", `{}`)+"\n"+call("add", `{"a": 2, "b": 3}`)+"\n"+call("echo", `{"mode": "ok"}`)), turn(t, tok, "Done.")},
		// Invalid calls twice in a row end the loop at the limit.
		"bad": {turn(t, tok, call("nope", `{}`)), turn(t, tok, call("add", `{"a": "x"}`)), turn(t, tok, "never")},
		// A sample narrowed to echo: info is an unknown tool for it.
		"sub": {turn(t, tok, call("info", `{}`)), turn(t, tok, "ok")},
	}
	engine := servertest.New(servertest.Config{Rule: servertest.Scripts(scripts, nil)})
	env := &Env{Server: engine, Tokenizer: tok, Tools: set, Trace: trace}
	kit, err := NewToolKit(env, Config{MaxParallelCalls: 2, MaxConsecutiveInvalidToolCalls: 2})
	require.NoError(t, err)
	require.Equal(t, "hermes", kit.Config().Format)
	require.Equal(t, 256, kit.Config().MaxToolResponseLength)

	var turns []ToolTurn
	run := func(s Sample) *trajectory.Trajectory {
		e := kit.Episode(s, server.SamplingParams{Logprobs: true})
		if e.Start() {
			for {
				res, ok := e.GenerateTurn(context.Background())
				if !ok {
					break
				}
				if !res.HasCalls() {
					e.Stop(trajectory.StopCompleted)
					break
				}
				tt := e.CallTools(context.Background(), res)
				turns = append(turns, tt)
				if tt.Ended || !e.Observe(tt.Messages...) {
					break
				}
			}
		}
		tr, err := e.Finish()
		require.NoError(t, err)
		require.NoError(t, tr.Validate())
		return tr
	}
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "Go."}}

	tr := run(Sample{ID: "par", GroupID: "g", Index: 7, Messages: msgs})
	require.Equal(t, trajectory.StopCompleted, tr.StopReason)
	require.Equal(t, 3, tr.ToolCalls)
	require.Equal(t, 1, tr.ToolErrors)
	require.Len(t, turns, 1)
	tt := turns[0]
	require.Len(t, tt.Results, 2)
	require.Len(t, tt.Messages, 3)
	require.Equal(t, 1, tt.Failed())
	require.False(t, tt.Invalid)
	require.Equal(t, "seen par", tt.Messages[0].Content)
	require.Equal(t, "call_1_0", tt.Messages[0].ToolCallID)
	require.Equal(t, "5", tt.Messages[1].Content)
	require.Equal(t, "call_1_1", tt.Messages[1].ToolCallID)
	require.Equal(t, `Error: the call to "echo" was not run: at most 2 tool calls are run per turn.`, tt.Messages[2].Content)
	require.Len(t, info.infos, 1)
	require.Equal(t, "par", info.infos[0].TrajectoryID)
	require.Equal(t, "g", info.infos[0].GroupID)
	require.Equal(t, 7, info.infos[0].Index)
	require.Equal(t, "call_1_0", info.infos[0].Call.ID)
	require.Equal(t, []float64{0.25, 1}, tr.ToolRewards)

	turns = nil
	tr = run(Sample{ID: "bad", Messages: msgs})
	require.Equal(t, trajectory.StopInvalidCalls, tr.StopReason)
	require.Len(t, turns, 2)
	require.True(t, turns[0].Invalid)
	require.False(t, turns[0].Ended)
	require.True(t, turns[1].Invalid)
	require.True(t, turns[1].Ended)

	turns = nil
	tr = run(Sample{ID: "sub", Tools: []string{"echo"}, Messages: msgs})
	require.Equal(t, trajectory.StopCompleted, tr.StopReason)
	require.Len(t, turns, 1)
	require.Equal(t, 1, turns[0].Failed())
	require.True(t, turns[0].Invalid)
	require.Contains(t, turns[0].Messages[0].Content, "info")
	require.Len(t, info.infos, 1, "a tool outside the sample's subset never runs")

	// The trace saw each run's session, parses and tool calls.
	kinds := map[string]map[EventKind]int{}
	mu.Lock()
	for _, ev := range events {
		if kinds[ev.TrajectoryID] == nil {
			kinds[ev.TrajectoryID] = map[EventKind]int{}
		}
		kinds[ev.TrajectoryID][ev.Kind]++
	}
	mu.Unlock()
	require.Equal(t, 1, kinds["par"][EventSessionOpen])
	require.Equal(t, 1, kinds["par"][EventSessionClose])
	require.Equal(t, 2, kinds["par"][EventParse])
	require.Equal(t, 2, kinds["par"][EventTool])
	require.Equal(t, 1, kinds["bad"][EventTool]) // the unknown tool is a parse error, the bad arguments a call
	require.Equal(t, 1, kinds["sub"][EventSessionClose])
	require.Equal(t, echo.created.Load(), echo.released.Load())
}

func TestToolKitErrors(t *testing.T) {
	_, err := NewToolKit(nil, Config{})
	require.ErrorContains(t, err, "env is nil")
	_, err = NewToolKit(&Env{}, Config{})
	require.ErrorContains(t, err, "Env.Server is nil")
	tok := qwen3(t)
	env := &Env{Server: servertest.New(servertest.Config{}), Tokenizer: tok}
	_, err = NewToolKit(env, Config{Format: "nope"})
	require.ErrorIs(t, err, ErrConfig)
	_, err = NewToolKit(env, Config{ToolResponseTruncateSide: "top"})
	require.ErrorIs(t, err, ErrConfig)

	// A sample that selects tools when none are configured fails at Start.
	kit, err := NewToolKit(env, Config{})
	require.NoError(t, err)
	e := kit.Episode(Sample{ID: "x", Tools: []string{"calc"}, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, server.SamplingParams{})
	require.False(t, e.Start())
	stop, err := e.Stopped()
	require.Equal(t, trajectory.StopError, stop)
	require.ErrorIs(t, err, ErrConfig)
	_, err = e.Finish()
	require.ErrorIs(t, err, ErrConfig)
}
