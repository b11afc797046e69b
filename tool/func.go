package tool

import (
	"context"
	"encoding/json"
	"fmt"

	gschema "github.com/google/jsonschema-go/jsonschema"

	"github.com/agentrl/agentrl/chat"
)

// Func is a stateless tool made from a Go function with a typed argument
// struct (see NewFunc). Create and Release do nothing.
type Func[A any, R Result | string] struct {
	schema chat.ToolSchema
	fn     func(context.Context, A) (R, error)
}

// NewFunc wraps fn as a Tool named name. The parameters schema is derived
// from A with the same rules as the MCP Go SDK (github.com/google/jsonschema-go):
// properties are the JSON names of the exported fields in field order, a
// `jsonschema:"..."` tag is the property's description, and a field is
// required unless its json tag has omitempty or omitzero. A struct A
// disallows unknown properties. fn may return a Result or just its text.
func NewFunc[A any, R Result | string](name, description string, fn func(ctx context.Context, args A) (R, error)) (*Func[A, R], error) {
	if name == "" {
		return nil, fmt.Errorf("tool: NewFunc: empty name")
	}
	if fn == nil {
		return nil, fmt.Errorf("tool: NewFunc %q: nil function", name)
	}
	s, err := gschema.For[A](nil)
	if err != nil {
		return nil, fmt.Errorf("tool: NewFunc %q: deriving the argument schema: %w", name, err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("tool: NewFunc %q: arguments must be a struct or map (JSON object), got schema type %q", name, s.Type)
	}
	params, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool: NewFunc %q: %w", name, err)
	}
	return &Func[A, R]{
		schema: chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
			Name: name, Description: description, Parameters: params,
		}},
		fn: fn,
	}, nil
}

// Schema implements Tool.
func (f *Func[A, R]) Schema() chat.ToolSchema { return f.schema }

// Create implements Tool; a Func has no per-trajectory state.
func (f *Func[A, R]) Create(context.Context, map[string]any) (string, error) { return "", nil }

// Release implements Tool.
func (f *Func[A, R]) Release(context.Context, string) error { return nil }

// Execute decodes args into A and calls the function.
func (f *Func[A, R]) Execute(ctx context.Context, _ string, args json.RawMessage) (Result, error) {
	var a A
	if err := json.Unmarshal(args, &a); err != nil {
		return Result{}, fmt.Errorf("decoding arguments: %w", err)
	}
	r, err := f.fn(ctx, a)
	if err != nil {
		return Result{}, err
	}
	switch v := any(r).(type) {
	case string:
		return Result{Text: v}, nil
	case Result:
		return v, nil
	}
	return Result{}, fmt.Errorf("unsupported result type %T", r) // excluded by the type constraint
}
