package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
)

// ---- Anthropic Messages: POST /v1/messages, /v1/messages/count_tokens -----
//
// Wire types follow anthropics/anthropic-sdk-go v2 MessageNewParams (the
// request), Message and MessageStreamEventUnion (the reply) and
// MessageCountTokensParams; see doc.go for what is honoured and what is
// refused.

type anthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens *int   `json:"max_tokens"`
	// System is a string or a list of text blocks.
	System        json.RawMessage         `json:"system"`
	Messages      []anthropicMessageParam `json:"messages"`
	Tools         []anthropicTool         `json:"tools"`
	ToolChoice    *anthropicToolChoice    `json:"tool_choice"`
	StopSequences []string                `json:"stop_sequences"`
	Temperature   *float64                `json:"temperature"`
	TopP          *float64                `json:"top_p"`
	TopK          *int                    `json:"top_k"`
	Thinking      *anthropicThinking      `json:"thinking"`
	Stream        bool                    `json:"stream"`
	// Metadata is read for metadata.user_id, a session key (see
	// DefaultSessionKeys), through the raw body.
	Metadata     json.RawMessage `json:"metadata"`
	OutputConfig *struct {
		Format json.RawMessage `json:"format"`
	} `json:"output_config"`
	OutputFormat json.RawMessage `json:"output_format"`
	MCPServers   json.RawMessage `json:"mcp_servers"`
	// Not in Anthropic's API: agentrl's (and vLLM's) own fields.
	Seed      *int64 `json:"seed"`
	RequestID string `json:"request_id"`
}

// anthropicMessageParam is a MessageParam: content is a string or blocks.
type anthropicMessageParam struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is an input content block (ContentBlockParamUnion) of the
// types read here: text, thinking, redacted_thinking, tool_use and
// tool_result. cache_control and citations are accepted and ignored.
type anthropicBlock struct {
	Type      string                `json:"type"`
	Text      string                `json:"text"`
	Thinking  string                `json:"thinking"`
	ID        string                `json:"id"`
	Name      string                `json:"name"`
	Input     json.RawMessage       `json:"input"`
	ToolUseID string                `json:"tool_use_id"`
	Content   json.RawMessage       `json:"content"`
	IsError   bool                  `json:"is_error"`
	Source    *anthropicImageSource `json:"source"`
}

// anthropicTool is a client tool (ToolParam): a name, a description and
// the JSON Schema of its input. Server tools (web search, code execution,
// computer use, bash, the text editor, …) carry a versioned type and run
// on Anthropic's side: a model served here cannot, so they are refused.
type anthropicTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      *bool           `json:"strict"`
}

// anthropicToolChoice is ToolChoiceUnionParam: auto, any, tool (with a
// name) or none. disable_parallel_tool_use is accepted: the calls are
// what the model writes.
type anthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
}

// anthropicThinking is ThinkingConfigParamUnion: enabled (with a token
// budget), adaptive, between_tools or disabled.
type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens"`
}

// anthropicContent is an output content block (ContentBlockUnion): text,
// thinking or tool_use. Text and thinking are always written, also when
// empty: the SDK accumulates deltas onto them.
type anthropicContent struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// anthropicUsage is Usage: input_tokens excludes the prefix-cache hits,
// which are cache_read_input_tokens (their sum is the prompt).
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// anthropicResponse is Message: the reply, and what message_start
// carries (with no content and no stop reason yet).
type anthropicResponse struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	Role         string             `json:"role"`
	Model        string             `json:"model"`
	Content      []anthropicContent `json:"content"`
	StopReason   *string            `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	Usage        anthropicUsage     `json:"usage"`
}

// decodeMessages reads a /v1/messages body into a conversation; count
// (count_tokens) needs no max_tokens.
func decodeMessages(data []byte, count bool) (conversation, error) {
	var in anthropicRequest
	if err := unmarshalBody(data, &in); err != nil {
		return conversation{}, err
	}
	c := conversation{model: in.Model, maxName: "max_tokens", stopField: "stop_sequences", stream: in.Stream,
		requestID: in.RequestID}
	c.sampling.MaxTokens = in.MaxTokens
	c.sampling.Temperature, c.sampling.TopP, c.sampling.TopK = in.Temperature, in.TopP, in.TopK
	c.sampling.Seed = in.Seed
	switch {
	case in.Model == "":
		return c, badRequest(`field "model": required`)
	case !count && in.MaxTokens == nil:
		return c, badRequest(`field "max_tokens": required`)
	case len(in.Messages) == 0:
		return c, badRequest(`field "messages": at least one message is required`)
	case isSet(in.OutputFormat) || (in.OutputConfig != nil && isSet(in.OutputConfig.Format)):
		return c, badRequest(`field "output_config.format": structured outputs are not supported: this engine has no constrained decoding (the format would not be enforced)`)
	case isSet(in.MCPServers) && string(in.MCPServers) != "[]":
		return c, badRequest(`field "mcp_servers": MCP servers are not supported: the model here can only call tools the client runs`)
	}
	if in.StopSequences != nil {
		c.sampling.Stop, _ = json.Marshal(in.StopSequences) // strings always encode
	}
	if in.Thinking != nil {
		switch in.Thinking.Type {
		case "enabled", "adaptive", "between_tools":
			// The template's default: Qwen3 and its kin think unless told
			// not to. budget_tokens is not enforced (nor, strictly, by
			// Anthropic: "may exceed"); max_tokens bounds the whole turn.
		case "disabled":
			// The templates that can turn reasoning off read this kwarg
			// (Qwen3, GLM); others ignore it.
			c.templateKwargs = map[string]any{"enable_thinking": false}
		default:
			return c, badRequest(`field "thinking.type": unknown value %q (known: enabled, adaptive, disabled)`, in.Thinking.Type)
		}
	}
	sys, err := anthropicSystem(in.System)
	if err != nil {
		return c, err
	}
	if sys != "" {
		c.messages = append(c.messages, chat.Message{Role: chat.RoleSystem, Content: sys})
	}
	for i, m := range in.Messages {
		msgs, err := anthropicMessages(i, m)
		if err != nil {
			return c, err
		}
		c.messages = append(c.messages, msgs...)
	}
	if last := in.Messages[len(in.Messages)-1]; last.Role == chat.RoleAssistant {
		return c, badRequest(`field "messages[%d].role": a final assistant message (a prefill to continue) is not supported: end with a user message`, len(in.Messages)-1)
	}
	for i, t := range in.Tools {
		switch {
		case t.Type == "" || t.Type == "custom":
		default:
			return c, badRequest(`field "tools[%d].type": server tool %q is not supported: the model here can only call client tools (no "type", or "custom")`, i, t.Type)
		}
		if t.Name == "" {
			return c, badRequest(`field "tools[%d].name": a tool needs a name`, i)
		}
		c.tools = append(c.tools, chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema, Strict: t.Strict}})
	}
	c.choice, err = anthropicToolChoiceOf(in.ToolChoice, c.tools)
	return c, err
}

// anthropicSystem is the system prompt: a string, or text blocks joined by
// "\n" (as chat's text parts join).
func anthropicSystem(raw json.RawMessage) (string, error) {
	if !isSet(raw) {
		return "", nil
	}
	return anthropicText("system", raw)
}

// anthropicText is a string or a list of text blocks, joined by "\n".
func anthropicText(field string, raw json.RawMessage) (string, error) {
	if !isSet(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", badRequest("field %q: expected a string or a list of text blocks", field)
	}
	texts := make([]string, len(blocks))
	for j, b := range blocks {
		if b.Type != "text" {
			return "", badRequest("field %q: block type %q is not supported here (only text: the engine reads text only)", fmt.Sprintf("%s[%d].type", field, j), b.Type)
		}
		texts[j] = b.Text
	}
	return strings.Join(texts, "\n"), nil
}

// anthropicResult is a tool_result's content: its text, or, when it has
// image blocks (a tool that returns a screenshot or reads an image file),
// its text and image blocks in order, for a vision-language template
// (Chat.Images) or refused naming the part, as a user turn's are.
func anthropicResult(field string, raw json.RawMessage) (string, []chat.ContentPart, error) {
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil || !slices.ContainsFunc(blocks, func(b anthropicBlock) bool { return b.Type == "image" }) {
		text, err := anthropicText(field, raw)
		return text, nil, err
	}
	parts := make([]chat.ContentPart, len(blocks))
	for j, b := range blocks {
		bf := fmt.Sprintf("%s[%d]", field, j)
		switch b.Type {
		case "text":
			parts[j] = chat.ContentPart{Type: "text", Text: b.Text}
		case "image":
			im, err := anthropicImage(bf, b.Source)
			if err != nil {
				return "", nil, err
			}
			parts[j] = chat.ImagePart(im)
		default:
			return "", nil, badRequest("field %q: block type %q is not supported in a tool_result with images (only text and image)", bf+".type", b.Type)
		}
	}
	return "", parts, nil
}

// anthropicMessages turns messages[i] into chat messages. A user turn's
// tool_result blocks become tool messages and its text blocks a user
// message, in the order written; an assistant turn is one message with
// its thinking as reasoning_content, its text as content and its tool_use
// blocks as tool calls (input as the arguments object).
func anthropicMessages(i int, m anthropicMessageParam) ([]chat.Message, error) {
	field := fmt.Sprintf("messages[%d]", i)
	role, err := checkRole(field+".role", m.Role)
	if err != nil {
		return nil, err
	}
	if role == chat.RoleTool {
		return nil, badRequest(`field "%s.role": "tool" is not a message role here: send tool_result blocks in a user message`, field)
	}
	if !isSet(m.Content) {
		return nil, badRequest(`field "%s.content": required`, field)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []chat.Message{{Role: role, Content: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, badRequest(`field "%s.content": expected a string or a list of content blocks`, field)
	}
	if role == chat.RoleAssistant {
		msg, err := anthropicAssistant(field, blocks)
		return []chat.Message{msg}, err
	}
	var out []chat.Message
	var texts []string
	// parts, once an image block is seen, holds the text and image blocks
	// in order: the one chat path passes them to a vision-language
	// template (Chat.Images) or refuses them naming the part.
	var parts []chat.ContentPart
	flush := func() {
		switch {
		case parts != nil:
			for _, t := range texts {
				parts = append(parts, chat.ContentPart{Type: "text", Text: t})
			}
			out = append(out, chat.Message{Role: role, Parts: parts})
		case texts != nil:
			out = append(out, chat.Message{Role: role, Content: strings.Join(texts, "\n")})
		}
		texts, parts = nil, nil
	}
	for j, b := range blocks {
		bf := fmt.Sprintf("%s.content[%d]", field, j)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image":
			im, err := anthropicImage(bf, b.Source)
			if err != nil {
				return nil, err
			}
			for _, t := range texts {
				parts = append(parts, chat.ContentPart{Type: "text", Text: t})
			}
			texts = nil
			parts = append(parts, chat.ImagePart(im))
		case "tool_result":
			if role != chat.RoleUser {
				return nil, badRequest(`field "%s.type": tool_result blocks belong in a user message`, bf)
			}
			if b.ToolUseID == "" {
				return nil, badRequest(`field "%s.tool_use_id": required`, bf)
			}
			// is_error is accepted; templates have no error flag, so the
			// result's text (which says what failed) is what the model sees.
			text, resultParts, err := anthropicResult(bf+".content", b.Content)
			if err != nil {
				return nil, err
			}
			flush()
			out = append(out, chat.Message{Role: chat.RoleTool, Content: text, Parts: resultParts, ToolCallID: b.ToolUseID})
		default:
			return nil, badRequest(`field "%s.type": block type %q is not supported in a %s message (known: text, image, tool_result)`, bf, b.Type, role)
		}
	}
	flush()
	if len(out) == 0 {
		out = append(out, chat.Message{Role: role})
	}
	return out, nil
}

// anthropicImageSource is an image block's source (Base64ImageSourceParam,
// URLImageSourceParam).
type anthropicImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// anthropicImage is an image block's source as an image: base64 data (as a
// data URL of its media_type) or a URL; which sources are read is the
// image processor's to decide (Chat.Images).
func anthropicImage(field string, src *anthropicImageSource) (chat.Image, error) {
	switch {
	case src == nil:
		return chat.Image{}, badRequest(`field "%s.source": required`, field)
	case src.Type == "base64" && src.Data != "":
		return chat.Image{URL: "data:" + src.MediaType + ";base64," + src.Data}, nil
	case src.Type == "url" && src.URL != "":
		return chat.Image{URL: src.URL}, nil
	}
	return chat.Image{}, badRequest(`field "%s.source": expected {"type": "base64", "media_type", "data"} or {"type": "url", "url"}, got type %q`, field, src.Type)
}

// anthropicAssistant is an assistant turn's blocks as one message.
func anthropicAssistant(field string, blocks []anthropicBlock) (chat.Message, error) {
	msg := chat.Message{Role: chat.RoleAssistant}
	var texts, thoughts []string
	for j, b := range blocks {
		bf := fmt.Sprintf("%s.content[%d]", field, j)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "thinking":
			thoughts = append(thoughts, b.Thinking)
		case "redacted_thinking":
			// Opaque to any model but Anthropic's: nothing to render.
		case "tool_use":
			if b.Name == "" {
				return msg, badRequest(`field "%s.name": a tool_use needs a name`, bf)
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(b.Input, &obj) != nil || obj == nil {
				return msg, badRequest(`field "%s.input": not a JSON object`, bf)
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: b.ID, Type: "function",
				Function: chat.FunctionCall{Name: b.Name, Arguments: string(b.Input), ArgumentsAsObject: true}})
		default:
			return msg, badRequest(`field "%s.type": block type %q is not supported in an assistant message (known: text, thinking, redacted_thinking, tool_use)`, bf, b.Type)
		}
	}
	msg.Content = strings.Join(texts, "\n")
	msg.ReasoningContent = strings.Join(thoughts, "\n")
	return msg, nil
}

// anthropicToolChoiceOf maps tool_choice onto chat's: auto, any
// (required), tool (a named function) and none.
func anthropicToolChoiceOf(tc *anthropicToolChoice, tools []chat.ToolSchema) (toolChoice, error) {
	if tc == nil {
		return toolChoice{mode: "auto"}, nil
	}
	switch tc.Type {
	case "auto", "none":
		return toolChoice{mode: tc.Type}, nil
	case "any":
		if len(tools) == 0 {
			return toolChoice{}, badRequest(`field "tool_choice": "any" needs "tools"`)
		}
		return toolChoice{mode: "required"}, nil
	case "tool":
		for _, t := range tools {
			if t.Function.Name == tc.Name {
				return toolChoice{mode: "function", name: tc.Name}, nil
			}
		}
		return toolChoice{}, badRequest(`field "tool_choice.name": tool %q is not among "tools"`, tc.Name)
	}
	return toolChoice{}, badRequest(`field "tool_choice.type": unknown value %q (known: auto, any, tool, none)`, tc.Type)
}

// anthropicStopReason is the turn's stop_reason, with the stop sequence
// that ended it: tool_use when it called tools, stop_sequence when a
// stop string ended it, max_tokens at the budget (and when the engine
// aborted it: the turn is cut), else end_turn.
func anthropicStopReason(t turnResult) (string, *string) {
	switch {
	case t.stop == server.StopLength || t.stop == server.StopAbort:
		return "max_tokens", nil
	case len(t.calls) > 0:
		return "tool_use", nil
	case t.matched != "":
		m := t.matched
		return "stop_sequence", &m
	}
	return "end_turn", nil
}

func anthropicUsageOf(u turnUsage) anthropicUsage {
	return anthropicUsage{InputTokens: u.prompt - u.cached, CacheReadInputTokens: u.cached, OutputTokens: u.completion}
}

// anthropicInput is a call's arguments as a tool_use input: the parsers'
// arguments are JSON (an object but for gpt_oss's plain-text tools, a
// string); anything else is sent as a JSON string rather than as invalid
// JSON.
func anthropicInput(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return json.RawMessage(appendString(nil, args))
}

func anthropicTextBlock(kind, text string) anthropicContent {
	if kind == "thinking" {
		sig := ""
		return anthropicContent{Type: "thinking", Thinking: &text, Signature: &sig}
	}
	return anthropicContent{Type: "text", Text: &text}
}

func anthropicToolUse(c turnCall, input json.RawMessage) anthropicContent {
	return anthropicContent{Type: "tool_use", ID: "toolu_" + c.id, Name: c.name, Input: input}
}

// anthropicContentOf is a finished turn's blocks: thinking, text, then the
// tool calls (the order the stream sends them in); a turn with neither
// text nor calls is one empty text block, which clients that read
// content[0] can take.
func anthropicContentOf(t turnResult) []anthropicContent {
	out := []anthropicContent{}
	if t.reasoning != "" {
		out = append(out, anthropicTextBlock("thinking", t.reasoning))
	}
	if t.content != "" || len(t.calls) == 0 {
		out = append(out, anthropicTextBlock("text", t.content))
	}
	for _, c := range t.calls {
		out = append(out, anthropicToolUse(c, anthropicInput(c.arguments)))
	}
	return out
}

// anthropicHead is the reply's skeleton: id, model, no content yet.
func (s *Server) anthropicHead(p preparedChat) anthropicResponse {
	return anthropicResponse{ID: "msg_" + p.callID, Type: "message", Role: chat.RoleAssistant, Model: s.cfg.Model,
		Content: []anthropicContent{}, Usage: anthropicUsage{InputTokens: len(p.req.PromptIDs)}}
}

// anthropicFinish completes r with t's stop reason and usage.
func anthropicFinish(r *anthropicResponse, t turnResult) {
	reason, seq := anthropicStopReason(t)
	r.StopReason, r.StopSequence = &reason, seq
	r.Usage = anthropicUsageOf(t.usage)
}

// anthropicErrorDetail is the error object (shared.ErrorObjectUnion).
type anthropicErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicErrorBody is Anthropic's error shape (shared.ErrorResponse).
type anthropicErrorBody struct {
	Type  string               `json:"type"`
	Error anthropicErrorDetail `json:"error"`
}

// anthropicErrorType maps a status to one of the SDK's shared.ErrorType
// values.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestTimeout,
		http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed, http.StatusMisdirectedRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	return "api_error"
}

// writeAnthropicError writes an error in Anthropic's shape:
// {"type":"error","error":{"type","message"}}.
func writeAnthropicError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, anthropicErrorBody{Type: "error", Error: anthropicErrorDetail{Type: anthropicErrorType(status), Message: msg}})
}

func writeAnthropicRequestError(w http.ResponseWriter, err error) {
	var re *errRequest
	if errors.As(err, &re) {
		writeAnthropicError(w, re.status, re.msg)
		return
	}
	writeAnthropicError(w, statusOf(err), err.Error())
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Chat == nil {
		writeAnthropicError(w, http.StatusNotFound, "this server has no chat template: /v1/messages is disabled")
		return
	}
	p, err := s.readMessages(r)
	defer p.hook.end()
	if err != nil {
		writeAnthropicRequestError(w, err)
		return
	}
	w.Header().Set("request-id", p.callID)
	w.Header().Set("x-request-id", p.callID)
	head := s.anthropicHead(p)
	if p.stream {
		s.streamMessages(w, r, s.streamer(), p, head)
		return
	}
	out, err := s.engine.Generate(r.Context(), p.req)
	if err == nil {
		err = checkOutput(out, p.req)
	}
	if err != nil {
		writeAnthropicRequestError(w, err)
		return
	}
	turn, out, err := s.finishTurn(p, out)
	if err == nil {
		err = p.hook.record(0, out, turn)
	}
	if err != nil {
		writeAnthropicRequestError(w, err)
		return
	}
	head.Content = anthropicContentOf(turn)
	anthropicFinish(&head, turn)
	writeJSON(w, http.StatusOK, head)
}

func (s *Server) readMessages(r *http.Request) (preparedChat, error) {
	data, err := readBody(r)
	if err != nil {
		return preparedChat{}, err
	}
	c, err := decodeMessages(data, false)
	if err != nil {
		return preparedChat{}, err
	}
	if c.sessionKey == "" {
		c.sessionKey = s.sessionKey(r.Header, data)
	}
	c.hook = s.newHook(r, data, DialectMessages)
	return s.prepareConversation(c)
}

// handleCountTokens answers /v1/messages/count_tokens: the length of the
// prompt that /v1/messages would send the engine for the same body
// (system, messages and tools through the chat template, with the
// generation prompt), as {"input_tokens": N}.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Chat == nil {
		writeAnthropicError(w, http.StatusNotFound, "this server has no chat template: /v1/messages/count_tokens is disabled")
		return
	}
	data, err := readBody(r)
	if err != nil {
		writeAnthropicRequestError(w, err)
		return
	}
	c, err := decodeMessages(data, true)
	if err == nil {
		err = s.checkModel(c.model)
	}
	var ids []int32
	if err == nil {
		ids, _, err = s.renderPrompt(c)
	}
	if err != nil {
		writeAnthropicRequestError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		InputTokens int `json:"input_tokens"`
	}{len(ids)})
}
