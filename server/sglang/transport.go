package sglang

import "github.com/agentrl/agentrl/server/internal/httpclient"

// DefaultHTTPClient is the connection pool every Client without its own
// HTTPClient shares (the same pool for SGLang and vLLM clients): kept-alive
// connections reused across calls, enough idle connections per host for
// thousands of concurrent trajectories. Timeouts are per call, through the
// context.
var DefaultHTTPClient = httpclient.Default
