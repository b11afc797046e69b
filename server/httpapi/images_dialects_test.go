package httpapi_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/vision"
)

// TestDialectImageParts: an image and a question sent as Responses
// input_image/input_text parts and as Anthropic image/text blocks reach the
// engine as the same ids and the same image as chat completions' image_url
// parts: the dialects map onto the one chat path, images included.
func TestDialectImageParts(t *testing.T) {
	tok, err := vlTok()
	require.NoError(t, err)
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	png, err := os.ReadFile("../../vision/testdata/images/rgb_640x480_checker.png")
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString(png)
	url := "data:image/png;base64," + b64
	eng, cp, _ := replyWith(t, tok, "A checkerboard.")
	s := start(t, eng, httpapi.Config{Model: "qwen2vl", Chat: &httpapi.Chat{Tokenizer: tok, Images: qwenImages(proc)}})

	requests := []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"qwen2vl","max_tokens":20,"messages":[{"role":"user","content":[` +
			`{"type":"image_url","image_url":{"url":"` + url + `"}},{"type":"text","text":"What is this?"}]}]}`},
		{"/v1/responses", `{"model":"qwen2vl","max_output_tokens":20,"input":[{"role":"user","content":[` +
			`{"type":"input_image","image_url":"` + url + `","detail":"auto"},{"type":"input_text","text":"What is this?"}]}]}`},
		{"/v1/messages", `{"model":"qwen2vl","max_tokens":20,"messages":[{"role":"user","content":[` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}},{"type":"text","text":"What is this?"}]}]}`},
	}
	var first []int32
	for _, r := range requests {
		code, resp := post(t, s.URL()+r.path, r.body)
		require.Equal(t, 200, code, "%s: %s", r.path, resp)
		require.Contains(t, resp, "A checkerboard.", r.path)
		req := cp.last()
		require.NotNil(t, req.Vision, r.path)
		require.Len(t, req.Vision.Images, 1, r.path)
		require.Equal(t, png, req.Vision.Images[0].Data, r.path)
		if first == nil {
			first = req.PromptIDs
			continue
		}
		require.Equal(t, first, req.PromptIDs, "%s: the same ids as chat completions", r.path)
	}

	// An image in a tool result: chat's tool message with image parts,
	// Responses' function_call_output with input_image parts, Messages'
	// tool_result with image blocks give the same ids and image.
	results := []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"qwen2vl","max_tokens":20,"messages":[{"role":"user","content":"Take a screenshot."},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"screenshot","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":[{"type":"image_url","image_url":{"url":"` + url + `"}},{"type":"text","text":"done"}]}]}`},
		{"/v1/responses", `{"model":"qwen2vl","max_output_tokens":20,"input":[{"role":"user","content":"Take a screenshot."},` +
			`{"type":"function_call","call_id":"call_1","name":"screenshot","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_image","image_url":"` + url + `"},{"type":"input_text","text":"done"}]}]}`},
		{"/v1/messages", `{"model":"qwen2vl","max_tokens":20,"messages":[{"role":"user","content":"Take a screenshot."},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"screenshot","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}},{"type":"text","text":"done"}]}]}]}`},
	}
	first = nil
	for _, r := range results {
		code, resp := post(t, s.URL()+r.path, r.body)
		require.Equal(t, 200, code, "%s: %s", r.path, resp)
		req := cp.last()
		require.NotNil(t, req.Vision, r.path)
		require.Len(t, req.Vision.Images, 1, r.path)
		require.Equal(t, png, req.Vision.Images[0].Data, r.path)
		text, err := tok.Decode(req.PromptIDs, false)
		require.NoError(t, err)
		require.Contains(t, text, "<|im_start|>tool\n<|vision_start|><|image_pad|>", r.path)
		if first == nil {
			first = req.PromptIDs
			continue
		}
		require.Equal(t, first, req.PromptIDs, "%s: the same ids as chat completions", r.path)
	}

	for path, c := range map[string]struct{ body, want string }{
		"/v1/messages (tool_result)": {`{"model":"qwen2vl","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t",` +
			`"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}},{"type":"document","source":{}}]}]}]}`,
			`messages[0].content[0].content[1].type`},
		"/v1/responses (function_call_output)": {`{"model":"qwen2vl","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]}]}`,
			`input[0].output[0].image_url`},
		"/v1/responses": {`{"model":"qwen2vl","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`,
			`input[0].content[0].image_url`},
		"/v1/messages": {`{"model":"qwen2vl","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`,
			`messages[0].content[0].source`},
	} {
		code, resp := post(t, s.URL()+strings.Fields(path)[0], c.body)
		require.Equal(t, 400, code, resp)
		require.Contains(t, resp, c.want, path)
	}
	// Without Chat.Images both dialects refuse image parts, naming them.
	text := start(t, eng, httpapi.Config{Model: "qwen2vl", Chat: &httpapi.Chat{Tokenizer: tok}})
	for _, r := range requests[1:] {
		code, resp := post(t, text.URL()+r.path, r.body)
		require.Equal(t, 400, code, resp)
		require.True(t, strings.Contains(resp, `content part type \"image_url\" is not supported`), resp)
	}
}
