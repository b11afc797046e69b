package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
)

// ---- OpenAI Responses: POST /v1/responses ----------------------------------
//
// Wire types follow openai/openai-go v3 responses.ResponseNewParams (the
// request) and responses.Response (the reply); see doc.go for what is
// honoured and what is refused.

type responsesRequest struct {
	Model        string          `json:"model"`
	Instructions json.RawMessage `json:"instructions"`
	// Input is a string (one user message) or a list of items.
	Input              json.RawMessage   `json:"input"`
	Tools              []responsesTool   `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	TopLogprobs        *int              `json:"top_logprobs"`
	Stream             bool              `json:"stream"`
	Store              *bool             `json:"store"`
	Background         *bool             `json:"background"`
	PreviousResponseID string            `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Prompt             json.RawMessage   `json:"prompt"`
	Include            []string          `json:"include"`
	Metadata           map[string]string `json:"metadata"`
	Text               *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	// Not in OpenAI's API: agentrl's (and vLLM's) own fields.
	TopK      *int   `json:"top_k"`
	Seed      *int64 `json:"seed"`
	RequestID string `json:"request_id"`
	// Not in OpenAI's Responses API: vLLM's penalties, as chat has them.
	PresencePenalty  float64 `json:"presence_penalty"`
	FrequencyPenalty float64 `json:"frequency_penalty"`

	// ns maps the flat names of namespaced function tools to their
	// namespace and name (see flatToolName), set by decodeResponses.
	ns map[string]nsTool
}

// nsTool is a function tool inside a namespace tool.
type nsTool struct{ namespace, name string }

// flatToolName is the name the model sees for function name of namespace
// ns: the two joined by "__", as codex named MCP tools before namespaces
// ("mcp__server__tool"; a namespace that already ends in "__" is not
// given another). A call to it is answered with name and namespace apart,
// as the Responses API reports a namespaced call.
func flatToolName(ns, name string) string {
	if strings.HasSuffix(ns, "__") {
		return ns + name
	}
	return ns + "__" + name
}

// responsesTool is a function tool, flat as Responses has it
// (responses.FunctionToolParam): {"type":"function","name",...}, or a
// namespace: {"type":"namespace","name","description","tools":[function
// tools]} (codex-rs/tools/src/responses_api.rs ResponsesApiNamespace).
type responsesTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name,omitempty"`
	Description  string          `json:"description,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
	Strict       *bool           `json:"strict,omitempty"`
	DeferLoading *bool           `json:"defer_loading,omitempty"`
	Tools        []responsesTool `json:"tools,omitempty"`
}

// responsesItem is an input item (responses.ResponseInputItemUnionParam):
// message, function_call, function_call_output or reasoning.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Namespace string          `json:"namespace"`
	Output    json.RawMessage `json:"output"`
	Summary   []responsesPart `json:"summary"`
}

// responsesPart is a content part: input_text, output_text, summary_text,
// reasoning_text. Text is always written (SDK accumulators need "").
type responsesPart struct {
	Type        string              `json:"type"`
	Text        string              `json:"text"`
	Annotations *[]struct{}         `json:"annotations,omitempty"`
	Logprobs    *[]chatLogprobEntry `json:"logprobs,omitempty"`
	ImageURL    *json.RawMessage    `json:"image_url,omitempty"`
}

// responsesOutputItem is an output item (responses.ResponseOutputItemUnion):
// message, reasoning or function_call.
type responsesOutputItem struct {
	Type      string           `json:"type"`
	ID        string           `json:"id"`
	Status    string           `json:"status,omitempty"`
	Role      string           `json:"role,omitempty"`
	Summary   *[]responsesPart `json:"summary,omitempty"`
	Content   *[]responsesPart `json:"content,omitempty"`
	CallID    string           `json:"call_id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Namespace string           `json:"namespace,omitempty"`
	Arguments *string          `json:"arguments,omitempty"`
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type responsesError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// responsesResponse is responses.Response: the reply, and the snapshot
// that response.created, .in_progress, .completed, .incomplete and
// .failed carry.
type responsesResponse struct {
	ID                string                `json:"id"`
	Object            string                `json:"object"`
	CreatedAt         int64                 `json:"created_at"`
	Status            string                `json:"status"`
	Model             string                `json:"model"`
	Output            []responsesOutputItem `json:"output"`
	Usage             *responsesUsage       `json:"usage"`
	Error             *responsesError       `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Instructions       json.RawMessage   `json:"instructions"`
	Metadata           map[string]string `json:"metadata"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []responsesTool   `json:"tools"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              bool              `json:"store"`
	Text               struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`

	// ns is the request's namespaced tools (responsesRequest.ns), for the
	// function_call items.
	ns map[string]nsTool
}

// builtinResponsesTools are the Responses tool types that OpenAI runs on
// its side (web search, file search, a computer, code, images, MCP, a
// shell): a model served here cannot, so a request that offers one is
// refused rather than answered as if the tool had been there.
var builtinResponsesTools = map[string]bool{
	"web_search": true, "web_search_preview": true, "web_search_2025_08_26": true, "web_search_preview_2025_03_11": true,
	"file_search": true, "computer": true, "computer_use_preview": true, "code_interpreter": true, "image_generation": true,
	"mcp": true, "local_shell": true, "shell": true, "apply_patch": true, "custom": true,
}

// decodeResponses reads a /v1/responses body into a conversation.
func decodeResponses(data []byte) (responsesRequest, conversation, error) {
	var in responsesRequest
	if err := unmarshalBody(data, &in); err != nil {
		return in, conversation{}, err
	}
	c := conversation{model: in.Model, maxName: "max_output_tokens", stopField: "stop", stream: in.Stream,
		requestID: in.RequestID}
	c.sampling.PresencePenalty, c.sampling.FrequencyPenalty = in.PresencePenalty, in.FrequencyPenalty
	c.sampling.MaxTokens = in.MaxOutputTokens
	c.sampling.Temperature, c.sampling.TopP, c.sampling.TopK = in.Temperature, in.TopP, in.TopK
	c.sampling.Seed = in.Seed
	if in.TopLogprobs != nil {
		c.topLogprobs = *in.TopLogprobs
	}
	switch {
	case in.PreviousResponseID != "":
		return in, c, badRequest(`field "previous_response_id": this server keeps no responses (store is not supported): send the whole conversation in "input"`)
	case in.Store != nil && *in.Store:
		return in, c, badRequest(`field "store": this server keeps no responses: send "store": false (or leave it out) and the whole conversation in "input"`)
	case in.Background != nil && *in.Background:
		return in, c, badRequest(`field "background": background responses are not supported`)
	case isSet(in.Conversation):
		return in, c, badRequest(`field "conversation": this server keeps no conversations: send the whole conversation in "input"`)
	case isSet(in.Prompt):
		return in, c, badRequest(`field "prompt": stored prompt templates are not supported`)
	}
	for i, inc := range in.Include {
		switch inc {
		case "reasoning.encrypted_content":
			// Nothing is encrypted here: reasoning items carry their text.
		case "message.output_text.logprobs":
			c.logprobs = true
		default:
			return in, c, badRequest(`field "include[%d]": %q is not supported (only "message.output_text.logprobs", and "reasoning.encrypted_content", a no-op)`, i, inc)
		}
	}
	if in.Text != nil {
		if err := checkResponseFormat("text.format", in.Text.Format); err != nil {
			return in, c, err
		}
	}
	if isSet(in.Instructions) {
		var sys string
		if err := json.Unmarshal(in.Instructions, &sys); err != nil {
			return in, c, badRequest(`field "instructions": expected a string`)
		}
		if sys != "" {
			c.messages = append(c.messages, chat.Message{Role: chat.RoleSystem, Content: sys})
		}
	}
	msgs, err := responsesMessages(in.Input)
	if err != nil {
		return in, c, err
	}
	c.messages = append(c.messages, msgs...)
	if len(c.messages) == 0 || len(msgs) == 0 {
		return in, c, badRequest(`field "input": at least one input item is required`)
	}
	if c.tools, in.ns, err = responsesTools(in.Tools); err != nil {
		return in, c, err
	}
	c.choice, err = responsesToolChoice(in.ToolChoice, c.tools)
	return in, c, err
}

// responsesTools turns the request's tools into the chat path's: function
// tools as they are, a namespace's function tools under their flat names
// (flatToolName, returned mapped back to namespace and name). Built-in
// tools are refused (see builtinResponsesTools), and so is a name given
// twice, which the model could not tell apart.
func responsesTools(tools []responsesTool) ([]chat.ToolSchema, map[string]nsTool, error) {
	var out []chat.ToolSchema
	var ns map[string]nsTool
	field := map[string]string{} // flat name → the field that gave it
	add := func(f, name string, t responsesTool) error {
		if t.Name == "" {
			return badRequest(`field "%s.name": a function tool needs a name`, f)
		}
		if prev, ok := field[name]; ok {
			return badRequest(`field "%s.name": the tool name %q is also given by %s`, f, name, prev)
		}
		field[name] = f
		out = append(out, chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
			Name: name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
		return nil
	}
	kind := func(f string, t responsesTool, inner bool) error {
		switch {
		case t.Type == "function":
			return nil
		case t.Type == "namespace" && !inner:
			return nil
		case builtinResponsesTools[t.Type]:
			return badRequest(`field "%s.type": built-in tool %q is not supported: the model here can only call function tools the client runs`, f, t.Type)
		case inner:
			return badRequest(`field "%s.type": unknown tool type %q in a namespace (only "function")`, f, t.Type)
		}
		return badRequest(`field "%s.type": unknown tool type %q (only "function" and "namespace")`, f, t.Type)
	}
	for i, t := range tools {
		f := fmt.Sprintf("tools[%d]", i)
		if err := kind(f, t, false); err != nil {
			return nil, nil, err
		}
		if t.Type == "function" {
			if err := add(f, t.Name, t); err != nil {
				return nil, nil, err
			}
			continue
		}
		if t.Name == "" {
			return nil, nil, badRequest(`field "%s.name": a namespace needs a name`, f)
		}
		for j, ft := range t.Tools {
			g := fmt.Sprintf("%s.tools[%d]", f, j)
			if err := kind(g, ft, true); err != nil {
				return nil, nil, err
			}
			flat := flatToolName(t.Name, ft.Name)
			if err := add(g, flat, ft); err != nil {
				return nil, nil, err
			}
			if ns == nil {
				ns = map[string]nsTool{}
			}
			ns[flat] = nsTool{namespace: t.Name, name: ft.Name}
		}
	}
	return out, ns, nil
}

// responsesToolChoice reads "auto", "none", "required" or {"type":
// "function", "name": ...} (responses.ToolChoiceFunctionParam).
func responsesToolChoice(raw json.RawMessage, tools []chat.ToolSchema) (toolChoice, error) {
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if !isSet(raw) || raw[0] == '"' {
		return parseToolChoice(raw, tools)
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Name == "" {
		return toolChoice{}, badRequest(`field "tool_choice": expected "auto", "none", "required" or {"type": "function", "name": ...}`)
	}
	for _, t := range tools {
		if t.Function.Name == named.Name {
			return toolChoice{mode: "function", name: named.Name}, nil
		}
	}
	return toolChoice{}, badRequest(`field "tool_choice": function %q is not among "tools"`, named.Name)
}

// responsesMessages turns input (a string, or items) into chat messages:
// a function_call joins the assistant turn before it (or starts one), so
// that consecutive calls are one assistant turn with many tool_calls as
// chat sends them; a reasoning item becomes the reasoning_content of the
// assistant turn that follows it.
func responsesMessages(raw json.RawMessage) ([]chat.Message, error) {
	if !isSet(raw) {
		return nil, badRequest(`field "input": required`)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chat.Message{{Role: chat.RoleUser, Content: text}}, nil
	}
	var items []responsesItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest(`field "input": expected a string or a list of items: %v`, err)
	}
	var msgs []chat.Message
	reasoning := ""
	assistant := func() *chat.Message {
		if n := len(msgs); n > 0 && msgs[n-1].Role == chat.RoleAssistant && reasoning == "" {
			return &msgs[n-1]
		}
		msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, ReasoningContent: reasoning})
		reasoning = ""
		return &msgs[len(msgs)-1]
	}
	for i, it := range items {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message" // EasyInputMessageParam has no type
		}
		switch typ {
		case "message":
			role, err := checkRole(fmt.Sprintf("input[%d].role", i), it.Role)
			if err != nil {
				return nil, err
			}
			if role == chat.RoleTool {
				return nil, badRequest(`field "input[%d].role": "tool" is not a message role here: send a function_call_output item`, i)
			}
			if role == chat.RoleAssistant {
				text, err := responsesText(fmt.Sprintf("input[%d].content", i), it.Content)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, chat.Message{Role: role, Content: text, ReasoningContent: reasoning})
				reasoning = ""
				continue
			}
			text, parts, err := responsesUserContent(fmt.Sprintf("input[%d].content", i), it.Content)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, chat.Message{Role: role, Content: text, Parts: parts})
		case "function_call":
			if it.Name == "" {
				return nil, badRequest(`field "input[%d].name": a function_call needs a name`, i)
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(it.Arguments), &obj) != nil {
				return nil, badRequest(`field "input[%d].arguments": not a JSON object: %.100q`, i, it.Arguments)
			}
			name := it.Name
			if it.Namespace != "" {
				// The name the model wrote: see flatToolName.
				name = flatToolName(it.Namespace, it.Name)
			}
			a := assistant()
			a.ToolCalls = append(a.ToolCalls, chat.ToolCall{ID: it.CallID, Type: "function",
				Function: chat.FunctionCall{Name: name, Arguments: it.Arguments, ArgumentsAsObject: true}})
		case "function_call_output":
			// The output is a string or a list of input_text and
			// input_image parts (a tool that returns a screenshot).
			out, parts, err := responsesUserContent(fmt.Sprintf("input[%d].output", i), it.Output)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, chat.Message{Role: chat.RoleTool, Content: out, Parts: parts, ToolCallID: it.CallID})
		case "reasoning":
			var parts []responsesPart
			if isSet(it.Content) {
				if err := json.Unmarshal(it.Content, &parts); err != nil {
					return nil, badRequest(`field "input[%d].content": expected a list of reasoning_text parts`, i)
				}
			}
			if len(parts) == 0 {
				parts = it.Summary
			}
			texts := make([]string, len(parts))
			for j, p := range parts {
				texts[j] = p.Text
			}
			reasoning += strings.Join(texts, "\n")
		default:
			return nil, badRequest(`field "input[%d].type": item type %q is not supported (known: message, function_call, function_call_output, reasoning)`, i, typ)
		}
	}
	return msgs, nil
}

// responsesText is a message's content or a call's output: a string, or
// text parts (input_text, output_text, text, refusal) joined by "\n" as
// normalizeMessages joins chat's parts. Images (see responsesUserContent)
// and files are refused here.
func responsesText(field string, raw json.RawMessage) (string, error) {
	if !isSet(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []responsesPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("field %q: expected a string or a list of content parts", field)
	}
	texts := make([]string, len(parts))
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "refusal":
			texts[j] = p.Text
		default:
			return "", badRequest("field %q: content part type %q is not supported (only text: input_text, output_text)", fmt.Sprintf("%s[%d].type", field, j), p.Type)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// responsesUserContent is a user, system or developer message's content:
// its text, or, when it has input_image parts, its text and image parts in
// order, which the one chat path passes to a vision-language template
// (Chat.Images) or refuses naming the part, as it does chat completions'
// image_url parts. An input_image's image_url is a string (a data URL; the
// processor decides which sources it reads); file_id is not supported.
func responsesUserContent(field string, raw json.RawMessage) (string, []chat.ContentPart, error) {
	var parts []responsesPart
	if json.Unmarshal(raw, &parts) != nil || !slices.ContainsFunc(parts, func(p responsesPart) bool { return p.Type == "input_image" }) {
		text, err := responsesText(field, raw)
		return text, nil, err
	}
	out := make([]chat.ContentPart, len(parts))
	for j, p := range parts {
		switch p.Type {
		case "input_text", "text":
			out[j] = chat.ContentPart{Type: "text", Text: p.Text}
		case "input_image":
			var url string
			if p.ImageURL == nil || json.Unmarshal(*p.ImageURL, &url) != nil || url == "" {
				return "", nil, badRequest(`field "%s[%d].image_url": an input_image needs an image_url string (file_id is not supported)`, field, j)
			}
			out[j] = chat.ImagePart(chat.Image{URL: url})
		default:
			return "", nil, badRequest("field %q: content part type %q is not supported with images (only input_text and input_image)", fmt.Sprintf("%s[%d].type", field, j), p.Type)
		}
	}
	return "", out, nil
}

// responsesHead is the reply's skeleton: everything but output, status,
// usage and the error, echoing the request as OpenAI echoes it.
func (s *Server) responsesHead(p preparedChat, in responsesRequest) responsesResponse {
	r := responsesResponse{ID: "resp_" + p.callID, Object: "response", CreatedAt: time.Now().Unix(), Model: s.cfg.Model,
		Output: []responsesOutputItem{}, Instructions: in.Instructions, Metadata: in.Metadata, ParallelToolCalls: true,
		ToolChoice: in.ToolChoice, Tools: in.Tools, Temperature: in.Temperature, TopP: in.TopP, MaxOutputTokens: in.MaxOutputTokens, ns: in.ns}
	if !isSet(r.Instructions) {
		r.Instructions = json.RawMessage("null")
	}
	if !isSet(r.ToolChoice) {
		r.ToolChoice = json.RawMessage(`"auto"`)
	}
	if r.Tools == nil {
		r.Tools = []responsesTool{}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	if in.ParallelToolCalls != nil {
		r.ParallelToolCalls = *in.ParallelToolCalls
	}
	r.Text.Format.Type = "text"
	return r
}

// responsesStatus sets the reply's status from how the turn stopped:
// completed, or incomplete at the budget (max_output_tokens) or when
// the engine aborted it.
func responsesStatus(r *responsesResponse, t turnResult) {
	r.Status = "completed"
	switch t.stop {
	case server.StopLength:
		r.Status = "incomplete"
		r.IncompleteDetails = &struct {
			Reason string `json:"reason"`
		}{"max_output_tokens"}
	case server.StopAbort:
		r.Status = "incomplete"
	}
	u := &responsesUsage{InputTokens: t.usage.prompt, OutputTokens: t.usage.completion, TotalTokens: t.usage.prompt + t.usage.completion}
	u.InputTokensDetails.CachedTokens = t.usage.cached
	r.Usage = u
}

func responsesReasoningItem(text string) responsesOutputItem {
	return responsesOutputItem{Type: "reasoning", ID: "rs_" + newCallID(), Summary: &[]responsesPart{},
		Content: &[]responsesPart{{Type: "reasoning_text", Text: text}}}
}

func responsesMessageItem(text, status string) responsesOutputItem {
	return responsesOutputItem{Type: "message", ID: "msg_" + newCallID(), Status: status, Role: chat.RoleAssistant,
		Content: &[]responsesPart{outputText(text)}}
}

func outputText(text string) responsesPart {
	return responsesPart{Type: "output_text", Text: text, Annotations: &[]struct{}{}, Logprobs: &[]chatLogprobEntry{}}
}

// setMessageLogprobs gives the message among items the logprobs lps:
// with include message.output_text.logprobs, every token of the turn
// (its reasoning's and calls' too: the tokens are not split by item).
func setMessageLogprobs(items []responsesOutputItem, lps []chatLogprobEntry) {
	for i := range items {
		if items[i].Type == "message" && items[i].Content != nil && len(*items[i].Content) > 0 {
			parts := append([]responsesPart{}, *items[i].Content...)
			l := append([]chatLogprobEntry{}, lps...)
			parts[0].Logprobs = &l
			items[i].Content = &parts
		}
	}
}

// responsesCallItem is call c as a function_call item; a call to a
// namespaced tool (its flat name in ns) names the tool and its namespace
// apart, as the Responses API does.
func responsesCallItem(c turnCall, status string, ns map[string]nsTool) responsesOutputItem {
	args := c.arguments
	item := responsesOutputItem{Type: "function_call", ID: "fc_" + c.id, Status: status, CallID: "call_" + c.id, Name: c.name, Arguments: &args}
	if t, ok := ns[c.name]; ok {
		item.Name, item.Namespace = t.name, t.namespace
	}
	return item
}

// responsesOutput is a finished turn as output items: reasoning, the
// message, then the calls (the order the stream sends them in).
func responsesOutput(t turnResult, ns map[string]nsTool) []responsesOutputItem {
	out := []responsesOutputItem{}
	if t.reasoning != "" {
		out = append(out, responsesReasoningItem(t.reasoning))
	}
	if t.content != "" || len(t.calls) == 0 {
		out = append(out, responsesMessageItem(t.content, "completed"))
	}
	for _, c := range t.calls {
		out = append(out, responsesCallItem(c, "completed", ns))
	}
	return out
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Chat == nil {
		writeError(w, http.StatusNotFound, "this server has no chat template: /v1/responses is disabled")
		return
	}
	in, p, err := s.readResponses(r)
	defer p.hook.end()
	if err != nil {
		writeRequestError(w, err)
		return
	}
	w.Header().Set("x-request-id", p.callID)
	head := s.responsesHead(p, in)
	if p.stream {
		s.streamResponses(w, r, s.streamer(), p, head)
		return
	}
	out, err := s.engine.Generate(r.Context(), p.req)
	if err == nil {
		err = checkOutput(out, p.req)
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	turn, out, err := s.finishTurn(p, out)
	if err == nil {
		err = p.hook.record(0, out, turn)
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	head.Output = responsesOutput(turn, head.ns)
	if p.logprobs {
		lps, err := s.chatLogprobEntries(out.TokenIDs, out.Logprobs, out.TopLogprobs)
		if err != nil {
			writeEngineError(w, fmt.Errorf("decoding the output: %w", err))
			return
		}
		setMessageLogprobs(head.Output, lps.Content)
	}
	responsesStatus(&head, turn)
	writeJSON(w, http.StatusOK, head)
}

func (s *Server) readResponses(r *http.Request) (responsesRequest, preparedChat, error) {
	data, err := readBody(r)
	if err != nil {
		return responsesRequest{}, preparedChat{}, err
	}
	in, c, err := decodeResponses(data)
	if err != nil {
		return in, preparedChat{}, err
	}
	if c.sessionKey == "" {
		c.sessionKey = s.sessionKey(r.Header, data)
	}
	c.hook = s.newHook(r, data, DialectResponses)
	p, err := s.prepareConversation(c)
	return in, p, err
}
