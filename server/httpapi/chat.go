package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
)

// Tokenizer is what the server needs to accept text prompts and return text.
type Tokenizer interface {
	Encode(text string) []int32
	Decode(ids []int32, skipSpecial bool) (string, error)
	VocabSize() int
}

// ChatTokenizer adds the chat template; *tokenizer.Tokenizer implements it.
type ChatTokenizer interface {
	Tokenizer
	ApplyChatTemplate(c tokenizer.ChatContext) (string, error)
	// EOSTokenIDs are the end-of-turn ids: generation always stops at them.
	EOSTokenIDs() []int32
}

// DefaultChatMaxTokens is the completion budget of a chat request that sets
// neither max_tokens nor max_completion_tokens, when Chat.MaxTokens is 0.
const DefaultChatMaxTokens = 2048

// Chat enables text: text prompts on the native endpoints, text in their
// responses, and /v1/chat/completions.
type Chat struct {
	Tokenizer ChatTokenizer
	// ToolParser is the parser.Formats() name of the model's tool-call
	// format ("hermes" for Qwen3); empty returns the text as content.
	ToolParser string
	// Reasoning splits <think>…</think> into reasoning_content.
	Reasoning bool
	// MaxTokens is the default completion budget (DefaultChatMaxTokens).
	MaxTokens int
}

func (c *Chat) validate() error {
	if c.Tokenizer == nil {
		return errors.New("httpapi: Config.Chat needs a Tokenizer")
	}
	if c.ToolParser != "" {
		if _, err := parser.New(c.ToolParser, parser.Options{}); err != nil {
			return fmt.Errorf("httpapi: Config.Chat.ToolParser: %w", err)
		}
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("httpapi: Config.Chat.MaxTokens is negative (%d)", c.MaxTokens)
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultChatMaxTokens
	}
	return nil
}

type chatRequest struct {
	vllmSampling
	Model               string            `json:"model"`
	Messages            []chat.Message    `json:"messages"`
	Tools               []chat.ToolSchema `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	// Logprobs is OpenAI's boolean; being shallower, it hides the integer
	// logprobs of the embedded vllmSampling from encoding/json.
	Logprobs             *bool           `json:"logprobs"`
	TopLogprobs          *int            `json:"top_logprobs"`
	Stream               bool            `json:"stream"`
	StreamOptions        *streamOptions  `json:"stream_options"`
	ChatTemplateKwargs   map[string]any  `json:"chat_template_kwargs"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	RequestID            string          `json:"request_id"`
	ReturnTokenIDs       bool            `json:"return_token_ids"`
	Priority             *int            `json:"priority"`
	ResponseFormat       json.RawMessage `json:"response_format"`
}

type preparedChat struct {
	prepared
	tools []chat.ToolSchema
	parse bool
}

func (s *Server) parseChat(data []byte) (preparedChat, error) {
	return s.readChat(bytes.NewReader(data))
}

func (s *Server) readChat(r io.Reader) (preparedChat, error) {
	// No token ids here: the body is read whole, in one buffer.
	b, err := readBodySplit(r, "")
	if err != nil {
		return preparedChat{}, err
	}
	var in chatRequest
	if err := unmarshalBody(b.rest, &in); err != nil {
		return preparedChat{}, err
	}
	ch := s.cfg.Chat
	p := preparedChat{prepared: prepared{stream: in.Stream, skipSpecial: true, returnIDs: in.ReturnTokenIDs}}
	if in.StreamOptions != nil {
		p.includeUsage = in.StreamOptions.IncludeUsage
	}
	if in.SkipSpecialTokens != nil {
		p.skipSpecial = *in.SkipSpecialTokens
	}
	switch {
	case len(in.Messages) == 0:
		return p, badRequest(`field "messages": at least one message is required`)
	case in.ContinueFinalMessage:
		return p, badRequest(`field "continue_final_message": not supported`)
	case in.TopLogprobs != nil && *in.TopLogprobs > 0:
		return p, badRequest(`field "top_logprobs": only the sampled token's logprob is supported`)
	case isSet(in.ResponseFormat) && string(in.ResponseFormat) != `{"type":"text"}`:
		return p, badRequest(`field "response_format": constrained decoding is not supported`)
	}
	for i, m := range in.Messages {
		switch m.Role {
		case chat.RoleSystem, chat.RoleUser, chat.RoleAssistant, chat.RoleTool, "developer":
		default:
			return p, badRequest(`field "messages[%d].role": unknown role %q`, i, m.Role)
		}
	}
	if err := s.checkModel(in.Model); err != nil {
		return p, err
	}
	p.parse = ch.ToolParser != ""
	choice, err := parseToolChoice(in.ToolChoice, in.Tools)
	if err != nil {
		return p, err
	}
	switch choice.mode {
	case "none":
		p.parse = false
	case "required", "function":
		// Validated, not constrained: the engine has no guided decoding,
		// so the calls are what the model writes, parsed as for "auto".
		if !p.parse {
			return p, badRequest(`field "tool_choice": %q needs a tool-call parser, and this server has none`, choice.mode)
		}
	}
	p.tools = in.Tools
	msgs, err := normalizeMessages(in.Messages)
	if err != nil {
		return p, err
	}
	addGen := in.AddGenerationPrompt == nil || *in.AddGenerationPrompt
	text, err := ch.Tokenizer.ApplyChatTemplate(tokenizer.ChatContext{
		Messages: msgs, Tools: in.Tools, AddGenerationPrompt: addGen, Extra: in.ChatTemplateKwargs})
	if err != nil {
		return p, badRequest("rendering the chat template: %v", err)
	}
	if p.req.PromptIDs, err = encode(ch.Tokenizer, text); err != nil {
		return p, badRequest("encoding the rendered prompt: %v", err)
	}
	if len(p.req.PromptIDs) == 0 {
		return p, badRequest("the chat template rendered an empty prompt")
	}
	if p.stops, err = s.stopStrings(&in.samplingKnobs); err != nil {
		return p, err
	}
	if p.n, err = in.takeN(); err != nil {
		return p, err
	}
	sp := in.vllmSampling
	sp.Logprobs = nil
	maxName := "max_tokens"
	if in.MaxCompletionTokens != nil {
		sp.MaxTokens = in.MaxCompletionTokens
		maxName = "max_completion_tokens"
	}
	explicit := sp.MaxTokens != nil
	if sp.MaxTokens == nil {
		n := ch.MaxTokens
		sp.MaxTokens = &n
	}
	if p.req.Params, err = sp.params(""); err != nil {
		return p, err
	}
	if err := s.fitContext(&p.req, explicit, maxName); err != nil {
		return p, err
	}
	if in.Logprobs != nil && *in.Logprobs {
		p.req.Params.Logprobs = true
		p.logprobs = true
	}
	// Generation must end at the end of the assistant turn.
	eos := ch.Tokenizer.EOSTokenIDs()
	stops := make([]int32, 0, len(eos)+len(p.req.Params.StopTokenIDs))
	stops = append(append(stops, p.req.Params.StopTokenIDs...), eos...)
	p.req.Params.StopTokenIDs = stops
	p.identify(in.RequestID, in.Priority)
	return p, nil
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatMessage struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type chatLogprobEntry struct {
	Token       string  `json:"token"`
	Logprob     float32 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []int   `json:"top_logprobs"`
}

type chatChoiceLogprobs struct {
	Content []chatLogprobEntry `json:"content"`
}

type chatChoice struct {
	Index        int                 `json:"index"`
	Message      *chatMessage        `json:"message,omitempty"`
	Delta        *chatMessage        `json:"delta,omitempty"`
	Logprobs     *chatChoiceLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
	TokenIDs     *[]int32            `json:"token_ids,omitempty"` // set (maybe to []) on return_token_ids
}

type chatResponse struct {
	ID             string       `json:"id"`
	Object         string       `json:"object"`
	Created        int64        `json:"created"`
	Model          string       `json:"model"`
	Choices        []chatChoice `json:"choices"`
	Usage          *usage       `json:"usage,omitempty"`
	PromptTokenIDs []int32      `json:"prompt_token_ids,omitempty"`
}

// chatResult is the parsed assistant turn.
type chatResult struct {
	content   string
	reasoning string
	calls     []chatToolCall
	finish    string
}

func (s *Server) chatTurn(p preparedChat, out server.TokenOutput) (chatResult, error) {
	ch := s.cfg.Chat
	ids := out.TokenIDs
	if out.StopReason == server.StopEOS && len(ids) > 0 && contains(p.req.Params.StopTokenIDs, ids[len(ids)-1]) {
		ids = ids[:len(ids)-1] // the end-of-turn token is not content
	}
	r := chatResult{finish: finishString(out.StopReason)}
	if !p.parse && !ch.Reasoning {
		text, err := ch.Tokenizer.Decode(ids, p.skipSpecial)
		r.content = trimAtStop(text, p.stops, false)
		return r, err
	}
	// Parsers see special tokens: some formats are written in them.
	text, err := ch.Tokenizer.Decode(ids, false)
	if err != nil {
		return r, err
	}
	// vLLM applies stop strings to the raw text, before any parsing.
	text = trimAtStop(text, p.stops, false)
	format := ch.ToolParser
	if !p.parse {
		format = "hermes" // only used to split reasoning; calls are dropped below
	}
	prs, err := parser.New(format, parser.Options{ThinkAware: ch.Reasoning, Tools: p.tools})
	if err != nil {
		return r, fmt.Errorf("%w: tool parser: %v", server.ErrBadRequest, err)
	}
	res := prs.Parse(text, ids)
	r.reasoning = res.Reasoning
	switch {
	case !p.parse:
		r.content = res.Content
		if len(res.Calls) > 0 || len(res.Errors) > 0 {
			// Not parsing calls: the text is content as written.
			r.content = text
			if ch.Reasoning && res.Reasoning != "" {
				r.content = stripReasoning(text)
			}
		}
	case len(res.Errors) > 0:
		// A malformed call: like vLLM, return the whole text as content
		// rather than a partial set of calls.
		r.content = stripReasoning(text)
		if !ch.Reasoning {
			r.content = text
		}
	default:
		r.content = res.Content
		for _, c := range res.Calls {
			var tc chatToolCall
			tc.ID = "call_" + newRequestID()[:24]
			tc.Type = "function"
			tc.Function.Name = c.Function.Name
			tc.Function.Arguments = c.Function.Arguments
			r.calls = append(r.calls, tc)
		}
		if len(r.calls) > 0 && out.StopReason == server.StopEOS {
			r.finish = "tool_calls"
		}
	}
	return r, nil
}

// stripReasoning drops a leading <think>…</think> block.
func stripReasoning(text string) string {
	const closeTag = "</think>"
	for i := 0; i+len(closeTag) <= len(text); i++ {
		if text[i:i+len(closeTag)] == closeTag {
			rest := text[i+len(closeTag):]
			for len(rest) > 0 && (rest[0] == '\n' || rest[0] == ' ') {
				rest = rest[1:]
			}
			return rest
		}
	}
	return text
}

func contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Chat == nil {
		writeError(w, http.StatusNotFound, "this server has no chat template: /v1/chat/completions is disabled")
		return
	}
	p, err := s.readChat(r.Body)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	if p.stream {
		s.streamChat(w, r, s.streamer(), p)
		return
	}
	outs, ok := s.runSamples(w, r, &p.prepared)
	if !ok {
		return
	}
	if len(outs) > 1 {
		s.writeChatSamples(w, p, outs)
		return
	}
	out := outs[0]
	if _, err := s.cutAtStopString(&out, p.stops, p.skipSpecial); err != nil {
		writeEngineError(w, fmt.Errorf("decoding the output: %w", err))
		return
	}
	turn, err := s.chatTurn(p, out)
	if err != nil {
		writeEngineError(w, fmt.Errorf("decoding the output: %w", err))
		return
	}
	lps, err := s.chatLogprobs(p, out)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	u := &usage{PromptTokens: len(p.req.PromptIDs), CompletionTokens: len(out.TokenIDs),
		TotalTokens: len(p.req.PromptIDs) + len(out.TokenIDs)}
	u.PromptTokensDetails = &struct {
		CachedTokens int `json:"cached_tokens"`
	}{out.CachedTokens}
	resp := chatResponse{ID: "chatcmpl-" + p.req.RequestID, Object: "chat.completion", Created: time.Now().Unix(), Model: s.cfg.Model}
	var tokenIDs *[]int32
	if p.returnIDs {
		resp.PromptTokenIDs = p.req.PromptIDs
		tokenIDs = idsField(out.TokenIDs)
	}
	finish := turn.finish
	msg := &chatMessage{Role: chat.RoleAssistant, Content: &turn.content}
	if len(turn.calls) > 0 && turn.content == "" {
		msg.Content = nil
	}
	if turn.reasoning != "" {
		msg.ReasoningContent = &turn.reasoning
	}
	msg.ToolCalls = turn.calls
	resp.Choices = []chatChoice{{Message: msg, Logprobs: lps, FinishReason: &finish, TokenIDs: tokenIDs}}
	resp.Usage = u
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) chatLogprobs(p preparedChat, out server.TokenOutput) (*chatChoiceLogprobs, error) {
	if !p.logprobs {
		return nil, nil
	}
	return s.chatLogprobEntries(out.TokenIDs, out.Logprobs)
}

// chatLogprobEntries is the logprobs.content of ids.
func (s *Server) chatLogprobEntries(ids []int32, logprobs []float32) (*chatChoiceLogprobs, error) {
	lps := &chatChoiceLogprobs{Content: make([]chatLogprobEntry, len(ids))}
	for i, id := range ids {
		tok, err := s.cfg.Chat.Tokenizer.Decode([]int32{id}, false)
		if err != nil {
			return nil, fmt.Errorf("decoding token %d: %w", id, err)
		}
		b := make([]int, len(tok))
		for j := 0; j < len(tok); j++ {
			b[j] = int(tok[j])
		}
		lps.Content[i] = chatLogprobEntry{Token: tok, Logprob: finiteLogprob(logprobs[i]), Bytes: b, TopLogprobs: []int{}}
	}
	return lps, nil
}

// writeChatSamples answers a non-streaming request with n > 1: a choice
// per sample, usage summed over them.
func (s *Server) writeChatSamples(w http.ResponseWriter, p preparedChat, outs []server.TokenOutput) {
	resp := chatResponse{ID: "chatcmpl-" + p.req.RequestID, Object: "chat.completion", Created: time.Now().Unix(), Model: s.cfg.Model}
	if p.returnIDs {
		resp.PromptTokenIDs = p.req.PromptIDs
	}
	completion, cached := 0, 0
	for i := range outs {
		out := outs[i]
		if _, err := s.cutAtStopString(&out, p.stops, p.skipSpecial); err != nil {
			writeEngineError(w, fmt.Errorf("decoding the output: %w", err))
			return
		}
		turn, err := s.chatTurn(p, out)
		if err != nil {
			writeEngineError(w, fmt.Errorf("decoding the output: %w", err))
			return
		}
		lps, err := s.chatLogprobs(p, out)
		if err != nil {
			writeEngineError(w, err)
			return
		}
		msg := &chatMessage{Role: chat.RoleAssistant, Content: &turn.content, ToolCalls: turn.calls}
		if len(turn.calls) > 0 && turn.content == "" {
			msg.Content = nil
		}
		if turn.reasoning != "" {
			msg.ReasoningContent = &turn.reasoning
		}
		finish := turn.finish
		ch := chatChoice{Index: i, Message: msg, Logprobs: lps, FinishReason: &finish}
		if p.returnIDs {
			ch.TokenIDs = idsField(out.TokenIDs)
		}
		resp.Choices = append(resp.Choices, ch)
		completion += len(out.TokenIDs)
		cached = max(cached, out.CachedTokens)
	}
	u := &usage{PromptTokens: len(p.req.PromptIDs), CompletionTokens: completion, TotalTokens: len(p.req.PromptIDs) + completion}
	u.PromptTokensDetails = &struct {
		CachedTokens int `json:"cached_tokens"`
	}{cached}
	resp.Usage = u
	writeJSON(w, http.StatusOK, resp)
}
