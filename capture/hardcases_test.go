package capture_test

// The hard cases of black-box capture that the other tests do not cover
// by name (doc.go maps each of the ten to its tests), and the faults:
// a killed harness, an engine abort mid-stream, a duplicated delivery.

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// Hard case 2: Qwen3's template renders an assistant turn's <think> block
// only after the last user turn, so re-rendering a multi-turn chat gives
// a prompt without the reasoning the model sampled. Each call must
// continue the last one's exact tokens — reasoning included — with only
// the new user turn as a delta, so the rollout stays one trajectory.
func TestHardCase2Qwen3DropsEarlierReasoning(t *testing.T) {
	tok := qwen(t)
	replies := []string{
		"<think>\nThe user greets me.\n</think>\n\nHello! What next?",
		"<think>\nA short joke.\n</think>\n\nWhy do programmers prefer dark mode? Light attracts bugs.",
		"<think>\nWrap up.\n</think>\n\nYou're welcome.",
	}
	r := newRig(t, tok, newScript(t, tok, replies...))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{Group: "qwen3"})
	require.NoError(t, err)
	c := r.client(ro.OpenAIBaseURL, ro.Key)
	params := openai.ChatCompletionNewParams{Model: "agentrl",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage("Hi.")}}
	users := []string{"Tell me a joke.", "Thanks."}
	for i := range replies {
		resp, err := c.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		msg := resp.Choices[0].Message
		require.Equal(t, replies[i][strings.Index(replies[i], "</think>\n\n")+len("</think>\n\n"):], msg.Content)
		if i < len(users) {
			// The SDK echoes the answer without its reasoning.
			params.Messages = append(params.Messages, msg.ToParam(), openai.UserMessage(users[i]))
		}
	}
	require.NoError(t, r.c.SetReward(ctx, ro.ID, 1))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Len(t, rep.Roots, 1)
	require.Equal(t, 3, trajs[0].NumTurns)
	require.Equal(t, 1.0, rep.Delivered)

	// Every sampled token, the reasoning included, has mask 1.
	var sampled, ones []int32
	for _, o := range r.eng.outs {
		sampled = append(sampled, o.TokenIDs...)
	}
	for i, m := range trajs[0].ResponseMask {
		if m == 1 {
			ones = append(ones, trajs[0].ResponseIDs[i])
		}
	}
	require.Equal(t, sampled, ones)

	// The last prompt holds the first turn's reasoning; the template's
	// own render of the same messages does not.
	last := r.eng.reqs[2].PromptIDs
	require.Contains(t, decode(tok, last), "The user greets me.")
	calls := calls(t, r, ro.ID)
	require.Len(t, calls, 3)
	rendered, err := tok.EncodeChat(tokenizer.ChatContext{Messages: calls[2].Messages, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.NotContains(t, decode(tok, rendered), "The user greets me.", "the test needs a template that drops earlier reasoning")
	require.NotEqual(t, rendered, last)
	// Each continuation is its parent's tokens and only the new user
	// turn, rendered as Qwen3's template renders it after an answer.
	for i, u := range users {
		require.Equal(t, calls[i].ID, calls[i+1].Parent)
		require.Empty(t, calls[i+1].Segment)
		require.Equal(t, "\n<|im_start|>user\n"+u+"<|im_end|>\n<|im_start|>assistant\n", decode(tok, calls[i+1].DeltaIDs))
	}
}

// subAgentRule scripts a main agent and two sub-agents by the system
// prompt and the number of tool results in the prompt; sub-agent A's
// first call waits for release, so it completes after all of B.
type subAgentRule struct {
	tok      *tokenizer.Tokenizer
	end      int32
	aStarted chan struct{}
	release  chan struct{}
}

func (s *subAgentRule) rule(c servertest.Call) servertest.Reply {
	text := decode(s.tok, c.Req.PromptIDs)
	results := strings.Count(text, "<tool_response>")
	var reply string
	switch {
	case strings.Contains(text, "You are sub-agent A."):
		if results == 0 {
			s.aStarted <- struct{}{}
			<-s.release
			reply = lsCall
		} else {
			reply = "A: docs has a.md."
		}
	case strings.Contains(text, "You are sub-agent B."):
		if results == 0 {
			reply = lsCall2
		} else {
			reply = "B: src has b.go."
		}
	default:
		if results == 0 {
			reply = lsCall
		} else {
			reply = "Both sub-agents are done."
		}
	}
	return servertest.Reply{Tokens: append(s.tok.Encode(reply), s.end)}
}

// Hard case 4: a main agent dispatches two sub-agents under the rollout's
// key; they run at once, and the first dispatched completes last. Each
// conversation is its own trajectory with its own calls, whatever order
// the calls were recorded in, and all share the rollout's group and
// reward.
func TestHardCase4ParallelSubAgentsCompleteOutOfOrder(t *testing.T) {
	tok := small(t)
	end, _ := tok.TokenID("<|im_end|>")
	sr := &subAgentRule{tok: tok, end: end, aStarted: make(chan struct{}, 1), release: make(chan struct{})}
	r := newRigWith(t, tok, sr.rule, nil)
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{Group: "g4"})
	require.NoError(t, err)
	m0 := turn(t, r, ro, list(sysMsg, taskMsg))

	sub := func(name string) (first, last string) {
		sys := `{"role":"system","content":"You are sub-agent ` + name + `."}`
		task := `{"role":"user","content":"Look around."}`
		a0 := turn(t, r, ro, list(sys, task))
		a1 := turn(t, r, ro, list(sys, task, a0, toolMsg(callID(t, a0), "x")))
		return a0, a1
	}
	var wg sync.WaitGroup
	var aLast string
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, aLast = sub("A")
	}()
	<-sr.aStarted // A's first call is dispatched, and waits
	_, bLast := sub("B")
	close(sr.release)
	wg.Wait()
	turn(t, r, ro, list(sysMsg, taskMsg, m0, toolMsg(callID(t, m0), "A and B reported")))
	require.Contains(t, aLast, "docs has a.md")
	require.Contains(t, bLast, "src has b.go")

	// Dispatch order: c0 main, c1 A, c2 B, c3 B, c4 A, c5 main; record
	// order differs (A's first answer after both of B's).
	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	var recorded []string
	parent := map[string]string{}
	for _, rec := range recs {
		if rec.Kind == capture.KindCall {
			recorded = append(recorded, rec.Call.ID)
			parent[rec.Call.ID] = rec.Call.Parent
		}
	}
	require.Equal(t, []string{"c0", "c2", "c3", "c1", "c4", "c5"}, recorded)
	require.Equal(t, map[string]string{"c0": "", "c1": "", "c2": "", "c3": "c2", "c4": "c1", "c5": "c0"}, parent)

	require.NoError(t, r.c.SetReward(ctx, ro.ID, 0.5))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 3, "%+v", rep)
	require.Empty(t, rep.Dropped)
	require.Empty(t, rep.Ambiguous)
	require.Equal(t, 1.0, rep.Delivered)
	var roots []string
	for _, d := range rep.Roots {
		roots = append(roots, d.Call)
	}
	require.ElementsMatch(t, []string{"c0", "c1", "c2"}, roots)
	chainsOf := map[string]*trajectory.Trajectory{}
	ids := map[string]bool{}
	for _, tr := range trajs {
		var extra struct {
			Calls []string `json:"calls"`
		}
		require.NoError(t, json.Unmarshal(tr.Extra["capture"], &extra))
		chainsOf[strings.Join(extra.Calls, ",")] = tr
		require.Equal(t, "g4", tr.GroupID)
		require.Equal(t, 0.5, *tr.Reward)
		require.Equal(t, 2, tr.NumTurns)
		ids[tr.ID] = true
	}
	require.Len(t, ids, 3, "each trajectory has its own id")
	require.ElementsMatch(t, []string{"c0,c5", "c1,c4", "c2,c3"}, keys(chainsOf))
	// Each chain's prompt ++ response is the engine's last sequence of
	// that conversation.
	for _, tr := range trajs {
		seq := append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...)
		found := 0
		for i := range r.eng.reqs {
			if equal(seq, append(append([]int32{}, r.eng.reqs[i].PromptIDs...), r.eng.outs[i].TokenIDs...)) {
				found++
			}
		}
		require.Equal(t, 1, found, "trajectory %s", tr.ID)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Hard case 9, and the engine-abort fault: the engine aborts a streamed
// call mid-way for a weight update (SGLang's pause with abort), and the
// harness retries it under the new weights. The partial answer of the
// old policy is never trained: the trajectory is the new policy's
// tokens only, and says so by its weight versions.
func TestHardCase9GenerationResumedAcrossAWeightUpdate(t *testing.T) {
	tok := small(t)
	end, _ := tok.TokenID("<|im_end|>")
	var once sync.Once
	rule := func(c servertest.Call) servertest.Reply {
		reply := servertest.Reply{Tokens: append(tok.Encode(lsCall), end)}
		if strings.Contains(decode(tok, c.Req.PromptIDs), "<tool_response>") {
			reply.Tokens = append(tok.Encode("Two files."), end)
		}
		aborted := false
		once.Do(func() { aborted = true })
		if aborted {
			// The first call is cut after 4 tokens.
			f := servertest.AbortFault(4)
			reply.Fault = &f
		}
		return reply
	}
	r := newRigWith(t, tok, rule, nil)
	eng := r.eng.eng
	require.NoError(t, eng.UpdateWeights(context.Background(), server.Weights{Version: 7}))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)

	stream := func(msgs string) (int, string) {
		body := `{"model":"agentrl","stream":true,"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}],"messages":` + msgs + `}`
		return do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions", body, "Authorization", "Bearer "+ro.Key)
	}
	_, body := stream(list(sysMsg, taskMsg))
	require.NotContains(t, body, `"finish_reason":"tool_calls"`, "an aborted stream must not end as an answer")
	require.NoError(t, eng.UpdateWeights(ctx, server.Weights{Version: 8}))
	a0 := turn(t, r, ro, list(sysMsg, taskMsg)) // the harness's retry
	turn(t, r, ro, list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt b.txt")))

	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
	require.Equal(t, int64(8), trajs[0].MinWeightVersion, "no token of the aborted old-policy call is trained")
	require.Equal(t, int64(8), trajs[0].MaxWeightVersion)
	require.Len(t, rep.Dropped, 1, "%+v", rep)
	require.Equal(t, "c0", rep.Dropped[0].Call)
	// The aborted call is recorded as it was answered — its partial
	// tokens, stop "abort", the old version — and kept out as the retried
	// call it is.
	require.Equal(t, "retry: same prompt as c1, which the harness continued", rep.Dropped[0].Reason)
	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	var c0 *capture.CallRecord
	for _, rec := range recs {
		if rec.Kind == capture.KindCall && rec.Call.ID == "c0" {
			c0 = rec.Call
		}
	}
	require.NotNil(t, c0)
	require.Equal(t, string(server.StopAbort), c0.StopReason)
	require.Equal(t, int64(7), c0.WeightVersion)
	require.Len(t, c0.SampledIDs, 4)
	require.Equal(t, 1.0, float64(rep.DeliveredTokens)/float64(trajs[0].MaskOnes()))
}

// Hard case 9: a harness that sends no sampling parameters gets the
// engine's defaults; the record says which parameters the engine was
// given, so a trainer knows what distribution the logprobs came from.
func TestHardCase9RecordsTheSamplingOfHarnessesThatOmitIt(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, "hello"))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	code, body := do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions", helloBody, "Authorization", "Bearer "+ro.Key)
	require.Equal(t, 200, code, body)
	code, body = do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions",
		`{"model":"agentrl","temperature":0.6,"top_p":0.95,"max_tokens":64,"messages":[{"role":"user","content":"again"}]}`, "Authorization", "Bearer "+ro.Key)
	require.Equal(t, 200, code, body)
	calls := calls(t, r, ro.ID)
	require.Len(t, calls, 2)
	require.Len(t, r.eng.reqs, 2)
	for i, c := range calls {
		require.NotNil(t, c.Sampling, "call %s", c.ID)
		want := r.eng.reqs[i].Params
		require.Equal(t, want.Temperature, c.Sampling.Temperature)
		require.Equal(t, want.TopP, c.Sampling.TopP)
		require.Equal(t, want.TopK, c.Sampling.TopK)
		require.Equal(t, want.MaxNewTokens, c.Sampling.MaxNewTokens)
		require.True(t, c.Sampling.Logprobs, "the record always asks for logprobs")
		require.Len(t, c.Logprobs, len(c.SampledIDs))
	}
	require.NotContains(t, string(calls[0].Request), "temperature")
	require.Equal(t, 0.6, calls[1].Sampling.Temperature)
	require.Equal(t, 0.95, calls[1].Sampling.TopP)
	require.Equal(t, 64, calls[1].Sampling.MaxNewTokens)
}

// Hard case 10: identity races. Ids and keys are never reused — a
// deleted rollout's key and URL reach nothing, and a restart continues
// the call ids where the log left them, so a new call never takes a lost
// one's id — and records after the freeze go nowhere: a call with the key
// of a finished rollout is refused and recorded nowhere, and a call in
// flight when the rollout is finished is withheld and reported.
func TestHardCase10ReusedIDsAndRecordsAfterFreeze(t *testing.T) {
	tok := small(t)
	end, _ := tok.TokenID("<|im_end|>")
	hold := make(chan struct{})
	started := make(chan struct{}, 1)
	rule := func(c servertest.Call) servertest.Reply {
		if strings.Contains(decode(tok, c.Req.PromptIDs), "hold") {
			started <- struct{}{}
			<-hold
		}
		return servertest.Reply{Tokens: append(tok.Encode(lsCall), end)}
	}
	r := newRigWith(t, tok, rule, nil)
	ctx := context.Background()
	post := func(ro capture.Rollout, content string) (int, string) {
		return do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions",
			`{"model":"agentrl","messages":[{"role":"user","content":"`+content+`"}]}`, "Authorization", "Bearer "+ro.Key)
	}

	// A restart keeps the call ids going: the lost call keeps c1.
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	code, _ := post(ro, "one")
	require.Equal(t, 200, code)
	require.NoError(t, r.store.Append(ctx, ro.ID, true, capture.Record{Kind: capture.KindBegin, Time: time.Now(), CallID: "c1"}))
	c2, err := capture.New(ctx, capture.Config{Engine: r.eng, Store: r.store, Chat: chatOf(tok), BaseURL: "http://" + r.model.Listener.Addr().String()})
	require.NoError(t, err)
	r.model.Config.Handler = c2.Handler()
	code, _ = post(ro, "two")
	require.Equal(t, 200, code)
	recs, err := c2.Records(ctx, ro.ID)
	require.NoError(t, err)
	require.Equal(t, "c2", recs[len(recs)-1].Call.ID)
	_, rep, err := c2.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.True(t, rep.Incomplete)
	require.Contains(t, rep.IncompleteReason, "[c1]")

	// A call in flight when the rollout is finished is withheld; the log
	// says so at once, so every Rebuild after Finish reads the same.
	done := make(chan int, 1)
	go func() {
		code, _ := post(ro, "hold on")
		done <- code
	}()
	<-started
	require.NoError(t, c2.Finish(ctx, ro.ID))
	_, rep1, err := c2.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	close(hold)
	require.Equal(t, 500, <-done)
	_, rep2, err := c2.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.Equal(t, rep1, rep2, "a Rebuild after Finish does not change when the withheld call ends")
	require.Contains(t, rep2.Dropped, capture.Dropped{Call: "c3", Reason: "aborted: the rollout was finished while the call was in flight"})

	// After the freeze, the key reaches nothing and nothing is recorded.
	before, err := c2.Records(ctx, ro.ID)
	require.NoError(t, err)
	code, body := post(ro, "late")
	require.Equal(t, 401, code, body)
	after, err := c2.Records(ctx, ro.ID)
	require.NoError(t, err)
	require.Equal(t, before, after)

	// A deleted rollout's id and key are dead: its URL refuses the key,
	// and the control API knows the id no more.
	ro2, err := c2.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, c2.Delete(ctx, ro2.ID))
	code, _ = post(ro2, "ghost")
	require.Equal(t, 401, code)
	_, _, err = c2.Rebuild(ctx, ro2.ID, capture.RebuildOptions{})
	require.ErrorIs(t, err, capture.ErrNotFound)
	ids, err := r.store.List(ctx)
	require.NoError(t, err)
	require.NotContains(t, ids, ro2.ID)
	require.NoError(t, c2.Shutdown(ctx))
}

// Fault: a duplicated delivery — the same request delivered twice at
// once (a proxy or client retrying a POST it thinks was lost). Both are
// served and recorded, the harness continues one of them, and the other
// is dropped as a retry, so no answer is trained twice.
func TestFaultDuplicatedDelivery(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, lsCall, "Two files."))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	answers := make([]string, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = turn(t, r, ro, list(sysMsg, taskMsg))
		}()
	}
	wg.Wait()
	turn(t, r, ro, list(sysMsg, taskMsg, answers[0], toolMsg(callID(t, answers[0]), "a.txt b.txt")))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
	require.Len(t, rep.Dropped, 1)
	require.Contains(t, rep.Dropped[0].Reason, "retry: same prompt as")
	require.Equal(t, rep.SampledTokens-len(r.eng.outs[0].TokenIDs), rep.DeliveredTokens)

	// Duplicated control requests are idempotent.
	for range 2 {
		require.NoError(t, r.c.SetReward(ctx, ro.ID, 1))
		require.NoError(t, r.c.Finish(ctx, ro.ID))
	}
	trajs, _ = rebuild(t, r, ro.ID)
	require.Equal(t, 1.0, *trajs[0].Reward)
}

// TestFaultKilledHarnessProcess is not a test: it is the harness that
// TestFaultKilledHarness runs and kills, a process that streams one call
// and waits for it forever.
func TestFaultKilledHarnessProcess(t *testing.T) {
	if os.Getenv("CAPTURE_TEST_KILLED_HARNESS") != "1" {
		t.Skip("the harness of TestFaultKilledHarness")
	}
	ctx := context.Background()
	c := openai.NewClient(option.WithBaseURL(os.Getenv("OPENAI_BASE_URL")+"/"), option.WithAPIKey(os.Getenv("OPENAI_API_KEY")), option.WithMaxRetries(0))
	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "agentrl",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("List the files.")}})
	for s.Next() {
	}
	t.Fatal("the stream ended; the harness should have been killed first")
}

// Fault: a harness process killed mid-call (its timeout passed) while
// its call streams. The call is aborted, not lost: the harness never saw
// an answer, so nothing of it is trained, and the report says why.
func TestFaultKilledHarness(t *testing.T) {
	tok := small(t)
	end, _ := tok.TokenID("<|im_end|>")
	started := make(chan struct{}, 1)
	rule := func(c servertest.Call) servertest.Reply {
		started <- struct{}{}
		f := servertest.HangFault()
		return servertest.Reply{Tokens: append(tok.Encode("never"), end), Fault: &f}
	}
	r := newRigWith(t, tok, rule, nil)
	ctx := context.Background()
	h := capture.Harness{Command: os.Args[0] + " -test.run=^TestFaultKilledHarnessProcess$", Env: []string{"CAPTURE_TEST_KILLED_HARNESS=1"},
		Dir: t.TempDir(), Timeout: time.Minute}
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	runCtx, kill := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- h.Run(runCtx, ro, "x") }()
	<-started // the call is in the engine
	kill()
	require.ErrorIs(t, <-errc, context.Canceled)
	// The proxy sees the connection go and aborts the call.
	require.Eventually(t, func() bool {
		recs, err := r.c.Records(ctx, ro.ID)
		require.NoError(t, err)
		return recs[len(recs)-1].Kind == capture.KindAbort
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, r.c.Finish(ctx, ro.ID))
	trajs, rep := rebuild(t, r, ro.ID)
	require.Empty(t, trajs)
	require.False(t, rep.Incomplete, "an aborted call is not a lost one: the harness never saw an answer")
	require.Len(t, rep.Dropped, 1)
	require.Equal(t, "c0", rep.Dropped[0].Call)
	require.True(t, strings.HasPrefix(rep.Dropped[0].Reason, "aborted: "), rep.Dropped[0].Reason)
	require.Equal(t, int64(1), r.c.Stats().CallsAborted)
}

// decode is ids as text, special tokens included ("" if they are not
// the tokenizer's, which fails the comparisons that use it).
func decode(tok *tokenizer.Tokenizer, ids []int32) string {
	s, _ := tok.Decode(ids, false)
	return s
}
