package httpapi

import (
	"encoding/json"
	"strings"

	"github.com/agentrl/agentrl/chat"
)

// normalizeMessages rewrites OpenAI messages the way vLLM does before it
// renders a chat template (vllm-project/vllm
// vllm/entrypoints/chat_utils.py _parse_chat_message_content and
// _postprocess_messages), so that templates written for plain strings —
// Qwen3's iterates over content with `in` — render what clients send:
//   - "content": null (the SDK echoes an assistant tool-call turn so) or
//     no content becomes "";
//   - a list of text parts becomes their texts joined by "\n" (vLLM's
//     "string" content format); other part types (images, audio) are
//     rejected, since the engine reads text only;
//   - tool-call arguments given as a JSON string become the object, which
//     templates serialize with tojson (Llama 3.1) or test for strings
//     (Qwen3).
//
// With images (Chat.Images set), a message with image parts keeps its text
// and image parts for a vision-language template.
func normalizeMessages(in []chat.Message, images bool) ([]chat.Message, error) {
	out := make([]chat.Message, len(in))
	for i, m := range in {
		n := chat.Message{Role: m.Role, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
		if images && hasImages(m) {
			for j, p := range m.Parts {
				if p.Type != "text" && p.Image == nil {
					return nil, badRequest(`field "messages[%d].content[%d].type": content part type %q is not supported (only "text" and images)`, i, j, p.Type)
				}
			}
			n.Parts = m.Parts
		} else if len(m.Parts) > 0 {
			texts := make([]string, 0, len(m.Parts))
			for j, p := range m.Parts {
				if p.Type != "text" {
					return nil, badRequest(`field "messages[%d].content[%d].type": content part type %q is not supported (only "text")`, i, j, p.Type)
				}
				texts = append(texts, p.Text)
			}
			n.Content = strings.Join(texts, "\n")
		} else {
			n.Content = m.Content
		}
		if len(m.ToolCalls) > 0 {
			n.ToolCalls = make([]chat.ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				if !c.Function.ArgumentsAsObject {
					var obj map[string]json.RawMessage
					if json.Unmarshal([]byte(c.Function.Arguments), &obj) != nil {
						return nil, badRequest(`field "messages[%d].tool_calls[%d].function.arguments": not a JSON object: %.100q`, i, j, c.Function.Arguments)
					}
					c.Function.ArgumentsAsObject = true
				}
				n.ToolCalls[j] = c
			}
		}
		out[i] = n
	}
	return out, nil
}

// toolChoice is a parsed OpenAI tool_choice.
type toolChoice struct {
	mode string // "auto", "none", "required" or "function"
	name string // the function, for mode "function"
}

// parseToolChoice reads tool_choice: "auto", "none", "required" or
// {"type": "function", "function": {"name": ...}}, which must name one of
// tools (vLLM checks the same in ChatCompletionRequest.check_tool_usage,
// vllm/entrypoints/openai/protocol.py).
func parseToolChoice(raw json.RawMessage, tools []chat.ToolSchema) (toolChoice, error) {
	if !isSet(raw) {
		return toolChoice{mode: "auto"}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none":
			return toolChoice{mode: s}, nil
		case "required":
			if len(tools) == 0 {
				return toolChoice{}, badRequest(`field "tool_choice": "required" needs "tools"`)
			}
			return toolChoice{mode: s}, nil
		}
		return toolChoice{}, badRequest(`field "tool_choice": unknown value %q (known: auto, none, required, or a function)`, s)
	}
	var named struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function == nil || named.Function.Name == "" {
		return toolChoice{}, badRequest(`field "tool_choice": expected "auto", "none", "required" or {"type": "function", "function": {"name": ...}}`)
	}
	for _, t := range tools {
		if t.Function.Name == named.Function.Name {
			return toolChoice{mode: "function", name: named.Function.Name}, nil
		}
	}
	return toolChoice{}, badRequest(`field "tool_choice": function %q is not among "tools"`, named.Function.Name)
}
