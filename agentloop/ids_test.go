package agentloop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

func prompts(texts ...string) []Sample {
	out := make([]Sample, len(texts))
	for i, s := range texts {
		out[i] = Sample{Messages: []chat.Message{{Role: chat.RoleUser, Content: s}}}
	}
	return out
}

// TestGenerateUnnamedSamplesGetOwnGroups is issue 13's first bug: samples
// built in code (no ID, no GroupID, Index left 0) must not share one GRPO
// group nor one engine request id.
func TestGenerateUnnamedSamplesGetOwnGroups(t *testing.T) {
	tok := qwen3(t)
	rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)})}
	m, err := NewManager(nil, &Env{Server: rec, Tokenizer: tok}, Options{RewardFromLoop: true, N: 2})
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), prompts("What is 2+2?", "Name a colour."))
	require.NoError(t, err)
	var ids, groups []string
	for _, tr := range out.Trajectories {
		ids = append(ids, tr.ID)
		groups = append(groups, tr.GroupID)
	}
	require.Equal(t, []string{"0/0", "0/1", "1/0", "1/1"}, ids)
	require.Equal(t, []string{"0", "0", "1", "1"}, groups)
	for i, r := range out.Results {
		for _, tr := range r.Trajectories {
			require.Equal(t, r.Sample.Messages[0].Content, []string{"What is 2+2?", "Name a colour."}[i])
			require.Equal(t, fmt.Sprint(i), tr.GroupID)
		}
	}
	// Every rollout reached the engine under its own request id.
	var rids []string
	for _, q := range rec.reqs {
		rids = append(rids, q.RequestID)
	}
	slices.Sort(rids)
	require.Equal(t, []string{"0/0", "0/1", "1/0", "1/1"}, rids)

	// The same input gives the same ids (stable), so reruns line up.
	out2, err := m.Generate(context.Background(), prompts("What is 2+2?", "Name a colour."))
	require.NoError(t, err)
	for i := range out.Trajectories {
		require.Equal(t, out.Trajectories[i].ID, out2.Trajectories[i].ID)
	}
}

// TestGenerateNamedSamplesGroupByID: a sample's own ID names its group
// (verl's uid is per prompt row), whatever its Index.
func TestGenerateNamedSamplesGroupByID(t *testing.T) {
	tok := qwen3(t)
	m, err := NewManager(nil, &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)}), Tokenizer: tok}, Options{RewardFromLoop: true, N: 2})
	require.NoError(t, err)
	s := prompts("a", "b", "c")
	s[0].ID, s[1].ID = "q-a", "q-b"
	s[2].GroupID = "uid-c"
	out, err := m.Generate(context.Background(), s)
	require.NoError(t, err)
	var got []string
	for _, tr := range out.Trajectories {
		got = append(got, tr.ID+" "+tr.GroupID)
	}
	require.Equal(t, []string{"q-a/0 q-a", "q-a/1 q-a", "q-b/0 q-b", "q-b/1 q-b", "uid-c/0 uid-c", "uid-c/1 uid-c"}, got)
}

// TestGenerateRejectsDuplicateIDs: two rollouts with one id would be one
// request to the engine and one row to the trainer; nothing may run.
func TestGenerateRejectsDuplicateIDs(t *testing.T) {
	tok := qwen3(t)
	srv := servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)})
	m, err := NewManager(nil, &Env{Server: srv, Tokenizer: tok}, Options{RewardFromLoop: true})
	require.NoError(t, err)
	for name, s := range map[string][]Sample{
		"same ID":      {{ID: "x"}, {ID: "x"}},
		"same index":   {{Index: 3}, {Index: 3}},
		"same GroupID": {{GroupID: "g"}, {Index: 1}, {GroupID: "g"}},
		"ID vs index":  {{ID: "5"}, {Index: 5}},
	} {
		for i := range s {
			s[i].Messages = prompts("hi")[0].Messages
		}
		out, err := m.Generate(context.Background(), s)
		require.ErrorIs(t, err, ErrSample, name)
		require.ErrorContains(t, err, "duplicate", name)
		require.Nil(t, out, name)
	}
	require.Zero(t, srv.Stats().Calls, "a rejected batch must not reach the engine")

	// With n rollouts per prompt, "<id>/<r>" must not collide with another
	// sample's id either.
	m2, err := NewManager(nil, &Env{Server: srv, Tokenizer: tok}, Options{RewardFromLoop: true, N: 2})
	require.NoError(t, err)
	s := prompts("a", "b")
	s[0].ID, s[1].GroupID = "p", "p"
	_, err = m2.Generate(context.Background(), s)
	require.ErrorIs(t, err, ErrSample)
}

// gatedServer holds the first call of one request id until released.
type gatedServer struct {
	server.LLMServer
	hold    string
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gatedServer) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	if req.RequestID == g.hold {
		g.once.Do(func() { close(g.started) })
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	return g.LLMServer.Generate(ctx, req)
}

// TestStreamRejectsDuplicateInFlight: a streamed sample whose id is still
// in flight gets an error result instead of sharing the engine request.
func TestStreamRejectsDuplicateInFlight(t *testing.T) {
	tok := qwen3(t)
	g := &gatedServer{
		LLMServer: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)}),
		hold:      "dup", started: make(chan struct{}), release: make(chan struct{}),
	}
	m, err := NewManager(nil, &Env{Server: g, Tokenizer: tok}, Options{RewardFromLoop: true})
	require.NoError(t, err)
	in := make(chan Sample)
	res := m.Stream(context.Background(), in)
	s := prompts("a", "b", "c")
	s[0].ID, s[1].ID, s[2].ID = "dup", "dup", "other"
	in <- s[0]
	<-g.started
	in <- s[1]
	in <- s[2]
	var results []Result
	for len(results) < 2 {
		select {
		case r := <-res:
			results = append(results, r)
		case <-time.After(5 * time.Second):
			close(g.release) // let the held call end so the stream can be drained
			close(in)
			for range res {
			}
			t.Fatal("the duplicate was not rejected while its twin was in flight")
		}
	}
	close(g.release)
	close(in)
	for r := range res {
		results = append(results, r)
	}
	require.Len(t, results, 3)
	byID := map[string]Result{}
	rejected := 0
	for _, r := range results {
		if r.Trajectories[0] == nil {
			rejected++
			require.ErrorIs(t, r.Err(), ErrSample)
			require.ErrorContains(t, r.Err(), `"dup"`)
			continue
		}
		byID[r.Trajectories[0].ID] = r
	}
	require.Equal(t, 1, rejected)
	require.NoError(t, byID["dup"].Err())
	require.NoError(t, byID["other"].Err())
}
