package agentloop_test

import (
	"fmt"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
)

// A dataset row can be checked before it is queued; the Manager does the
// same for every sample it is given.
func ExampleSample_Validate() {
	rows := []agentloop.Sample{
		{ID: "ok", Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 2+2?"}}},
		{ID: "robot", Messages: []chat.Message{{Role: "robot", Content: "beep"}}},
		{ID: "empty"},
	}
	for _, s := range rows {
		fmt.Println(s.ID, s.Validate())
	}
	// Output:
	// ok <nil>
	// robot agentloop: invalid sample: message 0 has role "robot" (want system, user, assistant or tool)
	// empty agentloop: invalid sample: no messages
}
