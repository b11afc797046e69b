// Package servertest is a scripted, deterministic server.LLMServer for tests
// and benchmarks of code that drives engines (agent loops, the router, the
// HTTP clients through httpapi). Replies come from a Rule (echo, constant,
// canned scripts per request id, seeded random, or any func); latencies come
// from seeded distributions; faults (errors before any token, 503/429 through
// httpapi, hangs until the context is done, aborts mid-way with partial
// tokens) are injected per call or server-wide; counters record calls and
// in-flight load. It is never used by production code.
//
//	srv := servertest.New(servertest.Config{
//		Rule:    servertest.Constant(5, 6, 7, 2),
//		Latency: servertest.LogNormal(20*time.Millisecond, 0.5),
//		Seed:    1,
//	})
//	srv.FaultNext(1, servertest.Unavailable()) // the first call fails with a 503-shaped error
//	out, err := srv.Generate(ctx, req)
package servertest
