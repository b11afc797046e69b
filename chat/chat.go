package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Roles used by OpenAI-style chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat turn in the OpenAI shape.
//
// Content is the plain text of the turn. OpenAI also allows content to be null
// (an assistant turn that only calls tools) or a list of typed parts; both
// forms are remembered so that a message read from JSON is written back the
// same way. Code that builds messages by hand just sets Content.
type Message struct {
	Role             string
	Content          string
	Parts            []ContentPart // set instead of Content when content was a list of parts
	ReasoningContent string
	ToolCalls        []ToolCall
	ToolCallID       string
	Name             string

	// contentNull records that the JSON had "content": null, so that
	// marshalling writes it back instead of "".
	contentNull bool
	// contentAbsent records that the JSON had no content key at all.
	contentAbsent bool
}

// ContentPart is one element of a list-valued content ("type": "text", ...).
// Raw keeps the exact JSON of the part so that unknown part types (images,
// audio) survive a round trip.
//
// Image is set on image parts (OpenAI's "image_url", Qwen-VL's "image"):
// chat templates place a placeholder for each, and the agent loop
// processes the image it names.
type ContentPart struct {
	Type  string
	Text  string
	Raw   json.RawMessage
	Image *Image
}

// Text returns the message text: Content, or the concatenated text parts.
func (m Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b bytes.Buffer
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ContentIsNull reports whether the message was read with "content": null.
func (m Message) ContentIsNull() bool { return m.contentNull }

// ToolCall is one function call requested by the assistant.
type ToolCall struct {
	ID       string
	Type     string // "function"
	Function FunctionCall
}

// FunctionCall names the function and carries its arguments.
//
// Arguments is the exact JSON text the model or caller gave: key order and
// number spelling are preserved because chat templates render them and the
// policy must be trained on the text it actually produced. OpenAI sends it as
// a JSON string; HF-style inputs send a JSON object. ArgumentsAsObject records
// which form was read (and selects the form that is written).
type FunctionCall struct {
	Name              string
	Arguments         string
	ArgumentsAsObject bool
}

// ToolSchema is an OpenAI function tool: {"type":"function","function":{...}}.
type ToolSchema struct {
	Type     string // "function"
	Function FunctionSchema
}

// FunctionSchema describes a callable function. Parameters is the JSON
// Schema of the arguments kept as raw JSON so that key order, which chat
// templates render, is preserved.
type FunctionSchema struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	Strict      *bool
}

// ErrInvalidMessage is wrapped by every decoding error of this package.
var ErrInvalidMessage = errors.New("chat: invalid message")

// ---- JSON ----------------------------------------------------------------

// wire types with explicit key order for marshalling.

type contentPartWire struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// MarshalJSON writes the OpenAI shape: role, content, reasoning_content,
// tool_calls, tool_call_id, name (empty optional fields omitted).
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"role":`)
	writeString(&b, m.Role)
	switch {
	case len(m.Parts) > 0:
		b.WriteString(`,"content":[`)
		for i, p := range m.Parts {
			if i > 0 {
				b.WriteByte(',')
			}
			if len(p.Raw) > 0 {
				if err := compactInto(&b, p.Raw); err != nil {
					return nil, fmt.Errorf("%w: content part %d: %v", ErrInvalidMessage, i, err)
				}
				continue
			}
			if p.Image != nil {
				b.WriteString(`{"type":"image_url","image_url":{"url":`)
				writeString(&b, p.Image.DataURL())
				b.WriteString(`}}`)
				continue
			}
			pb, err := marshalNoEscape(contentPartWire{Type: p.Type, Text: p.Text})
			if err != nil {
				return nil, err
			}
			b.Write(pb)
		}
		b.WriteByte(']')
	case m.contentAbsent && m.Content == "":
	case m.contentNull && m.Content == "":
		b.WriteString(`,"content":null`)
	default:
		b.WriteString(`,"content":`)
		writeString(&b, m.Content)
	}
	if m.ReasoningContent != "" {
		b.WriteString(`,"reasoning_content":`)
		writeString(&b, m.ReasoningContent)
	}
	if len(m.ToolCalls) > 0 {
		b.WriteString(`,"tool_calls":[`)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b.WriteByte(',')
			}
			cb, err := c.MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("tool_calls[%d]: %w", i, err)
			}
			b.Write(cb)
		}
		b.WriteByte(']')
	}
	if m.ToolCallID != "" {
		b.WriteString(`,"tool_call_id":`)
		writeString(&b, m.ToolCallID)
	}
	if m.Name != "" {
		b.WriteString(`,"name":`)
		writeString(&b, m.Name)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type messageWire struct {
	Role             *string         `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []ToolCall      `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Name             string          `json:"name"`
}

// UnmarshalJSON reads the OpenAI shape. content may be a string, null,
// absent, or a list of parts.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w messageWire
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if w.Role == nil {
		return fmt.Errorf("%w: missing \"role\"", ErrInvalidMessage)
	}
	out := Message{
		Role:             *w.Role,
		ReasoningContent: w.ReasoningContent,
		ToolCalls:        w.ToolCalls,
		ToolCallID:       w.ToolCallID,
		Name:             w.Name,
	}
	c := bytes.TrimSpace(w.Content)
	switch {
	case len(c) == 0:
		out.contentAbsent = true
	case string(c) == "null":
		out.contentNull = true
	case c[0] == '"':
		if err := json.Unmarshal(c, &out.Content); err != nil {
			return fmt.Errorf("%w: content: %w", ErrInvalidMessage, err)
		}
	case c[0] == '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(c, &raws); err != nil {
			return fmt.Errorf("%w: content: %w", ErrInvalidMessage, err)
		}
		out.Parts = make([]ContentPart, len(raws))
		for i, r := range raws {
			var p struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(r, &p); err != nil {
				return fmt.Errorf("%w: content[%d]: %w", ErrInvalidMessage, i, err)
			}
			im, err := partImage(p.Type, r)
			if err != nil {
				return fmt.Errorf("%w: content[%d]: %w", ErrInvalidMessage, i, err)
			}
			out.Parts[i] = ContentPart{Type: p.Type, Text: p.Text, Raw: append(json.RawMessage(nil), r...), Image: im}
		}
	default:
		return fmt.Errorf("%w: content must be a string, null or a list of parts, got %.20s", ErrInvalidMessage, c)
	}
	*m = out
	return nil
}

// MarshalJSON writes {"id":...,"type":"function","function":{"name":...,"arguments":...}}.
// Arguments are written as a JSON string unless they were read as an object.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if c.ID != "" {
		b.WriteString(`"id":`)
		writeString(&b, c.ID)
		b.WriteByte(',')
	}
	typ := c.Type
	if typ == "" {
		typ = "function"
	}
	b.WriteString(`"type":`)
	writeString(&b, typ)
	b.WriteString(`,"function":{"name":`)
	writeString(&b, c.Function.Name)
	b.WriteString(`,"arguments":`)
	if c.Function.ArgumentsAsObject {
		if err := compactInto(&b, []byte(c.Function.Arguments)); err != nil {
			return nil, fmt.Errorf("%w: function %q: arguments are not valid JSON: %v", ErrInvalidMessage, c.Function.Name, err)
		}
	} else {
		writeString(&b, c.Function.Arguments)
	}
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

// UnmarshalJSON accepts the OpenAI shape with arguments as a string or an
// object, and the unwrapped HF shape {"name":...,"arguments":...}.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	var w struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Function  json.RawMessage `json:"function"`
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("%w: tool call: %w", ErrInvalidMessage, err)
	}
	out := ToolCall{ID: w.ID, Type: w.Type}
	name, args := w.Name, w.Arguments
	if len(w.Function) > 0 && string(w.Function) != "null" {
		var f struct {
			Name      *string         `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(w.Function, &f); err != nil {
			return fmt.Errorf("%w: tool call function: %w", ErrInvalidMessage, err)
		}
		name, args = f.Name, f.Arguments
	}
	if name == nil {
		return fmt.Errorf("%w: tool call has no function name", ErrInvalidMessage)
	}
	out.Function.Name = *name
	a := bytes.TrimSpace(args)
	switch {
	case len(a) == 0 || string(a) == "null":
	case a[0] == '"':
		if err := json.Unmarshal(a, &out.Function.Arguments); err != nil {
			return fmt.Errorf("%w: tool call %q arguments: %w", ErrInvalidMessage, *name, err)
		}
	default:
		out.Function.Arguments = string(a)
		out.Function.ArgumentsAsObject = true
	}
	*c = out
	return nil
}

type functionSchemaWire struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// MarshalJSON writes {"type":"function","function":{"name","description","parameters","strict"}}.
func (s ToolSchema) MarshalJSON() ([]byte, error) {
	typ := s.Type
	if typ == "" {
		typ = "function"
	}
	fb, err := marshalNoEscape(functionSchemaWire(s.Function))
	if err != nil {
		return nil, fmt.Errorf("%w: tool %q: %w", ErrInvalidMessage, s.Function.Name, err)
	}
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	writeString(&b, typ)
	b.WriteString(`,"function":`)
	b.Write(fb)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the OpenAI function-tool shape. A bare function object
// (no "function" wrapper) is accepted too.
func (s *ToolSchema) UnmarshalJSON(data []byte) error {
	var w struct {
		Type     string          `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("%w: tool schema: %w", ErrInvalidMessage, err)
	}
	fn := w.Function
	if len(fn) == 0 || string(fn) == "null" {
		fn = data
	}
	var f functionSchemaWire
	if err := json.Unmarshal(fn, &f); err != nil {
		return fmt.Errorf("%w: tool schema function: %w", ErrInvalidMessage, err)
	}
	if f.Name == "" {
		return fmt.Errorf("%w: tool schema has no function name", ErrInvalidMessage)
	}
	if len(f.Parameters) > 0 {
		f.Parameters = append(json.RawMessage(nil), f.Parameters...)
	}
	*s = ToolSchema{Type: w.Type, Function: FunctionSchema(f)}
	return nil
}

// writeString writes s as a JSON string without HTML escaping, so that text
// such as "<tool_call>" is kept readable and byte-identical.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

func compactInto(b *bytes.Buffer, raw []byte) error {
	return json.Compact(b, raw)
}
