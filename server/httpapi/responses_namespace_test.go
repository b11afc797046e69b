package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
)

// codexNamespaceTool is the namespace tool codex serializes, as its own
// test pins it: openai/codex codex-rs/tools/src/responses_api_tests.rs,
// loadable_tool_spec_namespace_serializes_with_deferred_child_tools, at
// commit 074b7692d8f9a5abaa9ae7de117960dc55ce6089.
const codexNamespaceTool = `{
	"type": "namespace",
	"name": "mcp__codex_apps__calendar",
	"description": "Plan events",
	"tools": [
		{
			"type": "function",
			"name": "create_event",
			"description": "Create a calendar event.",
			"strict": false,
			"defer_loading": true,
			"parameters": {"type": "object", "properties": {}}
		}
	]
}`

// codexShellTool is a plain function tool next to it, as codex sends its
// shell tool (ResponsesApiTool: name, description, strict, parameters).
const codexShellTool = `{"type":"function","name":"shell","description":"Runs a shell command.","strict":false,
	"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}}`

// TestResponsesNamespaceTools: a namespace's function tools reach the
// model under their flat names (namespace "__" name), a call to one comes
// back as the Responses API reports it (name and namespace apart, which
// the official client reads), streamed and not, and the call sent back in
// the next turn's input renders as the model wrote it.
func TestResponsesNamespaceTools(t *testing.T) {
	tok := qwen(t)
	call := "<tool_call>\n{\"name\": \"mcp__codex_apps__calendar__create_event\", \"arguments\": {}}\n</tool_call>"
	eng, cp, _ := replyWith(t, tok, call)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	body := `{"model":"qwen3","instructions":"You are codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Plan lunch"}]}],
		"tools":[` + codexShellTool + `,` + codexNamespaceTool + `],"tool_choice":"auto","parallel_tool_calls":false,"store":false,"stream":%s}`
	code, raw := post(t, s.URL()+"/v1/responses", strings.Replace(body, "%s", "false", 1))
	require.Equal(t, 200, code, raw)
	var resp responses.Response
	require.NoError(t, json.Unmarshal([]byte(raw), &resp))
	calls := functionCalls(&resp)
	require.Len(t, calls, 1, raw)
	require.Equal(t, "create_event", calls[0].Name)
	require.Equal(t, "mcp__codex_apps__calendar", calls[0].Namespace)
	require.Equal(t, "{}", calls[0].Arguments)

	var tools []chat.ToolSchema
	require.NoError(t, json.Unmarshal([]byte(`[{"type":"function","function":{"name":"shell","description":"Runs a shell command.","strict":false,
		"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}}},
		{"type":"function","function":{"name":"mcp__codex_apps__calendar__create_event","description":"Create a calendar event.","strict":false,
		"parameters":{"type":"object","properties":{}}}}]`), &tools))
	msgs := []chat.Message{{Role: "system", Content: "You are codex."}, {Role: "user", Content: "Plan lunch"}}
	want, err := tok.EncodeChat(tokenizer.ChatContext{Messages: msgs, Tools: tools, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, want, cp.last().PromptIDs, "the model sees the flat name")

	// Streamed: the official client reads the same call off the events.
	c := openai.NewClient(option.WithBaseURL(s.URL()+"/v1/"), option.WithAPIKey("unused"), option.WithHTTPClient(testClient), option.WithMaxRetries(0))
	var params responses.ResponseNewParams
	require.NoError(t, json.Unmarshal([]byte(strings.Replace(body, "%s", "true", 1)), &params))
	stream := c.Responses.NewStreaming(context.Background(), params)
	var done *responses.ResponseFunctionToolCall
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.output_item.done" && ev.Item.Type == "function_call" {
			fc := ev.Item.AsFunctionCall()
			done = &fc
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.NotNil(t, done)
	require.Equal(t, "create_event", done.Name)
	require.Equal(t, "mcp__codex_apps__calendar", done.Namespace)

	// The next turn, as codex sends it: the call with its namespace, and
	// its output.
	next := `{"model":"qwen3","instructions":"You are codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Plan lunch"}]},
		{"type":"function_call","name":"create_event","namespace":"mcp__codex_apps__calendar","arguments":"{}","call_id":"` + calls[0].CallID + `"},
		{"type":"function_call_output","call_id":"` + calls[0].CallID + `","output":"created"}],
		"tools":[` + codexShellTool + `,` + codexNamespaceTool + `],"stream":false}`
	code, raw = post(t, s.URL()+"/v1/responses", next)
	require.Equal(t, 200, code, raw)
	msgs = append(msgs, chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: calls[0].CallID, Type: "function",
		Function: chat.FunctionCall{Name: "mcp__codex_apps__calendar__create_event", Arguments: "{}", ArgumentsAsObject: true}}}},
		chat.Message{Role: "tool", Content: "created", ToolCallID: calls[0].CallID})
	want, err = tok.EncodeChat(tokenizer.ChatContext{Messages: msgs, Tools: tools, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, want, cp.last().PromptIDs)
}

// TestResponsesNamespaceToolErrors: what the flattening cannot serve is a
// 400 naming the field.
func TestResponsesNamespaceToolErrors(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "ok")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	for _, tc := range []struct{ tools, field string }{
		{`[{"type":"namespace","tools":[]}]`, "tools[0].name"},
		{`[{"type":"namespace","name":"ns","tools":[{"type":"custom","name":"x"}]}]`, "tools[0].tools[0].type"},
		{`[{"type":"namespace","name":"ns","tools":[{"type":"namespace","name":"x"}]}]`, "tools[0].tools[0].type"},
		{`[{"type":"namespace","name":"ns","tools":[{"type":"function"}]}]`, "tools[0].tools[0].name"},
		{`[{"type":"function","name":"ns__x"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"x"}]}]`, "tools[1].tools[0].name"},
	} {
		code, raw := post(t, s.URL()+"/v1/responses", `{"model":"qwen3","input":"hi","tools":`+tc.tools+`}`)
		require.Equal(t, 400, code, tc.tools)
		require.Contains(t, raw, `"param":"`+tc.field+`"`, raw)
	}
}
