package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// startTestRedis starts a redis-server of the test's own on a unix socket
// (appendfsync always) and returns its URL; it skips without
// redis-server, or under CI=1 fails.
func startTestRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI=1: redis-server is not installed (Debian package redis-server): %v", err)
		}
		t.Skipf("redis-server is not installed (Debian package redis-server): %v", err)
	}
	dir, err := os.MkdirTemp("", "rds") // short: a socket path has a length limit
	require.NoError(t, err)
	sock := filepath.Join(dir, "s")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--logfile", filepath.Join(dir, "log"))
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		os.RemoveAll(dir)
	})
	for deadline := time.Now().Add(time.Minute); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			_, _ = c.Write([]byte("PING\r\n"))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				return "unix://" + sock
			}
		}
		select {
		case <-done:
			t.Fatal("redis-server exited")
		case <-time.After(5 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "redis-server did not answer PING")
	}
}

// --capture-redis keeps the capture store in Redis: the run's rollouts
// and their calls are there afterwards, for other processes on it.
func TestRolloutHarnessRedis(t *testing.T) {
	url := startTestRedis(t)
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	imStart, _ := tok.TokenID("<|im_start|>")
	imEnd, _ := tok.TokenID("<|im_end|>")
	call := append(tok.Encode("<tool_call>\n{\"name\": \"shell\", \"arguments\": {\"command\": \"echo agentrl-ok\"}}\n</tool_call>"), imEnd)
	answer := append(tok.Encode("It printed agentrl-ok."), imEnd)
	rule := func(c servertest.Call) servertest.Reply {
		n := 0
		for _, id := range c.Req.PromptIDs {
			if id == imStart {
				n++
			}
		}
		if n <= 3 {
			return servertest.Reply{Tokens: call}
		}
		return servertest.Reply{Tokens: answer}
	}
	srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: rule}), httpapi.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "Run echo."}], "extra_info": {"index": 1}}`+"\n"), 0o644))
	out := filepath.Join(tmp, "t.jsonl")
	t.Setenv("AGENTRL_TEST_HARNESS", "1")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(),
		"--out", out, "--n", "1", "--capture-redis", url,
		"--harness", os.Args[0] + " -test.run=^TestRolloutHarnessProcess$ -- {prompt}",
		"data.max_prompt_length=1024", "data.max_response_length=256"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	require.Contains(t, strings.Join(strings.Fields(stdout.String()), " "), "capture 1 rollouts, 2 calls recorded, 0 aborted, 0 refused")

	ctx := context.Background()
	st, err := capture.OpenRedis(ctx, url, capture.RedisOptions{})
	require.NoError(t, err)
	defer st.Close()
	ids, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, ids, 1, "the rollout is kept in Redis")
	recs, err := st.Load(ctx, ids[0])
	require.NoError(t, err)
	n := 0
	for _, r := range recs {
		if r.Kind == capture.KindCall {
			n++
		}
	}
	require.Equal(t, 2, n)

	// One store only, and a Redis that is not there is an error naming
	// the flag.
	stderr.Reset()
	code = runMain(ctx, []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(),
		"--out", out, "--harness", "true", "--capture-redis", url, "--capture-dir", tmp}, nil, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "give one")
	stderr.Reset()
	code = runMain(ctx, []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(),
		"--out", out, "--harness", "true", "--capture-redis", "unix://" + filepath.Join(tmp, "none")}, nil, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "--capture-redis")
}
