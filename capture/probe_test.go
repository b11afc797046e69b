package capture_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReachabilityProbe: Claude Code sends HEAD / without a key before its
// first call (seen by scripts/harnesses/run.sh through a logging proxy).
// It gets 200 with no body, names no rollout, records nothing and is not
// counted as a refused call; any other path without a key is still
// refused.
func TestReachabilityProbe(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, "hello"))
	cl := r.model.Client()
	for _, m := range []string{"HEAD", "GET"} {
		code, body := do(t, cl, m, r.model.URL+"/", "")
		require.Equal(t, 200, code)
		require.Empty(t, body)
	}
	require.Zero(t, r.c.Stats().CallsRefused)
	code, _ := do(t, cl, "POST", r.model.URL+"/", helloBody)
	require.Equal(t, 401, code, "only the probe's methods")
	code, _ = do(t, cl, "GET", r.model.URL+"/v1/models", "")
	require.Equal(t, 401, code, "the model list still needs a key")
	require.Equal(t, int64(2), r.c.Stats().CallsRefused)
}
