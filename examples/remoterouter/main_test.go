package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/examples/internal/exampletest"
)

func TestRemoteRouter(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"--tokenizer", exampletest.Qwen3Dir(t), "--samples", "24"}, &out))
	require.Contains(t, out.String(), "trajectories: 24, stop reasons: map[completed:24], tool calls: 24 (success rate 1.00)")
	m := regexp.MustCompile(`failing server: (\d+) calls failed`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	n, _ := strconv.Atoi(m[1])
	require.Positive(t, n, "the failure was never exercised")
}
