package capture_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

// turn posts messages (JSON list) to ro and returns the assistant message
// as JSON, the way a harness echoes it back.
func turn(t *testing.T, r *rig, ro capture.Rollout, msgs string) string {
	t.Helper()
	body := `{"model":"agentrl","tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}],"messages":` + msgs + `}`
	code, resp := do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions", body, "Authorization", "Bearer "+ro.Key)
	require.Equal(t, 200, code, resp)
	var out struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &out))
	return string(out.Choices[0].Message)
}

// callID is the id of the first tool call of an assistant message.
func callID(t *testing.T, msg string) string {
	t.Helper()
	var m struct {
		ToolCalls []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	require.NoError(t, json.Unmarshal([]byte(msg), &m))
	require.NotEmpty(t, m.ToolCalls, msg)
	return m.ToolCalls[0].ID
}

func toolMsg(id, content string) string {
	return `{"role":"tool","tool_call_id":"` + id + `","content":"` + content + `"}`
}

const (
	sysMsg  = `{"role":"system","content":"You are an agent."}`
	taskMsg = `{"role":"user","content":"List the files."}`
	lsCall  = "<tool_call>\n{\"name\": \"ls\", \"arguments\": {\"dir\": \".\"}}\n</tool_call>"
	lsCall2 = "<tool_call>\n{\"name\": \"ls\", \"arguments\": {\"dir\": \"src\"}}\n</tool_call>"
)

func list(items ...string) string { return "[" + strings.Join(items, ",") + "]" }

// checkContract checks every trajectory against the contract and the
// engine: each mask-1 run is one engine output, in order, with its
// logprobs, and no output is trained twice.
func checkContract(t *testing.T, r *rig, trajs []*trajectory.Trajectory) {
	t.Helper()
	for _, tr := range trajs {
		require.NoError(t, tr.Validate())
		for i := 0; i < len(tr.ResponseMask); {
			if tr.ResponseMask[i] == 0 {
				i++
				continue
			}
			j := i
			for j < len(tr.ResponseMask) && tr.ResponseMask[j] == 1 {
				j++
			}
			found := false
			for _, o := range r.eng.outs {
				if equal(o.TokenIDs, tr.ResponseIDs[i:j]) {
					require.Equal(t, o.Logprobs, tr.Logprobs[i:j])
					found = true
				}
			}
			require.True(t, found, "a mask-1 run that is no engine output")
			i = j
		}
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func rebuild(t *testing.T, r *rig, id string) ([]*trajectory.Trajectory, capture.Report) {
	t.Helper()
	trajs, rep, err := r.c.Rebuild(context.Background(), id, capture.RebuildOptions{})
	require.NoError(t, err)
	checkContract(t, r, trajs)
	return trajs, rep
}

// Hard case 3: compaction rewrites the history; the call starts a new
// segment whose record says why, and becomes a trajectory of its own.
func TestCompactionStartsANewSegment(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, "Two files.", "Done: two files."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	a0 := turn(t, r, ro, list(sysMsg, taskMsg))
	turn(t, r, ro, list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt b.txt")))
	// The harness compacts: the first turns become a summary.
	turn(t, r, ro, list(sysMsg, `{"role":"user","content":"Summary so far: ls found a.txt and b.txt. Finish the task."}`))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 2)
	require.Len(t, rep.Roots, 2)
	require.Equal(t, "c2", rep.Roots[1].Call)
	require.Equal(t, `history rewritten: messages[1] (user) differs from c1's: content edited (closest: c1)`, rep.Roots[1].Reason)
	require.Equal(t, 2, trajs[0].NumTurns)
	require.Equal(t, 1, trajs[1].NumTurns)
	require.Equal(t, 1.0, rep.Delivered)

	// An edited earlier assistant turn is a rewrite too, and so is a
	// changed tool set.
	edited := strings.Replace(a0, `\"dir\": \".\"`, `\"dir\": \"..\"`, 1)
	require.NotEqual(t, a0, edited)
	turn(t, r, ro, list(sysMsg, taskMsg, edited, toolMsg(callID(t, a0), "x")))
	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	last := recs[len(recs)-1].Call
	require.Equal(t, "", last.Parent)
	require.Equal(t, "history rewritten: messages[2] (assistant) differs from c1's: tool_calls[0] has other arguments (closest: c1)", last.Segment)
}

// Hard case 1: the harness re-serializes the arguments and drops the
// reasoning; the call still continues its parent.
func TestCanonicalChangesContinue(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, "<think>\nlook first\n</think>\n\n"+lsCall, "Two files."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	a0 := turn(t, r, ro, list(sysMsg, taskMsg))
	require.Contains(t, a0, "reasoning_content")
	id := callID(t, a0)
	echo := `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}]}`
	turn(t, r, ro, list(sysMsg, taskMsg, echo, toolMsg(id, "a.txt b.txt")))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Len(t, rep.Roots, 1)
	// The second prompt is the first call's tokens plus a delta.
	require.Equal(t, append(append([]int32{}, r.eng.reqs[0].PromptIDs...), r.eng.outs[0].TokenIDs...),
		r.eng.reqs[1].PromptIDs[:len(r.eng.reqs[0].PromptIDs)+len(r.eng.outs[0].TokenIDs)])
}

// Hard case 5: a retry of a call whose answer the harness never received
// is a sibling with the same prompt; it is not trained.
func TestRetryIsNotTrainedTwice(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, lsCall2, "Two files."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	turn(t, r, ro, list(sysMsg, taskMsg)) // the answer is "lost" on the way
	a1 := turn(t, r, ro, list(sysMsg, taskMsg))
	turn(t, r, ro, list(sysMsg, taskMsg, a1, toolMsg(callID(t, a1), "main.go")))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, []capture.Dropped{{Call: "c0", Reason: "retry: same prompt as c1, which the harness continued"}}, rep.Dropped)
	require.Equal(t, 2, trajs[0].NumTurns)
	require.Equal(t, float64(len(r.eng.outs[1].TokenIDs)+len(r.eng.outs[2].TokenIDs))/float64(rep.SampledTokens), rep.Delivered)

	// A retried final call: the last answer is kept, the other dropped.
	ro2, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	turn(t, r, ro2, list(sysMsg, `{"role":"user","content":"Say hi."}`))
	turn(t, r, ro2, list(sysMsg, `{"role":"user","content":"Say hi."}`))
	trajs, rep = rebuild(t, r, ro2.ID)
	require.Len(t, trajs, 1)
	require.Len(t, rep.Dropped, 1)
	require.Contains(t, rep.Dropped[0].Reason, "the harness continued neither")
}

// Hard case 4: parallel branches from one call complete in any order;
// each is a trajectory, the shared call trained once.
func TestForksShareTheirParentOnce(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, "In dot: a.", "In src: b."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{Group: "g"})
	require.NoError(t, err)
	a0 := turn(t, r, ro, list(sysMsg, taskMsg))
	id := callID(t, a0)
	var wg sync.WaitGroup
	for _, out := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn(t, r, ro, list(sysMsg, taskMsg, a0, toolMsg(id, out)))
		}()
	}
	wg.Wait()
	require.NoError(t, r.c.SetReward(ctx, ro.ID, 0.25))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 2, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
	require.Equal(t, 1, trajs[1].NumTurns)
	ones := trajs[0].MaskOnes() + trajs[1].MaskOnes()
	require.Equal(t, rep.SampledTokens, ones, "each sampled token trained exactly once")
	require.Equal(t, 1.0, rep.Delivered)
	for i, tr := range trajs {
		require.Equal(t, "g", tr.GroupID)
		require.Equal(t, 0.25, *tr.Reward)
		require.Equal(t, ro.ID+"-"+string(rune('0'+i)), tr.ID)
	}
	// The second branch's prompt holds the shared call: its sequence is
	// the engine's.
	var extra struct {
		Calls       []string `json:"calls"`
		SharedCalls int      `json:"shared_calls"`
	}
	require.NoError(t, json.Unmarshal(trajs[1].Extra["capture"], &extra))
	require.Equal(t, 1, extra.SharedCalls)
	seq := append(append([]int32{}, trajs[1].PromptIDs...), trajs[1].ResponseIDs...)
	found := false
	for i := range r.eng.reqs {
		if equal(seq, append(append([]int32{}, r.eng.reqs[i].PromptIDs...), r.eng.outs[i].TokenIDs...)) {
			found = true
		}
	}
	require.True(t, found)
}

// Hard case 6: a call begun and never recorded (the process died) marks
// the rollout incomplete after a restart, and its trajectories are
// withheld.
func TestLostCallMarksTheRolloutIncomplete(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	turn(t, r, ro, list(sysMsg, taskMsg))
	// The intent of a call whose process died before recording it.
	require.NoError(t, r.store.Append(ctx, ro.ID, true, capture.Record{Kind: capture.KindBegin, Time: time.Now(), CallID: "c1"}))

	c2, err := capture.New(ctx, capture.Config{Engine: servertest.New(servertest.Config{}), Store: r.store, Chat: chatOf(tok)})
	require.NoError(t, err)
	trajs, rep, err := c2.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.Empty(t, trajs)
	require.True(t, rep.Incomplete)
	require.Contains(t, rep.IncompleteReason, "[c1]")
	require.Equal(t, 0.0, rep.Delivered)
	trajs, _, err = c2.Rebuild(ctx, ro.ID, capture.RebuildOptions{KeepIncomplete: true})
	require.NoError(t, err)
	require.Len(t, trajs, 1)
}

// Hard case 7, and 10: an answer that would arrive after the rollout was
// finished is neither recorded nor sent.
func TestAnswerAfterFinishIsWithheld(t *testing.T) {
	tok := small(t)
	end, _ := tok.TokenID("<|im_end|>")
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	rule := func(servertest.Call) servertest.Reply {
		started <- struct{}{}
		<-release
		return servertest.Reply{Tokens: append(tok.Encode("late secret"), end)}
	}
	r := newRigWith(t, tok, rule, nil)
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	type result struct {
		code int
		body string
	}
	done := make(chan result, 1)
	go func() {
		code, body := do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions", helloBody, "Authorization", "Bearer "+ro.Key)
		done <- result{code, body}
	}()
	<-started
	require.NoError(t, r.c.Finish(ctx, ro.ID))
	close(release)
	res := <-done
	require.Equal(t, 500, res.code)
	require.NotContains(t, res.body, "secret")
	require.Contains(t, res.body, "after the rollout was finished")
	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	kinds := []string{}
	for _, rec := range recs {
		kinds = append(kinds, rec.Kind)
	}
	// The call in flight is aborted by the finish, in the same write.
	require.Equal(t, []string{capture.KindRollout, capture.KindBegin, capture.KindAbort, capture.KindFinish}, kinds)
}

func TestIdleRolloutsExpire(t *testing.T) {
	tok := small(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := newRigWith(t, tok, newScript(t, tok, "hello").Rule, func(c *capture.Config) {
		c.Now, c.IdleTimeout = clock, time.Hour
	})
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	code, _ := do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions", helloBody, "Authorization", "Bearer "+ro.Key)
	require.Equal(t, 200, code)
	mu.Lock()
	now = now.Add(61 * time.Minute)
	mu.Unlock()
	_, err = r.c.Create(ctx, capture.CreateOptions{}) // expiry runs here
	require.NoError(t, err)
	code, _ = do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions", helloBody, "Authorization", "Bearer "+ro.Key)
	require.Equal(t, 401, code)
	_, rep, err := r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.True(t, rep.Incomplete)
	require.Equal(t, "the rollout expired while idle", rep.IncompleteReason)
}

func TestRestartKeepsServingOpenRollouts(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, "Two files."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	a0 := turn(t, r, ro, list(sysMsg, taskMsg))
	// A second Capture over the same store (a restart) continues the
	// rollout's chain with the same key.
	c2, err := capture.New(ctx, capture.Config{Engine: r.eng, Store: r.store, Chat: chatOf(tok)})
	require.NoError(t, err)
	r.model.Config.Handler = c2.Handler()
	turn(t, r, ro, list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt")))
	trajs, rep, err := c2.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
	checkContract(t, r, trajs)
}

func TestTornLastRecordIsIgnoredAndCut(t *testing.T) {
	dir := t.TempDir()
	s, err := capture.OpenDir(dir)
	require.NoError(t, err)
	ctx := context.Background()
	info := &capture.RolloutInfo{ID: "ro_x", KeySHA256: strings.Repeat("ab", 32)}
	require.NoError(t, s.Append(ctx, "ro_x", true, capture.Record{Kind: capture.KindRollout, Rollout: info},
		capture.Record{Kind: capture.KindBegin, CallID: "c0"}))
	require.NoError(t, s.Close())
	// A crash mid-write leaves half a line.
	f, err := os.OpenFile(filepath.Join(dir, "ro_x.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"kind":"call","call":{"id":"c0","sampled_ids":[1,2`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s, err = capture.OpenDir(dir)
	require.NoError(t, err)
	defer s.Close()
	recs, err := s.Load(ctx, "ro_x")
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.NoError(t, s.Append(ctx, "ro_x", true, capture.Record{Kind: capture.KindAbort, CallID: "c0", Reason: "crash"}))
	recs, err = s.Load(ctx, "ro_x")
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, capture.KindAbort, recs[2].Kind)

	// A malformed whole line is an error naming it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ro_y.jsonl"), []byte(`{"kind":"rollout"}`+"\n"), 0o600))
	_, err = s.Load(ctx, "ro_y")
	require.ErrorIs(t, err, capture.ErrRecord)
	require.Contains(t, err.Error(), "ro_y's log, line 1")
	_, err = s.Load(ctx, "../etc")
	require.ErrorContains(t, err, "invalid rollout id")
}

// Hard case 8: a title call shares the rollout's key (opencode, crush)
// but is not the trajectory: it takes neither the main chain nor the
// reward, and is reported.
func TestAuxiliaryCallsAreKeptOutOfTraining(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, "Files listed", "Two files."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	a0 := turn(t, r, ro, list(sysMsg, taskMsg))
	// The title call: no tools, its own system prompt.
	code, body := do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions",
		`{"messages":[{"role":"system","content":"Generate a short title."},{"role":"user","content":"List the files."}]}`,
		"Authorization", "Bearer "+ro.Key)
	require.Equal(t, 200, code, body)
	turn(t, r, ro, list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt b.txt")))
	require.NoError(t, r.c.SetReward(ctx, ro.ID, 1))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
	require.Equal(t, []capture.Dropped{{Call: "c1", Reason: "auxiliary: " + capture.DefaultAuxiliary[0].Name}}, rep.Dropped)

	// Rules are configurable: here the harness's compaction summary is
	// auxiliary by its prompt, and with no rules the title is trained.
	rules := []capture.AuxRule{{Name: "title", SystemContains: "short title"}, {Name: "summary", LastUserContains: "Summarize"}}
	trajs, rep, err = r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{Auxiliary: rules})
	require.NoError(t, err)
	require.Len(t, trajs, 1)
	require.Equal(t, "auxiliary: title", rep.Dropped[0].Reason)
	trajs, rep, err = r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{Auxiliary: []capture.AuxRule{}})
	require.NoError(t, err)
	require.Len(t, trajs, 2)
	require.Empty(t, rep.Dropped)
}

// Hard case 9: calls of one chain served by different weights; the
// trajectory says which versions produced it, each call's record its own.
func TestWeightVersionsAcrossAnUpdate(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, "Two files."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, r.eng.eng.UpdateWeights(ctx, server.Weights{Version: 3}))
	a0 := turn(t, r, ro, list(sysMsg, taskMsg))
	require.NoError(t, r.eng.eng.UpdateWeights(ctx, server.Weights{Version: 4}))
	turn(t, r, ro, list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt b.txt")))
	trajs, _ := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1)
	require.Equal(t, int64(3), trajs[0].MinWeightVersion)
	require.Equal(t, int64(4), trajs[0].MaxWeightVersion)
	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	var versions []int64
	for _, rec := range recs {
		if rec.Kind == capture.KindCall {
			versions = append(versions, rec.Call.WeightVersion)
		}
	}
	require.Equal(t, []int64{3, 4}, versions)
}

// Hard case 7, streamed: an answer the record refuses never gets its
// finish event, so the harness does not take it as an answer.
func TestStreamedAnswerAfterFinishNeverFinishes(t *testing.T) {
	tok := small(t)
	end, _ := tok.TokenID("<|im_end|>")
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	rule := func(servertest.Call) servertest.Reply {
		started <- struct{}{}
		<-release
		return servertest.Reply{Tokens: append(tok.Encode("late"), end)}
	}
	r := newRigWith(t, tok, rule, nil)
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	done := make(chan string, 1)
	go func() {
		_, body := do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions",
			strings.Replace(helloBody, `{"model"`, `{"stream":true,"model"`, 1), "Authorization", "Bearer "+ro.Key)
		done <- body
	}()
	<-started
	require.NoError(t, r.c.Finish(ctx, ro.ID))
	close(release)
	body := <-done
	require.NotContains(t, body, `"finish_reason":"stop"`)
	require.Contains(t, body, "after the rollout was finished")
}
