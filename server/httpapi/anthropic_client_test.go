package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// These tests drive /v1/messages with the official Anthropic Go client
// (github.com/anthropics/anthropic-sdk-go/v2): the requests are what the
// SDK sends, and the replies and events must decode as the SDK reads
// them.

func anthropicClient(s *httpapi.Server, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(s.URL() + "/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(testClient), option.WithMaxRetries(0)}, opts...)...)
}

// weatherAnthropicTool is weatherTool as an Anthropic client tool: its
// input_schema encodes with the keys in the order weatherAnsweredPrompt
// renders (properties, required, type).
var weatherAnthropicTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("Weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
}}

func weatherMessageParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "qwen3",
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools:     []anthropic.ToolUnionParam{weatherAnthropicTool},
	}
}

// toolUses are the tool_use blocks of m.
func toolUses(m *anthropic.Message) []anthropic.ContentBlockUnion {
	var out []anthropic.ContentBlockUnion
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			out = append(out, b)
		}
	}
	return out
}

func TestMessagesClientToolCallRoundTrip(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	c := anthropicClient(s)
	ctx := context.Background()

	params := weatherMessageParams()
	var hr *http.Response
	msg, err := c.Messages.New(ctx, params, option.WithResponseInto(&hr))
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.Equal(t, "qwen3", string(msg.Model))
	require.Regexp(t, `^msg_`, msg.ID)
	require.NotEmpty(t, hr.Header.Get("request-id"))
	uses := toolUses(msg)
	require.Len(t, uses, 1, msg.RawJSON())
	require.Equal(t, "get_weather", uses[0].Name)
	require.JSONEq(t, `{"city":"Paris"}`, string(uses[0].Input))
	require.Regexp(t, `^toolu_`, uses[0].ID)
	require.Equal(t, int64(len(cp.last().PromptIDs)), msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens)
	require.Positive(t, msg.Usage.OutputTokens)

	// The second turn as a harness sends it: the assistant turn echoed
	// back, then the tool's result in a user turn.
	params.Messages = append(params.Messages, msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(uses[0].ID, `{"temp": 21}`, false)))
	_, err = c.Messages.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, weatherAnsweredPrompt(t, tok, uses[0].ID, string(uses[0].Input)), cp.last().PromptIDs)

	// count_tokens counts the prompt that turn sent the engine.
	n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: params.Model, Messages: params.Messages,
		Tools: []anthropic.MessageCountTokensToolUnionParam{{OfTool: weatherAnthropicTool.OfTool}}})
	require.NoError(t, err)
	require.Equal(t, int64(len(cp.last().PromptIDs)), n.InputTokens)
}

func TestMessagesClientStreamingToolCall(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, "<think>\nhmm\n</think>\n\nLet me check.\n"+toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}})
	c := anthropicClient(s)
	ctx := context.Background()

	whole, err := c.Messages.New(ctx, weatherMessageParams())
	require.NoError(t, err)
	wholeIDs := cp.last().PromptIDs

	stream := c.Messages.NewStreaming(ctx, weatherMessageParams())
	var (
		acc         anthropic.Message
		types       []string
		text, think string
		args        string
	)
	open := -1
	for stream.Next() {
		ev := stream.Current()
		require.NoError(t, acc.Accumulate(ev))
		types = append(types, ev.Type)
		switch ev.Type {
		case "content_block_start":
			require.Equal(t, -1, open, "a block starts only after the previous one stopped")
			open = int(ev.Index)
		case "content_block_stop":
			require.Equal(t, open, int(ev.Index))
			open = -1
		case "content_block_delta":
			require.Equal(t, open, int(ev.Index))
			switch ev.Delta.Type {
			case "text_delta":
				text += ev.Delta.Text
			case "thinking_delta":
				think += ev.Delta.Thinking
			case "input_json_delta":
				args += ev.Delta.PartialJSON
			}
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Equal(t, -1, open, "every block is closed")
	require.Equal(t, []string{"message_start"}, types[:1])
	require.Equal(t, []string{"message_delta", "message_stop"}, types[len(types)-2:])
	require.Equal(t, "hmm", think)
	require.Equal(t, "Let me check.", text)
	require.JSONEq(t, `{"city":"Paris"}`, args)
	require.Equal(t, wholeIDs, cp.last().PromptIDs)
	require.JSONEq(t, normalizedMessage(t, whole.RawJSON()), normalizedMessage(t, acc.RawJSON()))
	require.Equal(t, []string{"thinking", "text", "tool_use"}, blockTypes(&acc))
}

func blockTypes(m *anthropic.Message) []string {
	var out []string
	for _, b := range m.Content {
		out = append(out, b.Type)
	}
	return out
}

// normalizedMessage is a Messages reply with its ids pinned and tool
// inputs re-encoded (a stream sends the input as the model wrote it).
func normalizedMessage(t *testing.T, raw string) string {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	v["id"] = "msg"
	for _, b := range v["content"].([]any) {
		block := b.(map[string]any)
		if _, ok := block["id"]; ok {
			block["id"] = "toolu"
		}
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestMessagesPromptIDsEqualChat sends one conversation through
// /v1/messages and /v1/chat/completions: the engine must see the same
// prompt ids, so a trajectory is the same whichever dialect its harness
// speaks.
func TestMessagesPromptIDsEqualChat(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, "ok")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}})
	tools := `"tools":[{"name":"get_weather","description":"Weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	chatTools := `"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	for name, tc := range map[string]struct{ messages, chat string }{
		"system string": {
			`{"model":"qwen3","max_tokens":5,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}]}`,
			`{"model":"qwen3","max_tokens":5,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`},
		"system blocks, text blocks, cache_control": {
			`{"model":"qwen3","max_tokens":5,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Be kind.","cache_control":{"type":"ephemeral"}}],
			  "messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]}]}`,
			`{"model":"qwen3","max_tokens":5,"messages":[{"role":"system","content":"Be brief.\nBe kind."},{"role":"user","content":"Hi\nthere"}]}`},
		"role system entry": {
			`{"model":"qwen3","max_tokens":5,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
			`{"model":"qwen3","max_tokens":5,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`},
		"tool round trip with thinking": {
			`{"model":"qwen3","max_tokens":5,` + tools + `,"messages":[{"role":"user","content":"Weather in Paris?"},
			  {"role":"assistant","content":[{"type":"thinking","thinking":"need it","signature":""},{"type":"text","text":"Checking."},
			    {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Lyon"}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"21"},
			    {"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"no data"}]},{"type":"text","text":"And?"}]}]}`,
			`{"model":"qwen3","max_tokens":5,` + chatTools + `,"messages":[{"role":"user","content":"Weather in Paris?"},
			  {"role":"assistant","reasoning_content":"need it","content":"Checking.","tool_calls":[
			    {"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			    {"id":"toolu_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lyon\"}"}}]},
			  {"role":"tool","tool_call_id":"toolu_1","content":"21"},{"role":"tool","tool_call_id":"toolu_2","content":"no data"},
			  {"role":"user","content":"And?"}]}`},
		"thinking disabled": {
			`{"model":"qwen3","max_tokens":5,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"Hi"}]}`,
			`{"model":"qwen3","max_tokens":5,"chat_template_kwargs":{"enable_thinking":false},"messages":[{"role":"user","content":"Hi"}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			code, body := post(t, s.URL()+"/v1/messages", tc.messages)
			require.Equal(t, 200, code, body)
			viaMessages := cp.last()
			code, body = post(t, s.URL()+"/v1/chat/completions", tc.chat)
			require.Equal(t, 200, code, body)
			require.Equal(t, cp.last().PromptIDs, viaMessages.PromptIDs)
			require.Equal(t, cp.last().Params, viaMessages.Params)
		})
	}
}

func TestMessagesClientStops(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "Hello there. STOP and more words")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := anthropicClient(s)
	ctx := context.Background()
	p := anthropic.MessageNewParams{Model: "qwen3", MaxTokens: 50, StopSequences: []string{"STOP"},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
	msg, err := c.Messages.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonStopSequence, msg.StopReason)
	require.Equal(t, "STOP", msg.StopSequence)
	require.Equal(t, "Hello there. ", msg.Content[0].Text)

	stream := c.Messages.NewStreaming(ctx, p)
	var acc anthropic.Message
	for stream.Next() {
		require.NoError(t, acc.Accumulate(stream.Current()))
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.JSONEq(t, normalizedMessage(t, msg.RawJSON()), normalizedMessage(t, acc.RawJSON()))

	p.StopSequences, p.MaxTokens = nil, 2
	msg, err = c.Messages.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonMaxTokens, msg.StopReason)
	require.Equal(t, int64(2), msg.Usage.OutputTokens)

	// A turn with nothing to say is one empty text block.
	eng2, _, _ := replyWith(t, tok, "")
	s2 := start(t, eng2, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c2 := anthropicClient(s2)
	msg, err = c2.Messages.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
	require.JSONEq(t, `[{"type":"text","text":""}]`, msg.JSON.Content.Raw())
}

func TestMessagesClientErrors(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "hi")
	s := start(t, eng, httpapi.Config{Model: "qwen3", AuthToken: "secret", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	ctx := context.Background()

	// x-api-key is the SDK's header; the bearer token works too.
	keyed := anthropicClient(s, option.WithAPIKey("secret"))
	_, err := keyed.Messages.New(ctx, weatherMessageParams())
	require.NoError(t, err)
	bearer := anthropicClient(s, option.WithHeaderDel("x-api-key"), option.WithHeader("Authorization", "Bearer secret"))
	_, err = bearer.Messages.New(ctx, weatherMessageParams())
	require.NoError(t, err)

	c := anthropicClient(s, option.WithAPIKey("secret"))
	for name, tc := range map[string]struct {
		client anthropic.Client
		edit   func(*anthropic.MessageNewParams)
		status int
		typ    string
		msg    string
	}{
		"wrong key": {anthropicClient(s, option.WithAPIKey("wrong")), func(*anthropic.MessageNewParams) {}, 401, "authentication_error", "API token"},
		"model":     {c, func(p *anthropic.MessageNewParams) { p.Model = "claude-x" }, 404, "not_found_error", "claude-x"},
		"server tool": {c, func(p *anthropic.MessageNewParams) {
			p.Tools = []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{}}}
		}, 400, "invalid_request_error", `"tools[0].type"`},
		"tool_choice": {c, func(p *anthropic.MessageNewParams) { p.ToolChoice = anthropic.ToolChoiceParamOfTool("get_time") }, 400, "invalid_request_error", `"get_time"`},
		"image": {c, func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", "AAAA"))}
		}, 400, "invalid_request_error", `"messages[0].content[0].type"`},
		"prefill": {c, func(p *anthropic.MessageNewParams) {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock("The answer is")))
		}, 400, "invalid_request_error", `"messages[1].role"`},
	} {
		t.Run(name, func(t *testing.T) {
			p := weatherMessageParams()
			tc.edit(&p)
			_, err := tc.client.Messages.New(ctx, p)
			var e *anthropic.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.status, e.StatusCode, e.RawJSON())
			require.Equal(t, tc.typ, string(e.Type()), e.RawJSON())
			require.Contains(t, e.Message, tc.msg)
		})
	}
}

// TestMessagesErrorShape checks the errors no SDK produces: a missing
// max_tokens, bad JSON, a body past the limit, and refusals from before
// the handler (the in-flight cap), all in Anthropic's shape.
func TestMessagesErrorShape(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "hi")
	s := start(t, eng, httpapi.Config{Model: "qwen3", MaxBodyBytes: 4096, Chat: &httpapi.Chat{Tokenizer: tok}})
	for name, tc := range map[string]struct {
		path, body string
		status     int
		msg        string
	}{
		"no max_tokens": {"/v1/messages", `{"model":"qwen3","messages":[{"role":"user","content":"hi"}]}`, 400, `field "max_tokens": required`},
		"bad json":      {"/v1/messages", `{"model":`, 400, "invalid JSON"},
		"wrong type":    {"/v1/messages", `{"model":"qwen3","max_tokens":"x","messages":[]}`, 400, `field "max_tokens"`},
		"too large":     {"/v1/messages", `{"model":"qwen3","max_tokens":5,"system":"` + strings.Repeat("a", 5000) + `","messages":[{"role":"user","content":"hi"}]}`, 413, "limit"},
		"budget":        {"/v1/messages", `{"model":"qwen3","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, `"max_tokens"`},
		"count_tokens":  {"/v1/messages/count_tokens", `{"model":"qwen3","messages":[{"role":"tool","content":"x"}]}`, 400, `field "messages[0].role"`},
	} {
		t.Run(name, func(t *testing.T) {
			code, body := post(t, s.URL()+tc.path, tc.body)
			require.Equal(t, tc.status, code, body)
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.Equal(t, "error", e.Type)
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.Contains(t, e.Error.Message, tc.msg)
		})
	}
}

// failingStreamer streams ids as one chunk, then fails.
type failingStreamer struct {
	server.LLMServer
	ids []int32
}

func (f failingStreamer) GenerateStream(_ context.Context, _ server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	if err := emit(server.Chunk{TokenIDs: f.ids}); err != nil {
		return server.TokenOutput{}, err
	}
	return server.TokenOutput{}, &server.Error{Server: "engine", Op: "generate", Err: errors.New("injected failure")}
}

// TestMessagesStreamError: an engine that fails mid-stream ends the
// stream with an error event, which the SDK reports as an API error.
func TestMessagesStreamError(t *testing.T) {
	tok := qwen(t)
	eng := failingStreamer{LLMServer: servertest.New(servertest.Config{}), ids: tok.Encode("Hello there")}
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := anthropicClient(s)
	stream := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "qwen3", MaxTokens: 50,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}})
	defer stream.Close()
	var text string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" {
			text += ev.Delta.Text
		}
	}
	require.Equal(t, "Hello there", text, "the stream started before the failure")
	var e *anthropic.Error
	require.ErrorAs(t, stream.Err(), &e, "%v", stream.Err())
	require.Equal(t, "api_error", string(e.Type()))
	require.Contains(t, e.Message, "injected failure")
}

// TestMessagesBudgetPastContext: a max_tokens the context has no room for
// (harnesses send their own configured budget) is a 400 naming it, or,
// with ClampMaxTokens, what the context has left, as on every dialect.
func TestMessagesBudgetPastContext(t *testing.T) {
	tok := qwen(t)
	body := `{"model":"qwen3","max_tokens":32000,"messages":[{"role":"user","content":"hi"}]}`
	for _, clamp := range []bool{false, true} {
		eng, cp, _ := replyWith(t, tok, "ok")
		s := start(t, eng, httpapi.Config{Model: "qwen3", MaxModelLen: 256, ClampMaxTokens: clamp, Chat: &httpapi.Chat{Tokenizer: tok}})
		code, resp := post(t, s.URL()+"/v1/messages", body)
		if !clamp {
			require.Equal(t, 400, code, resp)
			require.Contains(t, resp, `"type":"invalid_request_error"`)
			require.Contains(t, resp, `field \"max_tokens\": 32000 is too large`)
			continue
		}
		require.Equal(t, 200, code, resp)
		got := cp.last()
		require.Equal(t, 256-len(got.PromptIDs), got.Params.MaxNewTokens)
	}
}

// TestMessagesSessionKey: Claude Code's x-claude-code-session-id header
// and metadata.user_id become the engine request id (the router's sticky
// key), while each reply keeps an id of its own.
func TestMessagesSessionKey(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, "ok")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := anthropicClient(s)
	ctx := context.Background()
	p := anthropic.MessageNewParams{Model: "qwen3", MaxTokens: 5, Metadata: anthropic.MetadataParam{UserID: anthropic.String("user-1")},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
	a, err := c.Messages.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "user-1", cp.last().RequestID)
	b, err := c.Messages.New(ctx, p)
	require.NoError(t, err)
	require.NotEqual(t, a.ID, b.ID)
	_, err = c.Messages.New(ctx, p, option.WithHeader("x-claude-code-session-id", "sess-9"))
	require.NoError(t, err)
	require.Equal(t, "sess-9", cp.last().RequestID, "the header comes before the body field")
}

// nextNamed reads the next named event (event: + data:).
func (s *sseReader) nextNamed() (string, string) {
	s.t.Helper()
	for {
		if i := strings.Index(string(s.buf), "\n\n"); i >= 0 {
			ev := string(s.buf[:i])
			s.buf = s.buf[i+2:]
			name, data, ok := strings.Cut(ev, "\ndata: ")
			require.True(s.t, ok && strings.HasPrefix(name, "event: "), ev)
			return strings.TrimPrefix(name, "event: "), data
		}
		b := make([]byte, 4096)
		n, err := s.r.Read(b)
		s.buf = append(s.buf, b[:n]...)
		if err != nil && n == 0 {
			require.NoError(s.t, err, "stream ended before an event")
		}
	}
}

// Each token's text leaves as its own text_delta while the engine waits
// for the test to have read it: nothing is held back.
func TestMessagesStreamIsIncremental(t *testing.T) {
	g, ids, rd := streamOf(t, "one two three", "/v1/messages",
		`{"model":"agentrl","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	want := pieces(t, ids)
	for i := range ids {
		for {
			name, data := rd.nextNamed()
			if name != "content_block_delta" {
				continue
			}
			var ev struct {
				Delta struct{ Text string } `json:"delta"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &ev))
			require.Equal(t, want[i], ev.Delta.Text, "token %d", i)
			break
		}
		if i+1 < len(ids) {
			g.seen <- struct{}{}
		}
	}
	var names []string
	for len(names) == 0 || names[len(names)-1] != "message_stop" {
		name, _ := rd.nextNamed()
		names = append(names, name)
	}
	require.Equal(t, []string{"content_block_stop", "message_delta", "message_stop"}, names)
}

// Two calls in one turn (Claude Code runs tools in parallel): two
// tool_use blocks, streamed as the non-streamed reply has them.
func TestMessagesClientStreamingTwoCalls(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "Checking both.\n"+toolCallReply+"\n"+strings.ReplaceAll(toolCallReply, "Paris", "Lyon")+"\n")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	c := anthropicClient(s)
	whole, err := c.Messages.New(context.Background(), weatherMessageParams())
	require.NoError(t, err)
	require.Equal(t, []string{"text", "tool_use", "tool_use"}, blockTypes(whole))
	require.JSONEq(t, `{"city":"Lyon"}`, string(whole.Content[2].Input))
	stream := c.Messages.NewStreaming(context.Background(), weatherMessageParams())
	var acc anthropic.Message
	for stream.Next() {
		require.NoError(t, acc.Accumulate(stream.Current()))
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.JSONEq(t, normalizedMessage(t, whole.RawJSON()), normalizedMessage(t, acc.RawJSON()))
}
