package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// TestRolloutHarnessProcess is not a test: it is the harness that
// TestRolloutHarness runs, a process of its own on the official OpenAI
// SDK that reads its endpoint from the environment, as harnesses do,
// offers a "shell" tool, runs the commands the model asks for with sh in
// its own working directory and sends their output back.
func TestRolloutHarnessProcess(t *testing.T) {
	if os.Getenv("AGENTRL_TEST_HARNESS") != "1" {
		t.Skip("the harness of TestRolloutHarness")
	}
	ctx := context.Background()
	c, hc := harnessClient()
	defer hc.CloseIdleConnections()
	params := openai.ChatCompletionNewParams{Model: "agentrl",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent."), openai.UserMessage(os.Getenv("AGENTRL_PROMPT"))},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "shell", Parameters: openai.FunctionParameters{"type": "object",
				"properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []string{"command"}}})}}
	runHarnessLoop(t, c, params, 4, func(msg openai.ChatCompletionMessage) (out []openai.ChatCompletionMessageParamUnion) {
		for _, call := range msg.ToolCalls {
			var args struct{ Command string }
			require.NoError(t, json.Unmarshal([]byte(call.Function.Arguments), &args))
			res, err := exec.CommandContext(ctx, "sh", "-c", args.Command).CombinedOutput()
			require.NoError(t, err)
			out = append(out, openai.ToolMessage(strings.TrimSpace(string(res)), call.ID))
		}
		return out
	})
}

// runHarnessLoop is a test harness's loop: at most turns calls, each
// answer's tool calls followed by the messages results gives, until an
// answer without calls, which it prints. An API error fails the harness
// with the server's message.
func runHarnessLoop(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams, turns int,
	results func(openai.ChatCompletionMessage) []openai.ChatCompletionMessageParamUnion) {
	t.Helper()
	for range turns {
		resp, err := c.Chat.Completions.New(context.Background(), params)
		var ae *openai.Error
		if errors.As(err, &ae) {
			t.Fatalf("%v: %s", err, ae.RawJSON())
		}
		require.NoError(t, err)
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println(msg.Content)
			return
		}
		params.Messages = append(params.Messages, msg.ToParam())
		params.Messages = append(params.Messages, results(msg)...)
	}
	t.Fatal("the model never answered")
}

// harnessClient is a test harness's OpenAI client, on the endpoint its
// environment names, as harnesses read it.
func harnessClient() (openai.Client, *http.Client) {
	hc := &http.Client{}
	return openai.NewClient(option.WithBaseURL(os.Getenv("OPENAI_BASE_URL")+"/"), option.WithAPIKey(os.Getenv("OPENAI_API_KEY")),
		option.WithMaxRetries(0), option.WithHTTPClient(hc)), hc
}

func TestRolloutHarness(t *testing.T) {
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	imStart, _ := tok.TokenID("<|im_start|>")
	imEnd, _ := tok.TokenID("<|im_end|>")
	call := append(tok.Encode("<tool_call>\n{\"name\": \"shell\", \"arguments\": {\"command\": \"echo agentrl-ok > out.txt; cat out.txt\"}}\n</tool_call>"), imEnd)
	answer := append(tok.Encode("The command printed agentrl-ok."), imEnd)
	rule := func(c servertest.Call) servertest.Reply {
		n := 0
		for _, id := range c.Req.PromptIDs {
			if id == imStart {
				n++
			}
		}
		if n <= 3 { // system (with the tools), user, assistant: the first turn
			return servertest.Reply{Tokens: call}
		}
		return servertest.Reply{Tokens: answer}
	}
	srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: rule}), httpapi.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })

	tmp := t.TempDir()
	data := filepath.Join(tmp, "data.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "system", "content": "ignored"}, {"role": "user", "content": "Run echo, don't guess."}], "extra_info": {"index": 1}}
{"prompt": [{"role": "user", "content": "It's your turn."}], "extra_info": {"index": 2}}
`), 0o644))
	out, batch, hout, runs := filepath.Join(tmp, "t.jsonl"), filepath.Join(tmp, "b.safetensors"), filepath.Join(tmp, "harness.log"), filepath.Join(tmp, "runs")
	require.NoError(t, os.Mkdir(runs, 0o755))
	// The harness processes inherit this environment: it makes them act as
	// the harness (TestRolloutHarnessProcess) instead of skipping.
	t.Setenv("AGENTRL_TEST_HARNESS", "1")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(),
		"--out", out, "--batch", batch, "--n", "2", "--metrics-addr", "127.0.0.1:0",
		"--harness", os.Args[0] + " -test.run=^TestRolloutHarnessProcess$ -- {prompt}", "--harness-dir", runs, "--harness-output", hout,
		"data.max_prompt_length=1024", "data.max_response_length=256", "agentrl.concurrency=4"}, nil, &stdout, &stderr)
	log, _ := os.ReadFile(hout)
	require.Equal(t, 0, code, "stderr: %s\nharness: %s", stderr.String(), log)
	summary := strings.Join(strings.Fields(stdout.String()), " ")
	require.Contains(t, summary, "trajectories 4 (2 groups, 0 filtered, 0 failed)")
	require.Contains(t, summary, "stop reasons completed=4")
	require.Contains(t, summary, "capture 4 rollouts, 8 calls recorded, 0 aborted, 0 refused")
	require.Equal(t, 4, strings.Count(string(log), "The command printed agentrl-ok."), "each harness printed the model's answer")

	f, err := os.Open(out)
	require.NoError(t, err)
	trajs, err := trajectory.ReadJSONL(f)
	f.Close()
	require.NoError(t, err)
	require.Len(t, trajs, 4)
	groups := map[string]int{}
	for _, tr := range trajs {
		require.NoError(t, tr.Validate())
		require.Equal(t, 2, tr.NumTurns)
		groups[tr.GroupID]++
		// The mask-1 runs are exactly the engine's two replies.
		var runs [][]int32
		for i := 0; i < len(tr.ResponseMask); i++ {
			if tr.ResponseMask[i] == 1 && (i == 0 || tr.ResponseMask[i-1] == 0) {
				runs = append(runs, nil)
			}
			if tr.ResponseMask[i] == 1 {
				runs[len(runs)-1] = append(runs[len(runs)-1], tr.ResponseIDs[i])
			}
		}
		require.Equal(t, [][]int32{call, answer}, runs)
		prompt, err := tok.Decode(tr.PromptIDs, false)
		require.NoError(t, err)
		require.Contains(t, prompt, `"name": "shell"`)
		require.NotContains(t, prompt, "ignored", "the sample's system message is not the harness's")
		text, err := tok.Decode(tr.ResponseIDs, false)
		require.NoError(t, err)
		// The observation is the harness's own tool output, from its
		// own working directory.
		require.Contains(t, text, "<tool_response>\nagentrl-ok\n</tool_response>")
		require.Contains(t, tr.Extra, "capture_report")
	}
	require.Len(t, groups, 2)
	for g, n := range groups {
		require.Equal(t, 2, n, "group %s", g)
	}
	bf, err := os.Open(batch)
	require.NoError(t, err)
	b, err := trajectory.ReadSafetensorsBatch(bf)
	bf.Close()
	require.NoError(t, err)
	require.Equal(t, 4, b.Size)

	// agentrl view shows each capture rollout's segment, linked to its
	// trajectory's section, from the reports in the trajectories.
	report := filepath.Join(tmp, "report.html")
	stderr.Reset()
	require.Equal(t, 0, runMain(context.Background(), []string{"view", out, "--out", report}, nil, &stdout, &stderr), stderr.String())
	html, err := os.ReadFile(report)
	require.NoError(t, err)
	require.Contains(t, string(html), "capture rollouts (4)")
	require.Equal(t, 4, strings.Count(string(html), `<table class="capsegs">`))
	for i, tr := range trajs {
		require.Contains(t, string(html), fmt.Sprintf(`<tr><td>c0</td><td>first call of the rollout</td><td><a href="#t-%d">#%d %s</a>`, i, i, tr.ID))
	}
	left, err := os.ReadDir(runs)
	require.NoError(t, err)
	require.Empty(t, left, "each run's working directory is removed")

	// A harness that fails is a failed group, its error reported.
	stderr.Reset()
	code = runMain(context.Background(), []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(),
		"--out", out, "--harness", "exit 7"}, nil, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "exit status 7")
	// Only loopback serves harnesses.
	stderr.Reset()
	code = runMain(context.Background(), []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(),
		"--out", out, "--harness", "true", "--harness-addr", "0.0.0.0:0"}, nil, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "must be a loopback address")
}

// TestRolloutHarnessImagesProcess is not a test: it is the harness of
// TestRolloutHarnessImages, on the official OpenAI SDK. It asks about an
// image, runs the zoom tool the model calls by sending its text result
// and a second image in a user turn (as harnesses return images: tool
// messages carry text only), and prints the answer.
func TestRolloutHarnessImagesProcess(t *testing.T) {
	if os.Getenv("AGENTRL_TEST_HARNESS_IMAGES") == "" {
		t.Skip("the harness of TestRolloutHarnessImages")
	}
	c, hc := harnessClient()
	defer hc.CloseIdleConnections()
	image := func(name string) openai.ChatCompletionContentPartUnionParam {
		data, err := os.ReadFile(filepath.Join(os.Getenv("AGENTRL_TEST_HARNESS_IMAGES"), name))
		require.NoError(t, err)
		return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
			URL: "data:" + http.DetectContentType(data) + ";base64," + base64.StdEncoding.EncodeToString(data)})
	}
	params := openai.ChatCompletionNewParams{Model: "agentrl", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{image("rgb_640x480_checker.png"), openai.TextContentPart(os.Getenv("AGENTRL_PROMPT"))})},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "image_zoom_in_tool", Parameters: openai.FunctionParameters{"type": "object",
				"properties": map[string]any{"bbox_2d": map[string]any{"type": "array"}}, "required": []string{"bbox_2d"}}})}}
	runHarnessLoop(t, c, params, 3, func(msg openai.ChatCompletionMessage) (out []openai.ChatCompletionMessageParamUnion) {
		for _, call := range msg.ToolCalls {
			out = append(out, openai.ToolMessage("the crop follows", call.ID))
		}
		return append(out, openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{image("webp_lossy_99x67.webp")}))
	})
}

// TestRolloutHarnessImages: `agentrl rollout --harness` with a
// vision-language model directory serves a harness's image parts to an
// engine that takes images (the fake SGLang of TestRolloutImagesGeo3k,
// which checks each image against its block) and rebuilds trajectories
// that carry them: grids, pixel values and M-RoPE position ids, in the
// batch too.
func TestRolloutHarnessImages(t *testing.T) {
	dir, tok, fake := newVLSGLang(t)
	ts := httptest.NewServer(fake)
	defer ts.Close()

	tmp := t.TempDir()
	data := filepath.Join(tmp, "data.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "Which angle is marked?"}], "extra_info": {"index": 1}}
`), 0o644))
	images, err := filepath.Abs(filepath.Join("..", "..", "vision", "testdata", "images"))
	require.NoError(t, err)
	t.Setenv("AGENTRL_TEST_HARNESS_IMAGES", images)
	out, batch, hout := filepath.Join(tmp, "t.jsonl"), filepath.Join(tmp, "b.safetensors"), filepath.Join(tmp, "harness.log")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", ts.URL,
		"--out", out, "--batch", batch, "--n", "2", "--harness-output", hout,
		"--harness", os.Args[0] + " -test.run=^TestRolloutHarnessImagesProcess$ -- {prompt}",
		"data.max_prompt_length=2048", "data.max_response_length=1024"}, nil, &stdout, &stderr)
	log, _ := os.ReadFile(hout)
	require.Equal(t, 0, code, "stderr: %s\nharness: %s", stderr.String(), log)
	summary := strings.Join(strings.Fields(stdout.String()), " ")
	require.Contains(t, summary, "trajectories 2 (1 groups, 0 filtered, 0 failed)")
	require.Contains(t, summary, "capture 2 rollouts, 4 calls recorded, 0 aborted, 0 refused")
	require.Equal(t, 2, strings.Count(string(log), "The answer is \\boxed{3}."))
	fake.mu.Lock()
	got := slices.Sorted(slices.Values(fake.images))
	require.Equal(t, []int{1, 1, 2, 2}, got, "each run: a call with the first image, then one with both")
	fake.mu.Unlock()

	f, err := os.Open(out)
	require.NoError(t, err)
	trajs, err := trajectory.ReadJSONL(f)
	f.Close()
	require.NoError(t, err)
	require.Len(t, trajs, 2)
	for _, tr := range trajs {
		require.Equal(t, 2, tr.NumTurns)
		mm := tr.MultiModal
		require.NotNil(t, mm, tr.ID)
		require.Equal(t, [][3]int64{{1, 34, 46}, {1, 4, 8}}, mm.ImageGridTHW)
		require.NotEmpty(t, mm.PositionIDs[0])
		text, err := tok.Decode(tr.ResponseIDs, false)
		require.NoError(t, err)
		require.Contains(t, text, "the crop follows")
		require.Equal(t, 1, strings.Count(text, "<|vision_start|>"), "the second image is in the response's observation")
	}
	bf, err := os.Open(batch)
	require.NoError(t, err)
	b, err := trajectory.ReadSafetensorsBatch(bf)
	bf.Close()
	require.NoError(t, err)
	require.NotNil(t, b.MultiModal)
	require.Equal(t, []int32{2, 2}, b.MultiModal.RowImages)
	py := torchPython(t)
	res, err := runPython(py, filepath.Join("..", "..", "trajectory", "testdata", "check_torch.py"), batch)
	require.NoError(t, err, res)
	require.Contains(t, res, "ok: torch")
}
