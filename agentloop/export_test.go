package agentloop

import "github.com/agentrl/agentrl/server"

// Test helpers for the external test package (agentloop_test), which
// exercises the loops through packages agentloop itself must not import.
var (
	LoadQwen3       = qwen3
	SharedQwen3     = sharedQwen3
	ModelTurn       = turn
	CheckTrajectory = checkTrajectory
)

// Recorder is the recording server wrapper.
type Recorder = recorder

// Calls returns the calls the recorder saw for one request id.
func (r *recorder) Calls(id string) ([]server.GenerateRequest, []server.TokenOutput) {
	return r.byID(id)
}
