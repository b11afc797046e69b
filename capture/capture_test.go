package capture_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/trajectory"
)

var (
	qwenOnce sync.Once
	qwenTok  *tokenizer.Tokenizer
	qwenErr  error
)

// qwen is the Qwen3 tokenizer (its template drops earlier reasoning and
// re-renders tool arguments: the hard cases): the copy shared next to the
// repository, or else the one committed (gzipped) in tokenizer/testdata,
// so the hard cases never skip.
func qwen(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	qwenOnce.Do(func() {
		dir := filepath.Join("..", "..", "shared", "testdata", "tokenizers", "qwen3")
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
			qwenTok, qwenErr = tokenizer.Load(dir)
			return
		}
		qwenTok, qwenErr = tokenizertest.Qwen3("")
	})
	require.NoError(t, qwenErr)
	return qwenTok
}

// small is the repository's own small tokenizer (a Qwen-style template
// with hermes tool calls), for tests about routing and storage.
func small(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join("..", "internal", "arith", "checkpoint"))
	require.NoError(t, err)
	return tok
}

// script is an engine rule that replies with its texts in order, each
// followed by <|im_end|>, and keeps what the engine was asked and what
// it answered.
type script struct {
	mu      sync.Mutex
	replies [][]int32
	next    int
}

func newScript(t *testing.T, tok *tokenizer.Tokenizer, texts ...string) *script {
	end, ok := tok.TokenID("<|im_end|>")
	require.True(t, ok)
	s := &script{}
	for _, text := range texts {
		s.replies = append(s.replies, append(tok.Encode(text), end))
	}
	return s
}

func (s *script) Rule(servertest.Call) servertest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replies[s.next%len(s.replies)]
	s.next++
	return servertest.Reply{Tokens: r}
}

// tap is the engine between httpapi and the scripted engine: it keeps
// every request and output, streamed or not.
type tap struct {
	eng  *servertest.Server
	mu   sync.Mutex
	reqs []server.GenerateRequest
	outs []server.TokenOutput
}

func (t *tap) keep(req server.GenerateRequest, out server.TokenOutput, err error) (server.TokenOutput, error) {
	if err == nil {
		t.mu.Lock()
		t.reqs, t.outs = append(t.reqs, req), append(t.outs, out)
		t.mu.Unlock()
	}
	return out, err
}

func (t *tap) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	out, err := t.eng.Generate(ctx, req)
	return t.keep(req, out, err)
}

func (t *tap) GenerateStream(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	out, err := t.eng.GenerateStream(ctx, req, emit)
	return t.keep(req, out, err)
}

// rig is a Capture serving a scripted engine over HTTP.
type rig struct {
	c       *capture.Capture
	model   *httptest.Server
	control *httptest.Server
	store   *capture.DirStore
	dir     string
	eng     *tap
	tok     *tokenizer.Tokenizer
}

const controlToken = "control-token-for-tests"

func newRig(t *testing.T, tok *tokenizer.Tokenizer, sc *script) *rig {
	t.Helper()
	return newRigWith(t, tok, sc.Rule, nil)
}

// newRigWith is newRig with any engine rule and a change to the Config.
func newRigWith(t *testing.T, tok *tokenizer.Tokenizer, rule servertest.Rule, change func(*capture.Config)) *rig {
	t.Helper()
	dir := t.TempDir()
	store, err := capture.OpenDir(dir)
	require.NoError(t, err)
	eng := &tap{eng: servertest.New(servertest.Config{Rule: rule})}
	r := &rig{store: store, dir: dir, eng: eng, tok: tok}
	r.model = httptest.NewUnstartedServer(nil)
	cfg := capture.Config{Engine: eng, Store: store,
		Chat:    &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true},
		BaseURL: "http://" + r.model.Listener.Addr().String()}
	if change != nil {
		change(&cfg)
	}
	c, err := capture.New(context.Background(), cfg)
	require.NoError(t, err)
	r.c = c
	r.model.Config.Handler = c.Handler()
	r.model.Start()
	r.control = httptest.NewServer(c.ControlHandler(controlToken))
	t.Cleanup(func() {
		r.model.Close()
		r.control.Close()
		require.NoError(t, c.Shutdown(context.Background()))
		require.NoError(t, store.Close())
	})
	return r
}

func (r *rig) client(baseURL, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(baseURL+"/"), option.WithAPIKey(key),
		option.WithHTTPClient(r.model.Client()), option.WithMaxRetries(0))
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Weather in a city"),
	Parameters: openai.FunctionParameters{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
})

// The replies of a three-call tool conversation: reasoning and a call,
// reasoning and another call, reasoning and the answer. Qwen3's template
// drops the reasoning of earlier turns, so a re-rendered history is not
// what the model sampled (hard cases 1 and 2).
var weatherReplies = []string{
	"<think>\nI need Paris first.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
	"<think>\nNow Rome.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":   \"Rome\"}}\n</tool_call>",
	"<think>\nBoth known.\n</think>\n\nParis 21°C, Rome 24°C.",
}

// runWeather drives the conversation as a harness does with the official
// SDK: each call re-sends the whole conversation, the assistant turns as
// the SDK echoes them (ToParam: no reasoning, arguments as the server
// wrote them).
func runWeather(t *testing.T, c openai.Client, stream bool) {
	t.Helper()
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "agentrl",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage("Weather in Paris and Rome?")},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
	}
	temps := map[string]string{"Paris": `{"temp": 21}`, "Rome": `{"temp": 24}`}
	for turn := 0; turn < 3; turn++ {
		var msg openai.ChatCompletionMessage
		if stream {
			s := c.Chat.Completions.NewStreaming(ctx, params)
			acc := openai.ChatCompletionAccumulator{}
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			require.NoError(t, s.Err())
			require.Len(t, acc.Choices, 1)
			msg = acc.Choices[0].Message
		} else {
			resp, err := c.Chat.Completions.New(ctx, params)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			msg = resp.Choices[0].Message
		}
		if turn == 2 {
			require.Equal(t, "Paris 21°C, Rome 24°C.", msg.Content)
			return
		}
		require.Len(t, msg.ToolCalls, 1, "turn %d", turn)
		params.Messages = append(params.Messages, msg.ToParam())
		call := msg.ToolCalls[0]
		city := map[bool]string{true: "Paris", false: "Rome"}[turn == 0]
		require.Contains(t, call.Function.Arguments, city)
		params.Messages = append(params.Messages, openai.ToolMessage(temps[city], call.ID))
	}
}

func TestOpenAIClientToolConversationIsOneExactTrajectory(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[stream], func(t *testing.T) {
			tok := qwen(t)
			r := newRig(t, tok, newScript(t, tok, weatherReplies...))
			ctx := context.Background()
			ro, err := r.c.Create(ctx, capture.CreateOptions{Group: "sample-1"})
			require.NoError(t, err)
			runWeather(t, r.client(ro.OpenAIBaseURL, ro.Key), stream)
			require.NoError(t, r.c.SetReward(ctx, ro.ID, 1))
			require.NoError(t, r.c.Finish(ctx, ro.ID))

			trajs, rep, err := r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
			require.NoError(t, err)
			require.Equal(t, 1, len(trajs), "%+v", rep)
			tr := trajs[0]
			require.NoError(t, tr.Validate())

			// Mask 1 exactly on the engine's sampled tokens, with their
			// logprobs.
			require.Len(t, r.eng.outs, 3)
			var sampled []int32
			var lps []float32
			for _, o := range r.eng.outs {
				sampled, lps = append(sampled, o.TokenIDs...), append(lps, o.Logprobs...)
			}
			var ones []int32
			var onesLp []float32
			for i, m := range tr.ResponseMask {
				if m == 1 {
					ones, onesLp = append(ones, tr.ResponseIDs[i]), append(onesLp, tr.Logprobs[i])
				}
			}
			require.Equal(t, sampled, ones)
			require.Equal(t, lps, onesLp)

			// Prompt plus response is the chain's last sequence.
			last := len(r.eng.reqs) - 1
			seq := append(append([]int32{}, r.eng.reqs[last].PromptIDs...), r.eng.outs[last].TokenIDs...)
			require.Equal(t, seq, append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...))
			require.Equal(t, r.eng.reqs[0].PromptIDs, tr.PromptIDs)

			// Each later prompt is the earlier prompt and sampled tokens
			// followed by a delta; a re-rendered history would differ
			// (Qwen3 drops the earlier <think> blocks).
			for i := 1; i < 3; i++ {
				prev := append(append([]int32{}, r.eng.reqs[i-1].PromptIDs...), r.eng.outs[i-1].TokenIDs...)
				require.Equal(t, prev, r.eng.reqs[i].PromptIDs[:len(prev)], "call %d", i)
			}
			recs, err := r.c.Records(ctx, ro.ID)
			require.NoError(t, err)
			var lastCall *capture.CallRecord
			for _, rec := range recs {
				if rec.Kind == capture.KindCall {
					lastCall = rec.Call
				}
			}
			rendered, err := tok.EncodeChat(tokenizer.ChatContext{Messages: lastCall.Messages, Tools: lastCall.Tools, AddGenerationPrompt: true})
			require.NoError(t, err)
			require.NotEqual(t, rendered, r.eng.reqs[2].PromptIDs, "the test must exercise a template that is not append-only")
			require.Equal(t, "chat", lastCall.Dialect)
			require.Contains(t, string(lastCall.Request), `"Weather in Paris and Rome?"`)
			require.Equal(t, string(server.StopEOS), lastCall.StopReason)

			require.Equal(t, 3, tr.NumTurns)
			require.Equal(t, "sample-1", tr.GroupID)
			require.Equal(t, ro.ID+"-0", tr.ID)
			require.NotNil(t, tr.Reward)
			require.Equal(t, 1.0, *tr.Reward)
			require.Equal(t, trajectory.StopCompleted, tr.StopReason)
			require.Equal(t, 3, rep.Calls)
			require.Equal(t, 1, rep.Trajectories)
			require.Equal(t, 1.0, rep.Delivered)
			require.Len(t, rep.Roots, 1)
			require.Equal(t, "first call of the rollout", rep.Roots[0].Reason)
			require.Empty(t, rep.Dropped)
		})
	}
}

func chatOf(tok *tokenizer.Tokenizer) *httpapi.Chat {
	return &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}
}
