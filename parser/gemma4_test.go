package parser

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Gemma 4's malformed calls each come back as one error that says what was
// wrong, and the text around them stays content.
func TestGemma4Errors(t *testing.T) {
	p, err := New("gemma4", Options{})
	require.NoError(t, err)
	for _, c := range []struct{ text, want string }{
		{`<|tool_call>get_weather{}<tool_call|>`, `tool call 1: expected call:NAME{…} after <|tool_call>`},
		{`<|tool_call>call:{}<tool_call|>`, "tool call 1: missing function name"},
		{`<|tool_call>call:get weather{}<tool_call|>`, `tool call 1: expected { after the function name "get", got " weather{}<tool_call|>"`},
		{`<|tool_call>call:f{a:1}<turn|>x`, `tool call 1: call to "f": expected <tool_call|> after the arguments, got "<turn|>x"`},
		{`<|tool_call>call:f{a:{b:1}`, `tool call 1 to "f": unclosed arguments: missing }<tool_call|>`},
		{`<|tool_call>call:f{a:<|"|>x}<tool_call|>`, `tool call 1 to "f": unclosed arguments: unterminated <|"|> string`},
		{`<|tool_call>call:f{a:[1,2}<tool_call|>`, `tool call 1 to "f": unclosed arguments: missing ]`},
		{`<|tool_call>call:f{x:1.5e999}<tool_call|>`, `tool call 1 to "f": arguments are not valid JSON`},
	} {
		got := p.Parse("before "+c.text, nil)
		require.Empty(t, got.Calls, c.text)
		require.Len(t, got.Errors, 1, c.text)
		require.Contains(t, got.Errors[0].Message, c.want, c.text)
		require.Contains(t, got.Content, "before", c.text)
	}
	// A broken call does not take the next one with it.
	got := p.Parse(`<|tool_call>call:f{a:1}junk<tool_call|><|tool_call>call:g{b:2}<tool_call|><turn|>`, nil)
	require.Len(t, got.Errors, 1)
	require.Len(t, got.Calls, 1)
	require.Equal(t, `{"b": 2}`, got.Calls[0].Function.Arguments)
	require.Empty(t, got.Content, "a trailing <turn|> is not content")

	// Reasoning in <|channel>thought…<channel|> hides the calls written
	// there when ThinkAware.
	p, err = New("gemma4", Options{ThinkAware: true})
	require.NoError(t, err)
	got = p.Parse("<|channel>thought\nmaybe <|tool_call>call:x{}<tool_call|><channel|>ok<|tool_call>call:f{}<tool_call|>", nil)
	require.Equal(t, "maybe <|tool_call>call:x{}<tool_call|>", got.Reasoning)
	require.Equal(t, "ok", got.Content)
	require.Len(t, got.Calls, 1)
	require.Equal(t, "f", got.Calls[0].Function.Name)
}

// Gemma 4 goes on generating after <tool_call|>, so the engine must stop on
// it (verl's Gemma4ToolParser.stop_token_ids); other formats end the turn.
func TestStopMarkers(t *testing.T) {
	require.Equal(t, []string{"<tool_call|>"}, StopMarkers("gemma4"))
	for _, f := range append(Formats(), "nope") {
		if f != "gemma4" {
			require.Empty(t, StopMarkers(f), f)
		}
	}
}
