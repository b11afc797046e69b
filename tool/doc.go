// Package tool runs the tools an agent calls during a rollout.
//
// A Tool has a JSON schema, per-trajectory instances (Create/Release) and an
// Execute that turns JSON arguments into text, an optional reward and
// metrics. A Set holds the tools of a rollout with their limits
// (concurrency cap, token-bucket rate, per-call timeout); a Session is one
// trajectory's view of it. Session.Call never panics: every failure —
// unknown tool, arguments that violate the schema, timeout, panic, rate
// limit, tool error — comes back as a CallResult whose Text can be shown to
// the model and whose Err says what kind of failure it was.
//
// Tools come from Go code (NewFunc wraps a typed function and derives its
// schema) or from a verl-style YAML/JSON tool config whose class_name values
// map to factories registered with Register. Built-in classes: "calculator",
// "gsm8k", "geo3k" (Geo3K, verl's "verl.tools.geo3k_tool.Geo3kTool", graded
// with mathruler's grade_answer), "http" and verl's
// "verl.tools.image_zoom_in_tool.ImageZoomInTool" (ZoomIn, DeepEyes' zoom-in:
// the crop comes back in Result.Images) in this package; "python" in tool/python and "mcp" in tool/mcp (imported for their
// registration). LoadConfig and ParseConfig
// read a config; a loaded Set owns its tools' connections and processes
// until Set.Close(ctx) (which, like Session.Close(ctx), takes a context).
//
//	set, _ := tool.NewSet(tool.NewCalculator())
//	ss := set.Session(nil)
//	defer ss.Close(ctx)
//	r := ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{
//		Name: "calculator", Arguments: `{"expression": "2 * (3 + 4)"}`}})
//	// r.Text == "14"
package tool
