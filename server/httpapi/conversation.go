package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
)

// conversation is one chat request in no dialect: what the decoders of
// /v1/chat/completions (decodeChat), /v1/responses (decodeResponses) and
// /v1/messages (decodeMessages) produce from their wire types, and what
// prepareConversation turns into engine tokens. Rendering the template,
// encoding, the context check, the end-of-turn stops and the parser check
// run once, there, so one conversation gives the same prompt ids through
// every dialect.
type conversation struct {
	model string
	// messages have the roles system, user, assistant and tool only: each
	// decoder maps "developer" to system (OpenAI defines it so) and
	// refuses unknown roles, naming the field (see checkRole).
	messages []chat.Message
	tools    []chat.ToolSchema
	choice   toolChoice
	// sampling holds the sampling fields as vLLM names them; MaxTokens
	// is the budget, maxName the dialect's field that set it (for errors).
	sampling vllmSampling
	maxName  string
	// stopField names sampling.Stop in errors ("stop", "stop_sequences").
	stopField   string
	logprobs    bool
	topLogprobs int
	stream      bool
	// includeUsage: chat's stream_options.include_usage (the other
	// dialects always report usage).
	includeUsage bool
	returnIDs    bool
	// templateKwargs go to the chat template (chat_template_kwargs).
	templateKwargs map[string]any
	addGeneration  *bool // nil: true
	requestID      string
	// sessionKey is the client's conversation identity (see
	// Config.SessionKeys): the routing key when requestID is empty.
	sessionKey string
	priority   *int
	// hook is the call's Recorder hook (nil without Config.Recorder).
	hook *callHook
}

// preparedChat is a conversation ready for the engine.
type preparedChat struct {
	prepared
	tools []chat.ToolSchema
	parse bool
	// callID names this call in response ids ("chatcmpl-", "resp_",
	// "msg_"): the request id, or a fresh one when the request id is a
	// session key that many calls share.
	callID string
	// hook records the call (nil without Config.Recorder); handlers defer
	// its end.
	hook *callHook
}

// checkRole is the role a message may have: system, user, assistant and
// tool as given, developer as system (OpenAI: "developer messages
// replace the previous system messages" for reasoning models; a template
// knows only system), anything else an error naming field.
func checkRole(field, role string) (string, error) {
	switch role {
	case chat.RoleSystem, chat.RoleUser, chat.RoleAssistant, chat.RoleTool:
		return role, nil
	case "developer":
		return chat.RoleSystem, nil
	}
	return "", badRequest(`field %q: unknown role %q (known: system, developer, user, assistant, tool)`, field, role)
}

// decodeChat reads a /v1/chat/completions body into a conversation.
func decodeChat(data []byte) (conversation, error) {
	var in chatRequest
	if err := unmarshalBody(data, &in); err != nil {
		return conversation{}, err
	}
	c := conversation{model: in.Model, tools: in.Tools, sampling: in.vllmSampling, maxName: "max_tokens", stopField: "stop",
		stream: in.Stream, returnIDs: in.ReturnTokenIDs, templateKwargs: in.ChatTemplateKwargs,
		addGeneration: in.AddGenerationPrompt, requestID: in.RequestID, priority: in.Priority}
	c.sampling.Logprobs = nil // OpenAI's logprobs is the boolean below
	if in.StreamOptions != nil {
		c.includeUsage = in.StreamOptions.IncludeUsage
	}
	if in.MaxCompletionTokens != nil {
		c.sampling.MaxTokens, c.maxName = in.MaxCompletionTokens, "max_completion_tokens"
	}
	c.logprobs = in.Logprobs != nil && *in.Logprobs
	if in.TopLogprobs != nil {
		c.topLogprobs = *in.TopLogprobs
	}
	switch {
	case len(in.Messages) == 0:
		return c, badRequest(`field "messages": at least one message is required`)
	case in.ContinueFinalMessage:
		return c, badRequest(`field "continue_final_message": not supported`)
	}
	if err := checkResponseFormat("response_format", in.ResponseFormat); err != nil {
		return c, err
	}
	c.messages = make([]chat.Message, len(in.Messages))
	for i, m := range in.Messages {
		role, err := checkRole(fmt.Sprintf("messages[%d].role", i), m.Role)
		if err != nil {
			return c, err
		}
		m.Role = role
		c.messages[i] = m
	}
	var err error
	c.choice, err = parseToolChoice(in.ToolChoice, in.Tools)
	return c, err
}

// checkResponseFormat accepts the plain-text formats only: the engine has
// no constrained decoding, and a JSON mode that is not enforced would
// hand the client text it cannot parse as if it had been.
func checkResponseFormat(field string, raw json.RawMessage) error {
	if !isSet(raw) {
		return nil
	}
	var f struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &f) == nil && f.Type == "text" {
		return nil
	}
	return badRequest(`field %q: only {"type": "text"} is supported: this engine has no constrained decoding (json_object and json_schema would not be enforced)`, field)
}

// prepareConversation renders, encodes and budgets c: the one path from a
// conversation to engine tokens.
func (s *Server) prepareConversation(c conversation) (preparedChat, error) {
	ch := s.cfg.Chat
	p := preparedChat{prepared: prepared{stream: c.stream, skipSpecial: true, returnIDs: c.returnIDs, includeUsage: c.includeUsage}, hook: c.hook}
	if c.sampling.SkipSpecialTokens != nil {
		p.skipSpecial = *c.sampling.SkipSpecialTokens
	}
	if err := s.checkModel(c.model); err != nil {
		return p, err
	}
	p.parse = ch.ToolParser != ""
	switch c.choice.mode {
	case "none":
		p.parse = false
	case "required", "function":
		// Validated, not constrained: the engine has no guided decoding,
		// so the calls are what the model writes, parsed as for "auto".
		if !p.parse {
			return p, badRequest(`field "tool_choice": %q needs a tool-call parser, and this server has none`, c.choice.mode)
		}
	}
	p.tools = c.tools
	var err error
	var msgs []chat.Message
	if p.req.PromptIDs, msgs, err = s.renderPrompt(c); err != nil {
		return p, err
	}
	if ch.Images != nil {
		if p.req.PromptIDs, p.req.Vision, err = expandImages(ch.Images, msgs, p.req.PromptIDs); err != nil {
			return p, err
		}
	}
	sp := c.sampling
	stopField := c.stopField
	if stopField == "" {
		stopField = "stop"
	}
	if p.stops, err = s.stopStringsField(&sp.samplingKnobs, stopField); err != nil {
		return p, err
	}
	if p.n, err = sp.takeN(); err != nil {
		return p, err
	}
	// Before the budget: a recorder may give the engine another prompt.
	if err := c.hook.begin(msgs, c, &p); err != nil {
		return p, err
	}
	explicit := sp.MaxTokens != nil
	if sp.MaxTokens == nil {
		n := ch.MaxTokens
		sp.MaxTokens = &n
	}
	maxName := c.maxName
	if maxName == "" {
		maxName = "max_tokens"
	}
	if p.req.Params, err = sp.paramsNamed("", maxName); err != nil {
		return p, err
	}
	if err := s.fitContext(&p.req, explicit, maxName); err != nil {
		return p, err
	}
	if c.topLogprobs != 0 {
		// The engines' range check (SamplingParams.Validate), named as
		// the dialect names the field.
		chk := server.SamplingParams{TopLogprobs: c.topLogprobs}
		if err := chk.Validate(); err != nil {
			return p, badRequest(`field "top_logprobs": %d is outside [0, %d]`, c.topLogprobs, server.MaxTopLogprobs)
		}
	}
	if c.logprobs {
		p.req.Params.Logprobs = true
		p.logprobs = true
		// Alternatives come with the logprobs they are shown with; a
		// top_logprobs without logprobs asks for nothing (as vLLM reads
		// it), rather than failing a harness that always sends it.
		p.req.Params.TopLogprobs = c.topLogprobs
	}
	if p.hook != nil {
		p.req.Params.Logprobs = true // for the record; p.logprobs stays the client's
	}
	// Generation must end at the end of the assistant turn.
	eos := ch.Tokenizer.EOSTokenIDs()
	stops := make([]int32, 0, len(eos)+len(p.req.Params.StopTokenIDs))
	stops = append(append(stops, p.req.Params.StopTokenIDs...), eos...)
	p.req.Params.StopTokenIDs = stops
	p.hook.sampled(p.req.Params)
	rid := c.requestID
	if rid == "" {
		rid = c.sessionKey
	}
	p.identify(rid, c.priority)
	p.callID = p.req.RequestID
	if c.requestID == "" && c.sessionKey != "" {
		p.callID = newRequestID()
	}
	return p, nil
}

// renderPrompt is c's prompt (and its messages normalized, which a
// recorder keeps): rendered through
// the chat template with its tools, and encoded. It is also what
// /v1/messages/count_tokens counts.
func (s *Server) renderPrompt(c conversation) ([]int32, []chat.Message, error) {
	ch := s.cfg.Chat
	msgs, err := normalizeMessages(c.messages, ch.Images != nil)
	if err != nil {
		return nil, nil, err
	}
	addGen := c.addGeneration == nil || *c.addGeneration
	text, err := ch.Tokenizer.ApplyChatTemplate(tokenizer.ChatContext{
		Messages: msgs, Tools: c.tools, AddGenerationPrompt: addGen, Extra: c.templateKwargs})
	if err != nil {
		return nil, nil, badRequest("rendering the chat template: %v", err)
	}
	ids, err := encode(ch.Tokenizer, text)
	if err != nil {
		return nil, nil, badRequest("encoding the rendered prompt: %v", err)
	}
	if len(ids) == 0 {
		return nil, nil, badRequest("the chat template rendered an empty prompt")
	}
	return ids, msgs, nil
}

// turnCall is one tool call of a turn. id is the dialect-free part of its
// id: chat and Responses send "call_"+id, Messages "toolu_"+id.
type turnCall struct {
	id, name, arguments string
}

// turnUsage counts a turn's tokens. prompt includes cached.
type turnUsage struct {
	prompt, completion, cached int
}

// turnResult is a finished assistant turn in no dialect: the parsed
// content, reasoning and calls, why it stopped (with the stop string that
// ended it, if one did) and its usage. Each dialect maps it once: chat
// (chatFinish), Responses (responsesOutput) and Messages
// (anthropicStopReason).
type turnResult struct {
	content   string
	reasoning string
	calls     []turnCall
	stop      server.StopReason
	// matched is the stop string that ended the turn ("" if none).
	matched string
	usage   turnUsage
}

// chatFinish is the turn's OpenAI chat finish_reason.
func chatFinish(t turnResult) string {
	if len(t.calls) > 0 && t.stop == server.StopEOS {
		return "tool_calls"
	}
	return finishString(t.stop)
}

func newCallID() string { return newRequestID()[:24] }

// finishTurn is a non-streamed sample's turn: out cut at the first stop
// string, then decoded and parsed. It returns out as cut.
func (s *Server) finishTurn(p preparedChat, out server.TokenOutput) (turnResult, server.TokenOutput, error) {
	matched, err := s.cutAtStopString(&out, p.stops, p.skipSpecial)
	if err != nil {
		return turnResult{}, out, fmt.Errorf("decoding the output: %w", err)
	}
	t, err := s.chatTurn(p, out)
	if err != nil {
		return t, out, fmt.Errorf("decoding the output: %w", err)
	}
	t.matched = matched
	t.usage = turnUsage{prompt: len(p.req.PromptIDs), completion: len(out.TokenIDs), cached: out.CachedTokens}
	return t, out, nil
}

// checkParser fails before anything is streamed when p's parser cannot be
// built.
func (s *Server) checkParser(p preparedChat) error {
	if p.parse || s.cfg.Chat.Reasoning {
		if _, err := parser.NewStream(s.chatFormat(p), parser.Options{ThinkAware: s.cfg.Chat.Reasoning, Tools: p.tools}); err != nil {
			return fmt.Errorf("%w: tool parser: %v", server.ErrBadRequest, err)
		}
	}
	return nil
}
