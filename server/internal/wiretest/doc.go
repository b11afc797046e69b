// Package wiretest holds what the tests of the HTTP engine clients
// (server/sglang, server/vllm) and of server/httpapi share: a TestMain that
// checks for leaked goroutines, a recorder of the requests a client sends,
// a loopback httpapi server behind it, the round-trip benchmark's
// workload, and for the clients' stream tests the writing of a replayed
// engine's event stream (SSE), fuzz input as a stream (SSELines) and the
// checks every client's stream must pass. It is imported by tests only.
//
//	func TestMain(m *testing.M) { wiretest.Main(m, sglang.DefaultHTTPClient) }
//
//	rec, ts := wiretest.Serve(t, engine)
//	// … point a client at ts.URL, call it …
//	body := rec.Last("/generate").Body
package wiretest
