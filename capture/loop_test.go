package capture_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// TestHarnessLoopUnderManager runs the official-SDK harness process
// (TestHarnessProcess) as an agentloop.AgentLoop: the Manager's n rollouts
// of a sample are each a capture rollout with its own process, and come
// back as the Manager's trajectories with their group and ids.
func TestHarnessLoopUnderManager(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, "One file: note.txt."))
	var out bytes.Buffer
	loop := &capture.HarnessLoop{Capture: r.c, Harness: capture.Harness{
		Command: os.Args[0] + " -test.run=^TestHarnessProcess$ -- {prompt}", Env: []string{"CAPTURE_TEST_HARNESS=1"},
		Dir: t.TempDir(), Stdout: &out, Stderr: &out, Timeout: time.Minute}}
	reg := agentloop.NewRegistry()
	require.NoError(t, reg.Register("harness", func(*agentloop.Env, agentloop.Config) (agentloop.AgentLoop, error) { return loop, nil }, agentloop.Config{}))
	// Concurrency 1: the script answers calls in order, tool call then
	// answer, so two harnesses must not interleave.
	m, err := agentloop.NewManager(reg, &agentloop.Env{Server: r.eng, Tokenizer: tok},
		agentloop.Options{DefaultAgent: "harness", N: 2, Concurrency: 1, RewardFromLoop: true})
	require.NoError(t, err)
	res, err := m.Generate(context.Background(), []agentloop.Sample{{ID: "s0", Messages: []chat.Message{
		{Role: "system", Content: "not for the harness"}, {Role: "user", Content: "List the files, don't guess."}}}})
	require.NoError(t, err)
	require.Len(t, res.Results, 1)
	require.NoError(t, res.Results[0].Err(), out.String())
	require.Len(t, res.Trajectories, 2)
	checkContract(t, r, res.Trajectories)
	for i, tr := range res.Trajectories {
		require.Equal(t, "s0", tr.GroupID)
		require.Equal(t, 2, tr.NumTurns)
		require.Equal(t, trajectory.StopCompleted, tr.StopReason)
		var rep capture.Report
		require.NoError(t, json.Unmarshal(tr.Extra[capture.ExtraCaptureReport], &rep), "trajectory %d", i)
		require.Equal(t, 2, rep.Calls)
		require.Equal(t, 1, rep.Trajectories)
		require.InDelta(t, 1.0, rep.Delivered, 0)
		// The rollout's records are deleted once rebuilt.
		_, err := r.c.Records(context.Background(), rep.Rollout)
		require.ErrorIs(t, err, capture.ErrNotFound)
	}
}

func TestHarnessLoopErrors(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, "Done."))
	loop := &capture.HarnessLoop{Capture: r.c, Harness: capture.Harness{Command: "exit 0", Dir: t.TempDir()}}
	ctx := context.Background()
	// No user text: nothing to give the harness.
	_, err := loop.RunMulti(ctx, agentloop.Sample{ID: "s1", Messages: []chat.Message{{Role: "system", Content: "x"}}}, server.SamplingParams{})
	require.ErrorContains(t, err, "sample s1 has no user message")
	// A harness that makes no call gives no trajectory: an error, not an
	// empty row.
	_, err = loop.RunMulti(ctx, agentloop.Sample{ID: "s2", Messages: []chat.Message{{Role: "user", Content: "hi"}}}, server.SamplingParams{})
	require.ErrorContains(t, err, "produced no trajectory: 0 calls recorded")
	// A harness that fails: its error comes back.
	loop.Harness.Command = "exit 4"
	_, err = loop.Run(ctx, agentloop.Sample{ID: "s3", Messages: []chat.Message{{Role: "user", Content: "hi"}}}, server.SamplingParams{})
	require.ErrorContains(t, err, "exit status 4")
	var nilCapture capture.HarnessLoop
	_, err = nilCapture.Run(ctx, agentloop.Sample{ID: "s4"}, server.SamplingParams{})
	require.ErrorContains(t, err, "Capture is nil")
}
