package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tokenizer/jinja"
)

// ChatContext is the input of a chat template: what transformers'
// apply_chat_template receives.
type ChatContext struct {
	Messages            []chat.Message
	Tools               []chat.ToolSchema
	AddGenerationPrompt bool
	Extra               map[string]any // extra template variables, e.g. "enable_thinking": false
}

// ErrTemplateDelta is wrapped by EncodeDelta errors: the template does not
// let the new messages be appended as a suffix (see EncodeDelta).
var ErrTemplateDelta = errors.New("tokenizer: cannot encode delta")

// ApplyChatTemplate renders the default chat template like transformers'
// apply_chat_template(messages, tools=..., add_generation_prompt=...,
// tokenize=False, **extra). Messages and tools become dicts with only the
// keys that are set; tool-call arguments given as a JSON object become an
// ordered dict, as a string they stay a string. A raise_exception in the
// template is returned as a *jinja.Exception.
func (t *Tokenizer) ApplyChatTemplate(c ChatContext) (string, error) {
	vars, err := t.chatVars(c)
	if err != nil {
		return "", err
	}
	defer putVars(vars)
	return t.render(vars)
}

// varsPool recycles the variables maps of renders: Render neither keeps
// nor changes its map, so a map can be cleared and reused once its render
// returned.
var varsPool = sync.Pool{New: func() any { return make(map[string]any, 16) }}

func putVars(m map[string]any) {
	if len(m) > 64 { // a render with many extra variables: let it go
		return
	}
	clear(m)
	varsPool.Put(m)
}

// EncodeChat is Encode(ApplyChatTemplate(c)).
func (t *Tokenizer) EncodeChat(c ChatContext) ([]int32, error) {
	s, err := t.ApplyChatTemplate(c)
	if err != nil {
		return nil, err
	}
	return t.EncodeChecked(s)
}

// ApplyChatTemplateJSON renders a context given as JSON: {"messages": [...],
// "tools": [...], "add_generation_prompt": bool, ...}; every other key is an
// extra template variable. Values reach the template exactly as written
// (key order, numbers, any message shape), which is what debugging tools
// and golden tests need.
func (t *Tokenizer) ApplyChatTemplateJSON(contextJSON []byte) (string, error) {
	v, err := jinja.FromJSON(contextJSON)
	if err != nil {
		return "", fmt.Errorf("tokenizer: chat context: %w", err)
	}
	d, ok := v.(*jinja.Dict)
	if !ok {
		return "", fmt.Errorf("tokenizer: chat context must be a JSON object")
	}
	msgs, ok := d.Get("messages")
	if _, isList := msgs.([]any); !ok || !isList {
		return "", fmt.Errorf("tokenizer: chat context needs a \"messages\" list")
	}
	vars := t.baseVars()
	defer putVars(vars)
	vars["messages"] = msgs
	for _, k := range d.Keys() {
		val, _ := d.Get(k)
		if k == "add_generation_prompt" {
			b, ok := val.(bool)
			if !ok && val != nil {
				return "", fmt.Errorf("tokenizer: chat context: add_generation_prompt must be a boolean")
			}
			vars[k] = b
			continue
		}
		vars[k] = val
	}
	return t.render(vars)
}

// render picks the template as transformers does when tokenizer_config.json
// has named templates: "tool_use" when tools are given and it exists, else
// the default one.
func (t *Tokenizer) render(vars map[string]any) (string, error) {
	tmpl, err := t.template(vars)
	if err != nil {
		return "", err
	}
	s, err := tmpl.Render(vars)
	if err != nil {
		return "", fmt.Errorf("tokenizer: chat template: %w", err)
	}
	return s, nil
}

// renderAppend is render writing after dst.
func (t *Tokenizer) renderAppend(dst []byte, vars map[string]any) ([]byte, error) {
	tmpl, err := t.template(vars)
	if err != nil {
		return dst, err
	}
	out, err := tmpl.AppendRender(dst, vars)
	if err != nil {
		return dst, fmt.Errorf("tokenizer: chat template: %w", err)
	}
	return out, nil
}

func (t *Tokenizer) template(vars map[string]any) (*jinja.Template, error) {
	tmpl, tmplErr := t.chat.def, t.chat.defErr
	if tools, _ := vars["tools"].([]any); tools != nil {
		if tu, ok := t.chat.named["tool_use"]; ok {
			tmpl, tmplErr = tu, t.chat.errs["tool_use"]
		}
	}
	if tmplErr != nil {
		if errors.Is(tmplErr, ErrNoChatTemplate) {
			return nil, tmplErr
		}
		return nil, fmt.Errorf("tokenizer: chat template: %w", tmplErr)
	}
	return tmpl, nil
}

// baseVars are the variables transformers always passes: tools and
// documents (None unless given), add_generation_prompt, and the special
// tokens.
func (t *Tokenizer) baseVars() map[string]any {
	vars := varsPool.Get().(map[string]any)
	for k, v := range t.config.specials {
		vars[k] = v
	}
	vars["tools"] = nil
	vars["documents"] = nil
	vars["add_generation_prompt"] = false
	return vars
}

func (t *Tokenizer) chatVars(c ChatContext) (map[string]any, error) {
	msgs, err := messagesValue(c.Messages)
	if err != nil {
		return nil, err
	}
	tools, err := t.toolsValue(c.Tools)
	if err != nil {
		return nil, err
	}
	return t.templateVars(c, msgs, tools), nil
}

// templateVars assembles the variables of one render from converted
// messages and tools; c supplies Extra, AddGenerationPrompt and whether
// tools were given. Extra cannot override messages or
// add_generation_prompt, but fills tools when c has none.
func (t *Tokenizer) templateVars(c ChatContext, msgs, tools []any) map[string]any {
	vars := t.baseVars()
	for k, v := range c.Extra {
		vars[k] = v
	}
	vars["messages"] = msgs
	if c.Tools != nil {
		vars["tools"] = tools
	}
	vars["add_generation_prompt"] = c.AddGenerationPrompt
	return vars
}

// messagesValue converts messages to template values: dicts with only the
// keys that are set, in the order chat.Message writes them, tool-call
// arguments given as an object as an ordered dict.
func messagesValue(msgs []chat.Message) ([]any, error) {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		d, err := messageValue(m)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: messages[%d]: %w", i, err)
		}
		out[i] = d
	}
	return out, nil
}

func messageValue(m chat.Message) (*jinja.Dict, error) {
	n := 2 // role, content
	for _, set := range [...]bool{m.ReasoningContent != "", len(m.ToolCalls) > 0, m.ToolCallID != "", m.Name != ""} {
		if set {
			n++
		}
	}
	d := jinja.NewDictCap(n)
	d.Set("role", m.Role)
	switch {
	case len(m.Parts) > 0:
		parts := make([]any, len(m.Parts))
		for i, p := range m.Parts {
			if len(p.Raw) > 0 {
				v, err := jinja.FromJSON(p.Raw)
				if err != nil {
					return nil, fmt.Errorf("content[%d]: %w", i, err)
				}
				parts[i] = v
				continue
			}
			pd := jinja.NewDictCap(2)
			if p.Image != nil {
				// An image made in memory (a dataset's bytes, a tool's
				// crop): the Qwen-VL templates test for the type or the
				// "image" key and place a placeholder; the pixels are not
				// the template's business.
				pd.Set("type", "image")
				pd.Set("image", "")
				parts[i] = pd
				continue
			}
			pd.Set("type", p.Type)
			pd.Set("text", p.Text)
			parts[i] = pd
		}
		d.Set("content", parts)
	case m.ContentIsNull() && m.Content == "":
		d.Set("content", nil)
	case m.Content == "":
		// "" or no content key at all: chat.Message remembers which but
		// only tells through its JSON. Marshal just the content flags.
		if hasContentKey(m) {
			d.Set("content", "")
		}
	default:
		d.Set("content", m.Content)
	}
	if m.ReasoningContent != "" {
		d.Set("reasoning_content", m.ReasoningContent)
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			cd := jinja.NewDictCap(3)
			if c.ID != "" {
				cd.Set("id", c.ID)
			}
			typ := c.Type
			if typ == "" {
				typ = "function"
			}
			cd.Set("type", typ)
			fd := jinja.NewDictCap(2)
			fd.Set("name", c.Function.Name)
			if c.Function.ArgumentsAsObject {
				args, err := jinja.FromJSON([]byte(c.Function.Arguments))
				if err != nil {
					return nil, fmt.Errorf("tool_calls[%d] %q: arguments are not valid JSON: %w", i, c.Function.Name, err)
				}
				fd.Set("arguments", args)
			} else {
				fd.Set("arguments", c.Function.Arguments)
			}
			cd.Set("function", fd)
			calls[i] = cd
		}
		d.Set("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		d.Set("tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		d.Set("name", m.Name)
	}
	return d, nil
}

// hasContentKey reports whether m, whose Content is "", writes a "content"
// key in JSON (it does unless it was read from JSON without one).
func hasContentKey(m chat.Message) bool {
	probe := m // keeps the unexported content flags
	probe.Role, probe.Parts, probe.ReasoningContent, probe.ToolCalls, probe.ToolCallID, probe.Name = "", nil, "", nil, "", ""
	b, err := probe.MarshalJSON()
	return err != nil || string(b) != `{"role":""}`
}

// toolValue converts a tool schema the way chat.ToolSchema writes it.
func toolValue(s chat.ToolSchema) (*jinja.Dict, error) {
	typ := s.Type
	if typ == "" {
		typ = "function"
	}
	fd := jinja.NewDictCap(4)
	fd.Set("name", s.Function.Name)
	if s.Function.Description != "" {
		fd.Set("description", s.Function.Description)
	}
	if len(s.Function.Parameters) > 0 {
		p, err := jinja.FromJSON(s.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		fd.Set("parameters", p)
	}
	if s.Function.Strict != nil {
		fd.Set("strict", *s.Function.Strict)
	}
	d := jinja.NewDictCap(2)
	d.Set("type", typ)
	d.Set("function", fd)
	return d, nil
}

// markerValues are the template values of the marker-only synthetic
// messages.
var markerValues = struct{ system, user, assistant *jinja.Dict }{
	system:    markerValue(chat.RoleSystem, markSystem),
	user:      markerValue(chat.RoleUser, markUser),
	assistant: markerValue(chat.RoleAssistant, markAssistant),
}

func markerValue(role, content string) *jinja.Dict {
	d := jinja.NewDictCap(2)
	d.Set("role", role)
	d.Set("content", content)
	jinja.Freeze(d) // shared by every EncodeDelta
	return d
}

// Markers stand in for history in the synthetic context of EncodeDelta.
// Plain words survive templates that trim or otherwise touch content.
const (
	markSystem    = "AgentrlSystemMarker"
	markUser      = "AgentrlUserMarker"
	markAssistant = "AgentrlAssistantMarker"
	markLast      = "AgentrlLastMarker"
)

// EncodeDelta returns the ids to append after the model's last sampled turn
// so the sequence continues with added (non-model messages: tool results,
// user turns): template glue the model did not generate (e.g. the "\n" after
// <|im_end|>), the added messages, and — when c.AddGenerationPrompt — the
// generation prompt. c.Messages is the conversation so far; history is never
// re-tokenized.
//
// The template is rendered on a fixed synthetic context shaped like the end
// of the conversation (a system message if c has one, a user turn, and the
// last message with its content replaced by a marker), once alone and once
// with added; the delta is what follows the end of the last turn. When the
// last message is an assistant turn, its end is the first end-of-turn token
// (EOSTokenIDs) after its content, which is where the model stopped.
//
// Templates are not always append-only. Qwen3 renders the last assistant
// turn with an empty "<think>\n\n</think>\n\n" block but drops that block
// once another message follows. That edit lies inside the model's own turn,
// which the model sampled and which is kept as sampled; EncodeDelta
// accepts it when the text before the turn and the turn's ending are the
// same in both renders. Any other difference before the cut is an
// ErrTemplateDelta error, never a silently wrong sequence: for example a
// second tool result added after a tool message whose closing glue the
// template only emits after the last tool message in a row.
func (t *Tokenizer) EncodeDelta(c ChatContext, added []chat.Message) ([]int32, error) {
	s, err := t.DeltaText(c, added)
	if err != nil {
		return nil, err
	}
	return t.EncodeChecked(s)
}

// DeltaText is the text whose ids EncodeDelta returns.
func (t *Tokenizer) DeltaText(c ChatContext, added []chat.Message) (string, error) {
	if len(c.Messages) == 0 {
		return "", fmt.Errorf("%w: the conversation is empty", ErrTemplateDelta)
	}
	// The synthetic messages are converted once for both renders; the
	// marker-only ones are the same every call and shared (templates
	// cannot modify values).
	baseVals := make([]any, 0, 4+len(added))
	if c.Messages[0].Role == chat.RoleSystem {
		baseVals = append(baseVals, markerValues.system)
	}
	baseVals = append(baseVals, markerValues.user)
	last := c.Messages[len(c.Messages)-1]
	afterModel := last.Role == chat.RoleAssistant
	var lastVal *jinja.Dict
	var err error
	switch {
	case !afterModel:
		baseVals = append(baseVals, markerValues.assistant)
		lastVal, err = messageValue(chat.Message{Role: last.Role, Content: markLast, ToolCallID: last.ToolCallID, Name: last.Name})
	case len(last.ToolCalls) == 0:
		lastVal = markerValues.assistant
	default:
		lastVal, err = messageValue(chat.Message{Role: chat.RoleAssistant, Content: markAssistant, ToolCalls: last.ToolCalls})
	}
	if err != nil {
		return "", fmt.Errorf("%w: rendering the context: tokenizer: messages[%d]: %w", ErrTemplateDelta, len(baseVals), err)
	}
	baseVals = append(baseVals, lastVal)
	tools, err := t.toolsValue(c.Tools)
	if err != nil {
		return "", fmt.Errorf("%w: rendering the context: %w", ErrTemplateDelta, err)
	}
	vars := t.templateVars(ChatContext{Tools: c.Tools, Extra: c.Extra}, baseVals, tools)
	defer putVars(vars)
	// Both renders go into one pooled buffer: they are only compared and
	// cut, and just the delta becomes a string.
	bufp := deltaBufs.Get().(*[]byte)
	defer func() {
		if cap(*bufp) <= 1<<20 {
			deltaBufs.Put(bufp)
		}
	}()
	buf, err := t.renderAppend((*bufp)[:0], vars)
	*bufp = buf
	if err != nil {
		return "", fmt.Errorf("%w: rendering the context: %w", ErrTemplateDelta, err)
	}
	n0 := len(buf)
	all := baseVals // before is rendered; the capacity left is for added
	for i, m := range added {
		v, err := messageValue(m)
		if err != nil {
			return "", fmt.Errorf("%w: rendering the added messages: tokenizer: added[%d]: %w", ErrTemplateDelta, i, err)
		}
		all = append(all, v)
	}
	// Render never keeps or changes vars, so the second render reuses the
	// map; messages and add_generation_prompt take precedence over Extra
	// exactly as in templateVars.
	vars["messages"] = all
	vars["add_generation_prompt"] = c.AddGenerationPrompt
	buf, err = t.renderAppend(buf, vars)
	*bufp = buf
	if err != nil {
		return "", fmt.Errorf("%w: rendering the added messages: %w", ErrTemplateDelta, err)
	}
	before, after := buf[:n0:n0], buf[n0:]
	if !afterModel {
		if !bytes.HasPrefix(after, before) {
			return "", fmt.Errorf("%w: the template renders the %s message differently once more messages follow", ErrTemplateDelta, last.Role)
		}
		return string(after[len(before):]), nil
	}
	cut0, a0, err := t.turnEnd(before)
	if errors.Is(err, errNoTurnEnd) {
		return t.implicitTurnEndDelta(before, after, len(added))
	}
	if err != nil {
		return "", err
	}
	cut1, a1, err := t.turnEnd(after)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(before[:cut0], after[:cut1]) {
		// Allowed only inside the model's turn, before its content.
		u0 := bytes.Index(before, []byte(markUser)) + len(markUser)
		u1 := bytes.Index(after, []byte(markUser)) + len(markUser)
		if !bytes.Equal(before[:u0], after[:u1]) || !bytes.Equal(before[a0:cut0], after[a1:cut1]) {
			return "", fmt.Errorf("%w: the template renders earlier messages differently once %d more follow", ErrTemplateDelta, len(added))
		}
	}
	return string(after[cut1:]), nil
}

var errNoTurnEnd = fmt.Errorf("%w: no end-of-turn token after the assistant turn", ErrTemplateDelta)

// implicitTurnEndDelta is the delta of a template whose assistant turn has
// no end token of its own (GLM-4.5 to GLM-5): the model ends its turn by
// sampling the token that opens the next message (<|observation|> before
// a tool result, <|user|> before a user turn), and the template writes
// that token there. The sampled token is already in the stream, so the
// delta starts after it: the tokens are the ones verl's GLM rule builds
// (it drops the sampled token and appends the message with its opener).
// The render with the added messages must extend the one without them and
// continue with an end-of-turn token.
func (t *Tokenizer) implicitTurnEndDelta(before, after []byte, added int) (string, error) {
	if !bytes.HasPrefix(after, before) {
		return "", fmt.Errorf("%w: the template renders earlier messages differently once %d more follow", ErrTemplateDelta, added)
	}
	rest := after[len(before):]
	for _, id := range t.eos {
		if tok := t.tokens.at(int(id)); tok != "" && bytes.HasPrefix(rest, []byte(tok)) {
			return string(rest[len(tok):]), nil
		}
	}
	return "", errNoTurnEnd
}

// deltaBufs recycles the output buffers of DeltaText's two renders.
var deltaBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// turnEnd finds the end of the synthetic assistant turn: the end of the
// first end-of-turn token after its marker. It also returns where the marker
// starts.
func (t *Tokenizer) turnEnd(s []byte) (cut, marker int, err error) {
	marker = lastIndex(s, []byte(markAssistant))
	if marker < 0 {
		return 0, 0, fmt.Errorf("%w: the template does not render the assistant content", ErrTemplateDelta)
	}
	rest := s[marker+len(markAssistant):]
	best := -1
	for _, id := range t.eos {
		tok := t.tokens.at(int(id))
		if i := bytes.Index(rest, []byte(tok)); i >= 0 && (best < 0 || i < best || (i == best && len(tok) > cut)) {
			best, cut = i, len(tok)
		}
	}
	if best < 0 {
		return 0, 0, errNoTurnEnd
	}
	return marker + len(markAssistant) + best + cut, marker, nil
}

// lastIndex is bytes.LastIndex, searching forwards: the marker sits
// near the end of a render of a few KB, and a forward Index runs on the
// vectorized search where LastIndex hashes byte by byte.
func lastIndex(s, sep []byte) int {
	last := -1
	for i := 0; i <= len(s); {
		j := bytes.Index(s[i:], sep)
		if j < 0 {
			break
		}
		last = i + j
		i = last + 1
	}
	return last
}
