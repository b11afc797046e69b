package capture_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
)

// TestHarnessProcess is not a test: it is the harness that
// TestHarnessRunsAProcessPerRollout runs, a separate process built on the
// official SDK that reads its endpoint from the environment as real
// harnesses do, calls the model, runs the "ls" tool it asks for in its
// own working directory and sends the result back.
func TestHarnessProcess(t *testing.T) {
	if os.Getenv("CAPTURE_TEST_HARNESS") != "1" {
		t.Skip("the harness of TestHarnessRunsAProcessPerRollout")
	}
	ctx := context.Background()
	// option.WithBaseURL and WithAPIKey are what the SDK's defaults read
	// from OPENAI_BASE_URL and OPENAI_API_KEY.
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	c := openai.NewClient(option.WithBaseURL(os.Getenv("OPENAI_BASE_URL")+"/"), option.WithAPIKey(os.Getenv("OPENAI_API_KEY")),
		option.WithMaxRetries(0), option.WithHTTPClient(hc))
	prompt := os.Getenv("AGENTRL_PROMPT")
	if args := flagArgs(); len(args) != 1 || args[0] != prompt {
		t.Fatalf("the prompt as an argument is %q, AGENTRL_PROMPT %q", args, prompt)
	}
	require.NoError(t, os.WriteFile("note.txt", []byte("hi"), 0o600))
	params := openai.ChatCompletionNewParams{Model: "agentrl",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "ls", Parameters: openai.FunctionParameters{"type": "object"}})}}
	for {
		resp, err := c.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return
		}
		ents, err := os.ReadDir(".")
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(strings.Join(names, " "), msg.ToolCalls[0].ID))
	}
}

// flagArgs are the arguments after "--".
func flagArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}

func TestHarnessRunsAProcessPerRollout(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, lsCall, "One file: note.txt."))
	ctx := context.Background()
	var out bytes.Buffer
	h := capture.Harness{Command: os.Args[0] + " -test.run=^TestHarnessProcess$ -- {prompt}", Env: []string{"CAPTURE_TEST_HARNESS=1"},
		Dir: t.TempDir(), Stdout: &out, Stderr: &out, Timeout: time.Minute}
	trajs, rep, err := r.c.RunRollout(ctx, h, "List the files, don't guess.", capture.CreateOptions{Group: "s0"})
	require.NoError(t, err, out.String())
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
	checkContract(t, r, trajs)
	// The tool result the harness sent back came from its own directory.
	recs, err := r.c.Records(ctx, rep.Rollout)
	require.NoError(t, err)
	last := recs[len(recs)-2].Call // before the finish record
	require.Equal(t, "note.txt", last.Messages[len(last.Messages)-1].Content)
	ents, err := os.ReadDir(h.Dir)
	require.NoError(t, err)
	require.Empty(t, ents, "the run's directory is removed")

	// A harness that fails and one that overruns its timeout.
	h.Command = "exit 3"
	_, _, err = r.c.RunRollout(ctx, h, "x", capture.CreateOptions{})
	require.ErrorContains(t, err, "exit status 3")
	h.Command, h.Timeout = "sleep 30 & wait", 100*time.Millisecond
	_, _, err = r.c.RunRollout(ctx, h, "x", capture.CreateOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
