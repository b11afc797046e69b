package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
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
	// Images, when set, accepts image_url parts on /v1/chat/completions
	// for a vision-language model: the parts are kept for the chat
	// template, each image's block is expanded on the prompt's ids, and
	// the images go to the engine with the request
	// (server.GenerateRequest.Vision). nil refuses image parts.
	Images ImageProcessor
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

func (s *Server) parseChat(data []byte) (preparedChat, error) {
	c, err := decodeChat(data)
	if err != nil {
		return preparedChat{}, err
	}
	return s.prepareConversation(c)
}

// readChat reads and prepares a /v1/chat/completions request; the session
// key is read from r's headers and body (Config.SessionKeys).
func (s *Server) readChat(r *http.Request) (preparedChat, error) {
	// No token ids here: the body is read whole, in one buffer.
	data, err := readBody(r)
	if err != nil {
		return preparedChat{}, err
	}
	c, err := decodeChat(data)
	if err != nil {
		return preparedChat{}, err
	}
	if c.sessionKey == "" {
		c.sessionKey = s.sessionKey(r.Header, data)
	}
	c.hook = s.newHook(r, data, DialectChat)
	return s.prepareConversation(c)
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
	Token       string         `json:"token"`
	Logprob     float32        `json:"logprob"`
	Bytes       []int          `json:"bytes"`
	TopLogprobs []chatTopEntry `json:"top_logprobs"`
}

// chatTopEntry is one alternative in OpenAI's logprobs shape.
type chatTopEntry struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
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

// chatTurn decodes and parses out (already cut at stop strings) into a
// turn; finishTurn adds the matched stop and the usage.
func (s *Server) chatTurn(p preparedChat, out server.TokenOutput) (turnResult, error) {
	ch := s.cfg.Chat
	ids := out.TokenIDs
	if out.StopReason == server.StopEOS && len(ids) > 0 && contains(p.req.Params.StopTokenIDs, ids[len(ids)-1]) {
		ids = ids[:len(ids)-1] // the end-of-turn token is not content
	}
	r := turnResult{stop: out.StopReason}
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
			r.calls = append(r.calls, turnCall{id: newCallID(), name: c.Function.Name, arguments: c.Function.Arguments})
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
	p, err := s.readChat(r)
	defer p.hook.end()
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
	s.writeChatSamples(w, p, outs)
}

// chatToolCalls are a turn's calls in chat's shape (index set when
// streamed, from first).
func chatToolCalls(calls []turnCall, indexed bool, first int) []chatToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]chatToolCall, len(calls))
	for i, c := range calls {
		tc := chatToolCall{ID: "call_" + c.id, Type: "function"}
		if indexed {
			n := first + i
			tc.Index = &n
		}
		tc.Function.Name, tc.Function.Arguments = c.name, c.arguments
		out[i] = tc
	}
	return out
}

// chatAnswer is a finished turn as chat's assistant message.
func chatAnswer(t turnResult) *chatMessage {
	msg := &chatMessage{Role: chat.RoleAssistant, Content: &t.content, ToolCalls: chatToolCalls(t.calls, false, 0)}
	if len(t.calls) > 0 && t.content == "" {
		msg.Content = nil
	}
	if t.reasoning != "" {
		msg.ReasoningContent = &t.reasoning
	}
	return msg
}

func (s *Server) chatLogprobs(p preparedChat, out server.TokenOutput) (*chatChoiceLogprobs, error) {
	if !p.logprobs {
		return nil, nil
	}
	return s.chatLogprobEntries(out.TokenIDs, out.Logprobs, out.TopLogprobs)
}

// chatLogprobEntries is the logprobs.content of ids, with each token's
// alternatives from tops (nil: none asked for, an empty list each).
func (s *Server) chatLogprobEntries(ids []int32, logprobs []float32, tops [][]server.TopLogprob) (*chatChoiceLogprobs, error) {
	lps := &chatChoiceLogprobs{Content: make([]chatLogprobEntry, len(ids))}
	for i, id := range ids {
		tok, b, err := s.tokenBytes(id)
		if err != nil {
			return nil, err
		}
		e := chatLogprobEntry{Token: tok, Logprob: finiteLogprob(logprobs[i]), Bytes: b, TopLogprobs: []chatTopEntry{}}
		if tops != nil {
			for _, alt := range tops[i] {
				at, ab, err := s.tokenBytes(alt.TokenID)
				if err != nil {
					return nil, err
				}
				e.TopLogprobs = append(e.TopLogprobs, chatTopEntry{Token: at, Logprob: finiteLogprob(alt.Logprob), Bytes: ab})
			}
		}
		lps.Content[i] = e
	}
	return lps, nil
}

// tokenBytes is token id's own text and its bytes (OpenAI's logprob
// entry: the text may be part of a character, the bytes are exact).
func (s *Server) tokenBytes(id int32) (string, []int, error) {
	tok, err := s.cfg.Chat.Tokenizer.Decode([]int32{id}, false)
	if err != nil {
		return "", nil, fmt.Errorf("decoding token %d: %w", id, err)
	}
	b := make([]int, len(tok))
	for j := 0; j < len(tok); j++ {
		b[j] = int(tok[j])
	}
	return tok, b, nil
}

// writeChatSamples answers a non-streaming request: a choice per sample,
// usage summed over them.
func (s *Server) writeChatSamples(w http.ResponseWriter, p preparedChat, outs []server.TokenOutput) {
	resp := chatResponse{ID: "chatcmpl-" + p.callID, Object: "chat.completion", Created: time.Now().Unix(), Model: s.cfg.Model}
	if p.returnIDs {
		resp.PromptTokenIDs = p.req.PromptIDs
	}
	completion, cached := 0, 0
	for i := range outs {
		turn, out, err := s.finishTurn(p, outs[i])
		if err != nil {
			writeEngineError(w, err)
			return
		}
		lps, err := s.chatLogprobs(p, out)
		if err != nil {
			writeEngineError(w, err)
			return
		}
		if err := p.hook.record(i, out, turn); err != nil {
			writeEngineError(w, err)
			return
		}
		finish := chatFinish(turn)
		ch := chatChoice{Index: i, Message: chatAnswer(turn), Logprobs: lps, FinishReason: &finish}
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
