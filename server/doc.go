// Package server defines the token-in/token-out engine contract of agentrl:
// LLMServer, the optional capabilities (abort, sleep/wake, weight updates,
// health) discovered by type assertion, and the typed Error every client
// returns. CheckRequest is the request check the engines share, so that
// every engine refuses the same requests with the same errors. Clients for
// SGLang and vLLM, an HTTP front end and a scripted test engine live in
// its subpackages.
//
//	out, err := srv.Generate(ctx, server.GenerateRequest{
//		RequestID: "traj-42",
//		PromptIDs: prompt,
//		Params:    server.SamplingParams{Temperature: 1, MaxNewTokens: 256, Logprobs: true},
//	})
//	if a, ok := srv.(server.Aborter); ok { _ = a.Abort(ctx, "traj-42") }
package server
