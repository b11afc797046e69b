package parser

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Kimi-K3's malformed calls each come back as one error naming what was
// wrong; a call after a broken one still counts.
func TestKimiK3Errors(t *testing.T) {
	p, err := New("kimi_k3", Options{})
	require.NoError(t, err)
	const tools = "<|open|>tools<|sep|>"
	for _, c := range []struct{ text, want string }{
		{tools + `junk<|close|>tools<|sep|>`, `tool call 1: expected <|open|>call… or <|close|>tools<|sep|> in the tools channel, got "junk<|close|>tools<|sep|>"`},
		{tools + `<|open|>call index="1"<|sep|><|close|>call<|sep|>`, `tool call 1: missing tool name`},
		{tools + `<|open|>callx tool="f"<|sep|><|close|>call<|sep|>`, `tool call 1: expected white space after <|open|>call`},
		{tools + `<|open|>call tool="f"`, `tool call 1: unclosed call header: missing <|sep|>`},
		{tools + `<|open|>call tool="f"<|sep|><|open|>argument key="a"<|sep|>x`, `tool call 1: unclosed call: missing <|close|>call<|sep|>`},
		{tools + `<|open|>call tool="f"<|sep|><|open|>argument key="a"<|sep|>x<|close|>call<|sep|>`, `tool call 1 to "f": unclosed argument`},
		{tools + `<|open|>call tool="f"<|sep|>x<|close|>call<|sep|>`, `tool call 1 to "f": expected <|open|>argument… or <|close|>call<|sep|>, got "x"`},
		{tools + `<|open|>call tool="f"<|sep|><|open|>json type="object"<|sep|>[1]<|close|>json<|sep|><|close|>call<|sep|>`, `tool call 1 to "f": arguments must be a JSON object`},
	} {
		got := p.Parse("<|open|>response<|sep|>before<|close|>response<|sep|>"+c.text, nil)
		require.Empty(t, got.Calls, c.text)
		require.Len(t, got.Errors, 1, c.text)
		require.Contains(t, got.Errors[0].Message, c.want, c.text)
		require.Equal(t, "before", got.Content, c.text)
	}
	got := p.Parse(tools+`<|open|>call tool="f"<|sep|>x<|close|>call<|sep|><|open|>call tool="g" index="2"<|sep|><|open|>json type="object"<|sep|>{"b": 2}<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>`, nil)
	require.Len(t, got.Errors, 1)
	require.Len(t, got.Calls, 1)
	require.Equal(t, `{"b": 2}`, got.Calls[0].Function.Arguments)
	require.Empty(t, got.Content)
}
