package agentloop

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// routingEngine answers from a script and reports MoE routing as SGLang and
// vLLM do: one row per position of prompt ++ output except the last token,
// 2 layers × top-1, each value version*1000 + position so the test can
// tell which call a row came from.
type routingEngine struct {
	mu      sync.Mutex
	turns   [][]int32
	abortAt map[int]int // call → tokens returned before a (resumable) abort
	calls   int
	version int16
	// cut answers only the rows from RoutedExpertsFrom on, as SGLang's
	// routed_experts_start_len does; without it every row (vLLM). froms
	// are the RoutedExpertsFrom of the calls.
	cut   bool
	froms []int
}

func (e *routingEngine) Generate(_ context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	call := e.calls
	e.calls++
	e.version++
	toks := e.turns[0]
	stop := server.StopEOS
	if n, ok := e.abortAt[call]; ok {
		toks, stop = toks[:n], server.StopAbort
		e.turns[0] = e.turns[0][n:]
	} else {
		e.turns = e.turns[1:]
	}
	out := server.TokenOutput{TokenIDs: toks, StopReason: stop}
	if req.Params.RoutedExperts {
		e.froms = append(e.froms, req.Params.RoutedExpertsFrom)
		start := 0
		if e.cut {
			start = req.Params.RoutedExpertsFrom
		}
		rows := len(req.PromptIDs) + len(toks) - 1 - start
		r := &server.Routing{Start: start, Layers: 2, TopK: 1, Experts: make([]int16, 2*rows)}
		for i := range rows {
			p := start + i
			r.Experts[2*i], r.Experts[2*i+1] = e.version*1000+int16(p), -(e.version*1000 + int16(p))
		}
		out.RoutedExperts = r
	}
	return out, nil
}

// The trajectory's routing is the last turn's, covering the whole
// sequence; a resumed turn keeps the first call's rows for the tokens
// generated before the abort (verl's resume loop) and appends the rest,
// which the resume asks for alone (RoutedExpertsFrom): an engine that
// cuts them (SGLang) sends only those, one that cannot (vLLM) all.
func TestEpisodeRoutedExperts(t *testing.T) {
	for _, cut := range []bool{true, false} {
		t.Run(fmt.Sprint("cut=", cut), func(t *testing.T) { testEpisodeRoutedExperts(t, cut) })
	}
}

func testEpisodeRoutedExperts(t *testing.T, cutRows bool) {
	tok := qwen3(t)
	call := "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"
	first, second := turn(t, tok, call), turn(t, tok, "3")
	eng := &routingEngine{turns: [][]int32{first, second}, abortAt: map[int]int{1: 1}, cut: cutRows}
	set, err := tool.NewSet(addTool(t))
	require.NoError(t, err)
	kit, err := NewToolKit(&Env{Server: eng, Tokenizer: tok, Tools: set}, Config{})
	require.NoError(t, err)
	e := kit.Episode(Sample{ID: "r", Messages: []chat.Message{{Role: chat.RoleUser, Content: "1+2?"}}},
		server.SamplingParams{RoutedExperts: true})
	require.True(t, e.Start())
	for {
		res, ok := e.GenerateTurn(context.Background())
		if !ok {
			break
		}
		if !res.HasCalls() {
			e.Stop(trajectory.StopCompleted)
			break
		}
		if !e.Step(context.Background(), res) {
			break
		}
	}
	tr, err := e.Finish()
	require.NoError(t, err)
	require.NoError(t, tr.Validate())
	require.Equal(t, 3, eng.calls, "the second turn was resumed once")
	seqLen := len(tr.PromptIDs) + len(tr.ResponseIDs)
	require.Equal(t, []int{0, 0, seqLen - len(second)}, eng.froms, "the resume asks from the first row it lacks")
	r := tr.RoutedExperts
	require.NotNil(t, r)
	seq := len(tr.PromptIDs) + len(tr.ResponseIDs)
	require.Equal(t, seq-1, r.Rows(), "one row short of the sequence: its last token was never run")
	// Turn 2's first call (version 2) made the rows up to its one token;
	// the resumed call (version 3) only the rest.
	cut := seq - len(second) // position of turn 2's first token
	for p := range r.Rows() {
		v := int16(3)
		if p < cut {
			v = 2
		}
		require.Equal(t, v*1000+int16(p), r.Experts[2*p], "position %d", p)
		require.Equal(t, -(v*1000 + int16(p)), r.Experts[2*p+1], "position %d", p)
	}

	// Not asked: no routing.
	eng = &routingEngine{turns: [][]int32{second}}
	plain := NewEpisode(&Env{Server: eng, Tokenizer: tok}, Config{}, Sample{ID: "n", Messages: []chat.Message{{Role: chat.RoleUser, Content: "1+2?"}}}, server.SamplingParams{}, nil)
	require.True(t, plain.Start())
	plain.Generate(context.Background())
	tr, err = plain.Finish()
	require.NoError(t, err)
	require.Nil(t, tr.RoutedExperts)
}

func TestGenerationRoutingErrors(t *testing.T) {
	var g Generation
	require.ErrorIs(t, g.addRouting(&server.Routing{Start: 3, Layers: 2, TopK: 1, Experts: make([]int16, 4)}, 0), server.ErrBadResponse,
		"a first answer starts at 0 or where it was asked")
	require.NoError(t, g.addRouting(&server.Routing{Layers: 2, TopK: 1, Experts: make([]int16, 4)}, 0))
	require.ErrorIs(t, g.addRouting(&server.Routing{Layers: 1, TopK: 2, Experts: make([]int16, 6)}, 2), server.ErrBadResponse)
	require.ErrorIs(t, g.addRouting(&server.Routing{Start: 3, Layers: 2, TopK: 1, Experts: make([]int16, 4)}, 2), server.ErrBadResponse,
		"a resumed answer that leaves a gap after the 2 rows held")
	require.ErrorIs(t, g.addRouting(&server.Routing{Layers: 2, TopK: 1, Experts: make([]int16, 3)}, 2), server.ErrBadResponse)
	// Rows from position 1 on: the one past the 2 held is appended.
	require.NoError(t, g.addRouting(&server.Routing{Start: 1, Layers: 2, TopK: 1, Experts: []int16{9, 9, 7, 7}}, 2))
	require.Equal(t, []int16{0, 0, 0, 0, 7, 7}, g.RoutedExperts.Experts)
	var h Generation
	require.NoError(t, h.addRouting(&server.Routing{Start: 5, Layers: 1, TopK: 1, Experts: []int16{1}}, 5))
	require.Equal(t, 5, h.RoutedExperts.Start)
}

// A loop run without the Manager gets its checks too: no Env is an error,
// not a panic, and a sample with no messages or an unknown role fails at
// Start naming the sample, before the chat template drops or trips on it.
func TestEpisodeStartChecks(t *testing.T) {
	e := NewEpisode(nil, Config{}, Sample{ID: "x"}, server.SamplingParams{}, nil)
	require.False(t, e.Start())
	_, err := e.Finish()
	require.ErrorContains(t, err, "env is nil")
	e = NewEpisode(&Env{}, Config{}, Sample{ID: "x"}, server.SamplingParams{}, nil)
	require.False(t, e.Start())
	_, err = e.Finish()
	require.ErrorContains(t, err, "Env.Server is nil")

	tok := qwen3(t)
	env := &Env{Server: &routingEngine{turns: [][]int32{{1}}}, Tokenizer: tok}
	for _, c := range []struct {
		s    Sample
		want string
	}{
		{Sample{ID: "empty", Index: 3}, `sample 3 (id "empty")`},
		{Sample{ID: "robot", Messages: []chat.Message{{Role: "robot", Content: "beep"}}}, `role "robot"`},
	} {
		e := NewEpisode(env, Config{}, c.s, server.SamplingParams{}, nil)
		require.False(t, e.Start())
		stop, err := e.Stopped()
		require.Equal(t, trajectory.StopError, stop)
		require.ErrorIs(t, err, ErrSample)
		require.ErrorContains(t, err, c.want)
	}
}
