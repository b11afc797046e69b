package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// encode marshals without HTML escaping, the way agentrl writes JSON.
func encode(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return string(bytes.TrimSuffix(b.Bytes(), []byte{'\n'}))
}

func TestMessageRoundTripOpenAIShapes(t *testing.T) {
	cases := []string{
		`{"role":"system","content":"You are helpful."}`,
		`{"role":"user","content":"What is 2+2? <b>bold</b> & ünïcödé 你好"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"calc","arguments":"{\"expression\": \"2+2\", \"precision\": 1.50}"}}]}`,
		`{"role":"assistant","content":"Let me check.","reasoning_content":"The user wants 2+2.","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{\"z\":1,\"a\":[1e5,2.0]}"}}]}`,
		`{"role":"tool","content":"4","tool_call_id":"call_1","name":"calc"}`,
		`{"role":"user","content":[{"type":"text","text":"look at"},{"type":"image_url","image_url":{"url":"data:x"}}]}`,
		`{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"search","arguments":{"query":"20","top_k":3}}}]}`,
		`{"role":"assistant"}`,
		`{"role":"user","content":""}`,
	}
	for _, in := range cases {
		var m Message
		require.NoError(t, json.Unmarshal([]byte(in), &m), in)
		require.Equal(t, in, encode(t, m))
		// And a slice of messages, as requests carry them.
		var ms []Message
		require.NoError(t, json.Unmarshal([]byte("["+in+","+in+"]"), &ms))
		require.Equal(t, "["+in+","+in+"]", encode(t, ms))
	}
}

func TestArgumentsKeptExactly(t *testing.T) {
	in := `{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"b\": 1.50, \"a\": 10000000000000000000001}"}}]}`
	var m Message
	require.NoError(t, json.Unmarshal([]byte(in), &m))
	require.Equal(t, `{"b": 1.50, "a": 10000000000000000000001}`, m.ToolCalls[0].Function.Arguments)
	require.False(t, m.ToolCalls[0].Function.ArgumentsAsObject)
	require.True(t, m.ContentIsNull())

	var obj Message
	require.NoError(t, json.Unmarshal([]byte(`{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"b": 1.50, "a": 1}}}]}`), &obj))
	require.Equal(t, `{"b": 1.50, "a": 1}`, obj.ToolCalls[0].Function.Arguments)
	require.True(t, obj.ToolCalls[0].Function.ArgumentsAsObject)
}

func TestToolCallUnwrappedShape(t *testing.T) {
	var c ToolCall
	require.NoError(t, json.Unmarshal([]byte(`{"name":"calc","arguments":{"x":1}}`), &c))
	require.Equal(t, "calc", c.Function.Name)
	require.Equal(t, `{"x":1}`, c.Function.Arguments)
	require.Equal(t, `{"type":"function","function":{"name":"calc","arguments":{"x":1}}}`, encode(t, c))
}

func TestToolSchemaRoundTrip(t *testing.T) {
	cases := []string{
		`{"type":"function","function":{"name":"search","description":"Search the web; returns <top> results & more.","parameters":{"type":"object","properties":{"query":{"type":"string"},"top_k":{"type":"integer","enum":[1,3,5]}},"required":["query"]}}}`,
		`{"type":"function","function":{"name":"noargs"}}`,
		`{"type":"function","function":{"name":"strict","parameters":{"type":"object","properties":{}},"strict":true}}`,
	}
	for _, in := range cases {
		var s ToolSchema
		require.NoError(t, json.Unmarshal([]byte(in), &s), in)
		require.Equal(t, in, encode(t, s))
	}
	// Parameter key order is preserved (templates render it).
	var s ToolSchema
	require.NoError(t, json.Unmarshal([]byte(`{"type":"function","function":{"name":"f","parameters":{"z":1,"a":2}}}`), &s))
	require.Equal(t, `{"z":1,"a":2}`, string(s.Function.Parameters))
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]string{
		`{"content":"x"}`:                                                     `missing "role"`,
		`{"role":"user","content":5}`:                                         "content must be",
		`{"role":"assistant","tool_calls":[{"id":1}]}`:                        "tool call",
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]}`: "no function name",
		`{"type":"function","function":{"description":"d"}}`:                  "no function name",
		`[1,2]`: "invalid message",
	}
	for in, want := range cases {
		var m Message
		var s ToolSchema
		err := json.Unmarshal([]byte(in), &m)
		if want == "no function name" && in[2] == 't' && in[3] == 'y' {
			err = json.Unmarshal([]byte(in), &s)
		}
		require.Error(t, err, in)
		require.Contains(t, err.Error(), want, in)
		require.True(t, errors.Is(err, ErrInvalidMessage), in)
	}
}

func TestMarshalRejectsInvalidObjectArguments(t *testing.T) {
	c := ToolCall{Function: FunctionCall{Name: "f", Arguments: "{not json", ArgumentsAsObject: true}}
	_, err := json.Marshal(c)
	require.Error(t, err)
	require.Contains(t, err.Error(), `function "f"`)
}

func TestText(t *testing.T) {
	m := Message{Role: "user", Parts: []ContentPart{{Type: "text", Text: "a"}, {Type: "image_url"}, {Type: "text", Text: "b"}}}
	require.Equal(t, "ab", m.Text())
	require.Equal(t, "x", Message{Content: "x"}.Text())
}

func FuzzMessageJSON(f *testing.F) {
	f.Add(`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	f.Add(`{"role":"user","content":[{"type":"text","text":"x"}]}`)
	f.Add(`{"role":"tool","content":"4","tool_call_id":"c"}`)
	f.Add(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image","image":"a.png"},{"type":"image"}]}`)
	f.Add(`{"role":"user","content":[{"type":"image_url","image_url":"x.png"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var m Message
		if json.Unmarshal([]byte(in), &m) != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			return
		}
		var m2 Message
		require.NoError(t, json.Unmarshal(out, &m2), string(out))
		out2, err := json.Marshal(m2)
		require.NoError(t, err)
		require.Equal(t, string(out), string(out2))
	})
}
