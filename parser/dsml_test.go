package parser

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDSMLDialectsRejectEachOther checks that each DeepSeek DSML format
// neither reads another's block as its own nor lets it pass as prose in
// silence: the block stays content and one error names the format it
// belongs to.
func TestDSMLDialectsRejectEachOther(t *testing.T) {
	v32 := "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">x</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"
	v4 := "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">x</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
	v41 := "<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n<｜DSML｜ parameter name=\"a\" string=\"true\">x</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>"
	for _, tc := range []struct {
		format, text, names string
		calls               int
	}{
		{"deepseek_v4", v4, "", 1},
		{"deepseek_v4", v41, "deepseek_v41", 0},
		{"deepseek_v4", v32, "deepseek_v32", 0},
		{"deepseek_v41", v41, "", 1},
		{"deepseek_v41", v4, "deepseek_v4", 0},
		{"deepseek_v41", v32, "deepseek_v32", 0},
		{"deepseek_v32", v32, "", 1},
		{"deepseek_v32", v4, "", 1}, // V3.2's parser reads V4's block name too (SGLang's test_v4_tool_calls_tokens)
		{"deepseek_v32", v41, "deepseek_v41", 0},
	} {
		p, err := New(tc.format, Options{})
		require.NoError(t, err)
		got := p.Parse("Checking.\n\n"+tc.text, nil)
		require.Len(t, got.Calls, tc.calls, "%s on %q", tc.format, tc.text)
		if tc.names == "" {
			require.Empty(t, got.Errors)
			require.Equal(t, "Checking.", got.Content)
			require.Equal(t, `{"a": "x"}`, got.Calls[0].Function.Arguments)
			continue
		}
		require.Len(t, got.Errors, 1, "%s on %q", tc.format, tc.text)
		require.Contains(t, got.Errors[0].Message, `format "`+tc.names+`"`)
		require.Equal(t, "Checking.\n\n"+tc.text, got.Content)
	}
}

// TestDSMLV4Recovery checks the two slips deepseek_v4 and deepseek_v41
// read as vLLM's V4 parser does, and that deepseek_v32 still reports them.
func TestDSMLV4Recovery(t *testing.T) {
	for _, tc := range []struct{ format, open, close, invoke, invokeEnd, param, paramEnd string }{
		{"deepseek_v4", dsmlToolCalls, dsmlToolCallsEd, dsmlInvoke, dsmlInvokeEnd, dsmlParam, dsmlParamEnd},
		{"deepseek_v41", dsml41Calls, dsml41CallsEnd, dsml41Invoke, dsml41InvokeEnd, dsml41Param, dsml41ParamEnd},
	} {
		p, err := New(tc.format, Options{})
		require.NoError(t, err)
		// A parameter that is not closed ends where the next one opens.
		got := p.Parse(tc.open+tc.invoke+`f">`+tc.param+`a" string="true">x `+tc.param+`b" string="false">2`+tc.paramEnd+tc.invokeEnd+tc.close, nil)
		require.Empty(t, got.Errors, tc.format)
		require.Equal(t, `{"a": "x ", "b": 2}`, got.Calls[0].Function.Arguments)
		// An invoke that is not closed ends at the block's end.
		got = p.Parse(tc.open+tc.invoke+`f">`+tc.param+`a" string="true">x`+tc.paramEnd+"\n"+tc.close+"after", nil)
		require.Empty(t, got.Errors, tc.format)
		require.Equal(t, `{"a": "x"}`, got.Calls[0].Function.Arguments)
		require.Equal(t, "after", got.Content)
	}
	p, err := New("deepseek_v32", Options{})
	require.NoError(t, err)
	got := p.Parse(dsmlCalls+dsmlInvoke+`f">`+dsmlParam+`a" string="true">x`+dsmlParamEnd+dsmlCallsEnd, nil)
	require.Len(t, got.Errors, 1)
	require.Empty(t, got.Calls)
}
