// Package chat holds the plain message types every other agentrl package
// speaks: Message, ToolCall and ToolSchema in the OpenAI JSON shapes.
//
// Tool-call arguments are kept as the exact JSON text the model or caller
// wrote (key order and number spelling preserved), because chat templates
// render that text back into the token stream the policy is trained on.
//
//	var m chat.Message
//	_ = json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[
//	  {"id":"c1","type":"function","function":{"name":"calc","arguments":"{\"x\": 1.50}"}}]}`), &m)
//	m.ToolCalls[0].Function.Arguments // `{"x": 1.50}`
package chat
