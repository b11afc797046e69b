package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
)

var requestSeeds = []string{
	`{"rid":"r1","input_ids":[1,2,3],"return_logprob":true,"sampling_params":{"temperature":0.7,"top_p":0.9,"top_k":20,"min_p":0.05,"max_new_tokens":64,"stop_token_ids":[2],"sampling_seed":1,"no_stop_trim":true,"skip_special_tokens":false}}`,
	`{"input_ids":[[1],[2]]}`,
	`{"text":"hi"}`,
	`{"request_id":"v","token_ids":[5,6],"sampling_params":{"max_tokens":4,"logprobs":0,"seed":3,"stop":[]}}`,
	`{"prompt":[1,2],"max_tokens":3,"logprobs":1,"return_token_ids":true,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"prompt":"x","n":2}`,
	`{"input_ids":[1],"sampling_params":{"temperature":1e400}}`,
	`{"input_ids":[1],"sampling_params":{"top_k":-1,"stop":""}}`,
	`[]`, `null`, `{"rid":null,"input_ids":null}`, `{"input_ids":[2147483648]}`,
	`{"input_ids":[1],"return_logprob":true,"top_logprobs_num":5,"sampling_params":{"presence_penalty":0.5,"frequency_penalty":-1}}`,
	`{"token_ids":[1],"sampling_params":{"logprobs":20,"presence_penalty":2,"frequency_penalty":3}}`,
	`{"prompt":[1],"logprobs":7,"presence_penalty":-2}`,
}

func checkPrepared(t *testing.T, p prepared) {
	require.NotEmpty(t, p.req.RequestID)
	require.NotEmpty(t, p.req.PromptIDs)
	for _, id := range p.req.PromptIDs {
		require.GreaterOrEqual(t, id, int32(0))
	}
	sp := p.req.Params
	require.GreaterOrEqual(t, sp.MaxNewTokens, 1)
	require.GreaterOrEqual(t, sp.Temperature, 0.0)
	require.True(t, sp.TopP > 0 && sp.TopP <= 1)
	require.GreaterOrEqual(t, sp.TopK, 0)
	require.True(t, sp.MinP >= 0 && sp.MinP <= 1)
	require.NoError(t, sp.Validate(), "what a decoder accepts passes the engines' check")
}

// FuzzDecodeRequests feeds arbitrary bodies to every request decoder: each
// must either accept a request that satisfies the engine contract or return
// a request error (400/413), never panic.
func FuzzDecodeRequests(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	s, err := New(fakeEngine{}, Config{})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		if p, err := s.parseSGLangGenerate(data); err == nil {
			require.True(t, valid, "invalid JSON accepted: %q", data)
			checkPrepared(t, p)
		} else {
			require.IsType(t, &errRequest{}, err)
		}
		if p, err := s.parseVLLMGenerate(data); err == nil {
			require.True(t, valid, "invalid JSON accepted: %q", data)
			checkPrepared(t, p)
		} else {
			require.IsType(t, &errRequest{}, err)
		}
		if p, err := s.parseCompletions(data); err == nil {
			require.True(t, valid, "invalid JSON accepted: %q", data)
			checkPrepared(t, p)
		} else {
			require.IsType(t, &errRequest{}, err)
		}
	})
}

// byteTokenizer is a stand-in ChatTokenizer: one id per byte, and a
// template that joins role and content. Enough to fuzz request decoding
// without a real vocabulary.
type byteTokenizer struct{}

func (byteTokenizer) Encode(text string) []int32 {
	ids := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int32(text[i])
	}
	return ids
}

func (byteTokenizer) Decode(ids []int32, _ bool) (string, error) {
	b := make([]byte, len(ids))
	for i, id := range ids {
		if id < 0 || id > 255 {
			return "", fmt.Errorf("id %d out of range", id)
		}
		b[i] = byte(id)
	}
	return string(b), nil
}

func (byteTokenizer) VocabSize() int { return 256 }

func (byteTokenizer) EOSTokenIDs() []int32 { return []int32{0} }

func (byteTokenizer) ApplyChatTemplate(c tokenizer.ChatContext) (string, error) {
	var sb strings.Builder
	for _, m := range c.Messages {
		sb.WriteString(m.Role + ":" + m.Text() + "\n")
	}
	if c.AddGenerationPrompt {
		sb.WriteString("assistant:")
	}
	return sb.String(), nil
}

// FuzzDecodeChatRequest feeds arbitrary bodies to the chat decoder.
func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"logprobs":true,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"1"}],"stream":true}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"chat_template_kwargs":{"enable_thinking":false},"add_generation_prompt":false}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"stop":["a","b"]}`,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required","stop":"\n"}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"messages":[]}`, `{"messages":"x"}`, `{"messages":[{"role":"user"}],"logprobs":1}`, `{"messages":[{"role":"user","content":"x"}],"n":2}`,
	} {
		f.Add([]byte(s))
	}
	s, err := New(fakeEngine{}, Config{Chat: &Chat{Tokenizer: byteTokenizer{}, ToolParser: "hermes"}})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := s.parseChat(data)
		if err != nil {
			require.IsType(t, &errRequest{}, err)
			return
		}
		checkPrepared(t, p.prepared)
		require.Contains(t, p.req.Params.StopTokenIDs, int32(0), "end of turn always stops")
	})
}

// FuzzDecodeResponsesRequest feeds arbitrary bodies to the Responses
// decoder and the conversation path behind it: a request error, or a
// request the engines accept.
func FuzzDecodeResponsesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","instructions":"be brief","input":"hi","max_output_tokens":5,"top_logprobs":3,"include":["message.output_text.logprobs"]}`,
		`{"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"x"}]},{"type":"function_call","name":"create_event","namespace":"mcp__a__cal","arguments":"{}","call_id":"c"},{"type":"function_call_output","call_id":"c","output":"ok"}],` +
			`"tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"namespace","name":"mcp__a__cal","description":"d","tools":[{"type":"function","name":"create_event","defer_loading":true,"parameters":{"type":"object","properties":{}}}]}]}`,
		`{"input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"custom","name":"c"}]}]}`,
		`{"input":"x","presence_penalty":1.5,"frequency_penalty":-0.5,"stream":true,"store":false}`,
		`{"input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}]}]}`,
		`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AA"},{"type":"input_text","text":"q"}]}]}`,
		`{"input":[{"role":"user","content":[{"type":"input_image","file_id":"f"},{"type":"input_file"}]}]}`,
		`{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"data:image/png;base64,AA"},{"type":"input_text","text":"done"}]}]}`,
		`{"input":"x","top_logprobs":-1}`, `{"input":[]}`, `{"input":{}}`, `{"tools":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	s, err := New(fakeEngine{}, Config{Chat: &Chat{Tokenizer: byteTokenizer{}, ToolParser: "hermes"}})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, c, err := decodeResponses(data)
		if err == nil {
			var p preparedChat
			if p, err = s.prepareConversation(c); err == nil {
				checkPrepared(t, p.prepared)
				return
			}
		}
		require.IsType(t, &errRequest{}, err)
	})
}

type fakeEngine struct{}

func (fakeEngine) Generate(_ context.Context, _ server.GenerateRequest) (server.TokenOutput, error) {
	return server.TokenOutput{}, nil
}

// FuzzParseIntList checks the hand-written id-list scanner against
// encoding/json on every valid JSON input.
func FuzzParseIntList(f *testing.F) {
	for _, s := range []string{`[]`, `[1,2,3]`, ` [ 0 , -1 ,2147483647 ] `, `[2147483648]`, `[-2147483648]`,
		`[-2147483649]`, `[1.0]`, `[1e3]`, `[[1],[2]]`, `["a"]`, `[1,]`, `{}`, `[99999999999999999999]`, `[ ]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			_, err := parseIntList(data)
			require.Error(t, err, "invalid JSON %q accepted", data)
			return
		}
		var want []int32
		wantErr := json.Unmarshal(data, &want)
		if wantErr == nil && want == nil {
			return // JSON null: the callers reject it before scanning
		}
		got, err := parseIntList(data)
		if wantErr != nil {
			require.Error(t, err, "encoding/json rejects %q: %v", data, wantErr)
			return
		}
		require.NoError(t, err, "%q", data)
		require.Equal(t, want, got)
	})
}

// FuzzDecodeMessagesRequest feeds arbitrary bodies to the /v1/messages
// decoder (and count_tokens'): each must either prepare a request that
// satisfies the engine contract and stops at the end of the turn, or
// return a request error (400 in Anthropic's shape), never panic.
func FuzzDecodeMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":5,"system":"be brief","messages":[{"role":"user","content":"hi"}],"stop_sequences":["a"],"temperature":0.5,"top_p":0.9,"top_k":20}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"metadata":{"user_id":"u"}}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"x"},
		  {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":""},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}]},
		  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"e"}]}]}],"stream":true}`,
		`{"model":"m","max_tokens":5,"thinking":{"type":"disabled"},"tool_choice":{"type":"any"},"messages":[{"role":"system","content":"s"},{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}},{"type":"text","text":"b"},{"type":"image"}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}},{"type":"text","text":"done"}]}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"prefill"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`, `{"model":"m","max_tokens":0,"messages":[]}`, `{"messages":"x"}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	s, err := New(fakeEngine{}, Config{Chat: &Chat{Tokenizer: byteTokenizer{}, ToolParser: "hermes"}})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := decodeMessages(data, true); err == nil {
			if ids, _, err := s.renderPrompt(c); err == nil {
				require.NotEmpty(t, ids)
			} else {
				require.IsType(t, &errRequest{}, err)
			}
		} else {
			require.IsType(t, &errRequest{}, err)
		}
		c, err := decodeMessages(data, false)
		if err != nil {
			require.IsType(t, &errRequest{}, err)
			return
		}
		require.True(t, json.Valid(data), "invalid JSON accepted: %q", data)
		p, err := s.prepareConversation(c)
		if err != nil {
			require.IsType(t, &errRequest{}, err)
			return
		}
		checkPrepared(t, p.prepared)
		require.Contains(t, p.req.Params.StopTokenIDs, int32(0), "end of turn always stops")
	})
}
