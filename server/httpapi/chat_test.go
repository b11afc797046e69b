package httpapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// sharedTokenizer is a tokenizer shared next to the repository, loaded
// once by the first test that needs it; a test skips where it is absent.
type sharedTokenizer struct {
	name    string // the directory under ../shared/testdata/tokenizers
	missing string // why a test skips without it
	once    sync.Once
	tok     *tokenizer.Tokenizer
	err     error
}

func (s *sharedTokenizer) load(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "tokenizers", s.name)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		// CI always has ../shared: there its absence is a broken setup.
		if os.Getenv("CI") != "" {
			t.Fatal("CI=1: " + s.missing)
		}
		t.Skip(s.missing)
	}
	s.once.Do(func() { s.tok, s.err = tokenizer.Load(dir) })
	require.NoError(t, s.err)
	return s.tok
}

var qwenTokenizer = &sharedTokenizer{name: "qwen3", missing: "Qwen3 tokenizer not present in ../shared/testdata/tokenizers/qwen3"}

func qwen(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	return qwenTokenizer.load(t)
}

const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`

type chatResp struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent string  `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float32 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
		TokenIDs     []int32 `json:"token_ids"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
}

// replyWith makes an engine whose model "writes" text followed by <|im_end|>.
func replyWith(t *testing.T, tok *tokenizer.Tokenizer, text string) (*servertest.Server, *capture, []int32) {
	end, ok := tok.TokenID("<|im_end|>")
	require.True(t, ok)
	ids := append(tok.Encode(text), end)
	cp := &capture{rule: servertest.Constant(ids...)}
	return servertest.New(servertest.Config{Rule: cp.Rule}), cp, ids
}

func TestChatCompletionsToolCall(t *testing.T) {
	tok := qwen(t)
	text := "<think>\nI need the weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	eng, cp, ids := replyWith(t, tok, text)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}})

	body := `{"model":"qwen3","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + weatherTools +
		`,"temperature":0.6,"max_tokens":100,"logprobs":true,"return_token_ids":true,"request_id":"chat-1"}`
	code, resp := post(t, s.URL()+"/v1/chat/completions", body)
	require.Equal(t, 200, code, resp)

	// The engine got exactly the rendered chat template, stopping at end of turn.
	var tools []chat.ToolSchema
	require.NoError(t, json.Unmarshal([]byte(weatherTools), &tools))
	want, err := tok.EncodeChat(tokenizer.ChatContext{
		Messages: []chat.Message{{Role: "user", Content: "Weather in Paris?"}}, Tools: tools, AddGenerationPrompt: true})
	require.NoError(t, err)
	got := cp.last()
	require.Equal(t, want, got.PromptIDs)
	require.Equal(t, "chat-1", got.RequestID)
	require.Equal(t, 100, got.Params.MaxNewTokens)
	require.Equal(t, 0.6, got.Params.Temperature)
	require.True(t, got.Params.Logprobs)
	for _, e := range tok.EOSTokenIDs() {
		require.Contains(t, got.Params.StopTokenIDs, e)
	}

	var r chatResp
	require.NoError(t, json.Unmarshal([]byte(resp), &r))
	require.Equal(t, "chatcmpl-chat-1", r.ID)
	require.Equal(t, "chat.completion", r.Object)
	c := r.Choices[0]
	require.Equal(t, "tool_calls", c.FinishReason)
	require.Equal(t, "assistant", c.Message.Role)
	require.Equal(t, "I need the weather.", c.Message.ReasoningContent)
	require.NotNil(t, c.Message.Content)
	require.Equal(t, "Let me check.", *c.Message.Content)
	require.Len(t, c.Message.ToolCalls, 1)
	call := c.Message.ToolCalls[0]
	require.Equal(t, "function", call.Type)
	require.True(t, strings.HasPrefix(call.ID, "call_"))
	require.Equal(t, "get_weather", call.Function.Name)
	require.Equal(t, `{"city": "Paris"}`, call.Function.Arguments)
	require.Equal(t, ids, c.TokenIDs)
	require.Equal(t, want, r.PromptTokenIDs)
	require.Len(t, c.Logprobs.Content, len(ids))
	require.Equal(t, "<|im_end|>", c.Logprobs.Content[len(ids)-1].Token)
	require.Equal(t, servertest.DefaultLogprob(ids[0], 0), c.Logprobs.Content[0].Logprob)
	require.Equal(t, len(want), r.Usage.PromptTokens)
	require.Equal(t, len(ids), r.Usage.CompletionTokens)
}

func TestChatCompletionsStream(t *testing.T) {
	tok := qwen(t)
	text := "<think>\nhmm\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>"
	eng, _, _ := replyWith(t, tok, text)
	s := start(t, eng, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}})
	resp, err := testClient.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"messages":[{"role":"user","content":"Two cities"}],"tools":`+weatherTools+`,"stream":true,"stream_options":{"include_usage":true}}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	events := readSSE(t, resp.Body)
	require.Equal(t, "[DONE]", events[len(events)-1])
	var role, reasoning, content, finish string
	var names, args []string
	usageSeen := false
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role             string  `json:"role"`
					Content          *string `json:"content"`
					ReasoningContent string  `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int `json:"index"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev), &chunk), ev)
		require.Equal(t, "chat.completion.chunk", chunk.Object)
		if chunk.Usage != nil {
			usageSeen = true
			require.Empty(t, chunk.Choices)
			continue
		}
		d := chunk.Choices[0].Delta
		role += d.Role
		reasoning += d.ReasoningContent
		if d.Content != nil {
			content += *d.Content
		}
		for _, tc := range d.ToolCalls {
			require.Equal(t, len(names), tc.Index)
			names = append(names, tc.Function.Name)
			args = append(args, tc.Function.Arguments)
		}
		if f := chunk.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	require.Equal(t, "assistant", role)
	require.Equal(t, "hmm", reasoning)
	require.Equal(t, "", content)
	require.Equal(t, []string{"get_weather", "get_weather"}, names)
	require.Equal(t, []string{`{"city": "Oslo"}`, `{"city": "Rome"}`}, args)
	require.Equal(t, "tool_calls", finish)
	require.True(t, usageSeen)
}

func TestChatCompletionsPlainAndMalformed(t *testing.T) {
	tok := qwen(t)
	tests := []struct {
		name, text, extra string
		chat              httpapi.Chat
		content           string
		finish            string
	}{
		{"no parser", "<think>\nx\n</think>\n\nHello!", "", httpapi.Chat{}, "<think>\nx\n</think>\n\nHello!", "stop"},
		{"reasoning only", "<think>\nx\n</think>\n\nHello!", "", httpapi.Chat{Reasoning: true}, "Hello!", "stop"},
		{"malformed call", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>", "",
			httpapi.Chat{ToolParser: "hermes"}, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>", "stop"},
		{"tool_choice none", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>", `,"tool_choice":"none"`,
			httpapi.Chat{ToolParser: "hermes"}, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>", "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng, _, _ := replyWith(t, tok, tc.text)
			cfg := tc.chat
			cfg.Tokenizer = tok
			s := start(t, eng, httpapi.Config{Chat: &cfg})
			code, resp := post(t, s.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":`+weatherTools+tc.extra+`}`)
			require.Equal(t, 200, code, resp)
			var r chatResp
			require.NoError(t, json.Unmarshal([]byte(resp), &r))
			require.Equal(t, tc.content, *r.Choices[0].Message.Content)
			require.Empty(t, r.Choices[0].Message.ToolCalls)
			require.Equal(t, tc.finish, r.Choices[0].FinishReason)
		})
	}
}

func TestChatRequestErrors(t *testing.T) {
	tok := qwen(t)
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})
	tests := []struct{ body, want string }{
		{`{"messages":[]}`, "at least one message"},
		{`{"messages":[{"role":"robot","content":"x"}]}`, `"messages[0].role": unknown role "robot"`},
		{`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`, "tool_choice"},
		{`{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`, "top_logprobs"},
		{`{"messages":[{"role":"user","content":"x"}],"frequency_penalty":-2.5}`, "frequency_penalty"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`, "response_format"},
		{`{"messages":[{"role":"user","content":"x"}],"logprobs":3}`, `field "logprobs"`},
		{`{"messages":"hi"}`, `field "messages"`},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			code, resp := post(t, s.URL()+"/v1/chat/completions", tc.body)
			require.Equal(t, 400, code, resp)
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(resp), &e))
			require.Contains(t, e.Error.Message, tc.want)
		})
	}
	_, err := httpapi.New(servertest.New(servertest.Config{}), httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "nope"}})
	require.ErrorContains(t, err, `unknown format "nope"`)
}

func TestTextPromptsWithTokenizer(t *testing.T) {
	tok := qwen(t)
	eng, cp, ids := replyWith(t, tok, "Bonjour")
	s := start(t, eng, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})

	code, resp := post(t, s.URL()+"/generate", `{"text":"Hello <|im_start|>","sampling_params":{"stop_token_ids":[151645]}}`)
	require.Equal(t, 200, code, resp)
	require.Equal(t, tok.Encode("Hello <|im_start|>"), cp.last().PromptIDs)
	var g struct {
		Text      string  `json:"text"`
		OutputIDs []int32 `json:"output_ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &g))
	require.Equal(t, "Bonjour", g.Text) // stop token trimmed from the text (no_stop_trim false)
	require.Equal(t, ids, g.OutputIDs)  // but kept in the ids

	code, resp = post(t, s.URL()+"/generate", `{"text":"Hi","sampling_params":{"stop_token_ids":[151645],"no_stop_trim":true,"skip_special_tokens":false}}`)
	require.Equal(t, 200, code, resp)
	require.NoError(t, json.Unmarshal([]byte(resp), &g))
	require.Equal(t, "Bonjour<|im_end|>", g.Text)

	code, resp = post(t, s.URL()+"/v1/completions", `{"prompt":"Hi","max_tokens":50,"stop_token_ids":[151645],"logprobs":1}`)
	require.Equal(t, 200, code, resp)
	var c struct {
		Choices []struct {
			Text     string `json:"text"`
			Logprobs struct {
				Tokens []string `json:"tokens"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &c))
	require.Equal(t, "Bonjour", c.Choices[0].Text)
	require.Equal(t, "<|im_end|>", c.Choices[0].Logprobs.Tokens[len(ids)-1])

	// Ids outside the vocabulary are rejected before reaching the engine.
	code, resp = post(t, s.URL()+"/generate", `{"input_ids":[1, 99999999]}`)
	require.Equal(t, 400, code)
	require.Contains(t, resp, "outside the vocabulary")
}

func TestTextNotTrimmedWithoutStopToken(t *testing.T) {
	tok := qwen(t)
	ids := tok.Encode("Bonjour tout le monde")
	s := start(t, servertest.New(servertest.Config{Rule: servertest.Constant(ids...)}), httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})
	// The engine ends without a stop token (StopEOS from a natural end):
	// nothing may be cut from the text.
	code, resp := post(t, s.URL()+"/generate", `{"text":"Hi","sampling_params":{"stop_token_ids":[151645]}}`)
	require.Equal(t, 200, code, resp)
	require.Contains(t, resp, `"text":"Bonjour tout le monde"`)
	code, resp = post(t, s.URL()+"/v1/completions", `{"prompt":"Hi","max_tokens":50}`)
	require.Equal(t, 200, code, resp)
	require.Contains(t, resp, `"text":"Bonjour tout le monde"`)
	require.Contains(t, resp, `"stop_reason":null`)
}
