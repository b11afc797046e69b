package agentloop

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/agentrl/agentrl/chat"
)

// Sample is one dataset row: the fields of a verl dataset row that agent
// loops use.
type Sample struct {
	// ID names the prompt: its trajectories are "<ID>" (n = 1) or
	// "<ID>/<rollout>"; when empty they are "<GroupID>/<rollout>".
	ID string
	// Index is the row's position in the dataset (extra_info.index).
	Index int
	// GroupID ties the n rollouts of one prompt together (verl's uid, one
	// per prompt row). When empty the Manager uses ID, else Index; in a
	// Generate batch whose samples set none of the three (all Index 0) it
	// numbers them by position. Ids that stay ambiguous are an ErrSample
	// error: two rollouts with one id would be one engine request and one
	// training row, and prompts in one group would share advantages.
	GroupID string
	// Rollout is this sample's number within its group, 0..n-1 (set by the
	// Manager).
	Rollout int
	// AgentName selects the loop; "" uses the Manager's default.
	AgentName string
	// Messages is the prompt: at least one message, each with a role of
	// chat's (system, user, assistant, tool); see Validate.
	Messages []chat.Message
	// Tools, when non-nil, selects the tools this sample may use by name
	// (verl's extra_info.tool_selection); nil means all of Env.Tools.
	Tools []string
	// ToolsKwargs maps a tool name to the kwargs its instance is created with
	// (the create_kwargs of verl's extra_info.tools_kwargs).
	ToolsKwargs map[string]map[string]any
	// InteractionKwargs selects and starts the interaction: "name" picks it
	// from Env.Interactions, the whole map is passed to Interaction.Start.
	InteractionKwargs map[string]any
	// DataSource and GroundTruth are for reward functions.
	DataSource  string
	GroundTruth any
	// Extra holds the remaining extra_info fields.
	Extra map[string]any
}

// ErrSample is wrapped by errors about a dataset row.
var ErrSample = errors.New("agentloop: invalid sample")

// Validate checks what every loop needs of a sample's prompt: at least one
// message, each with one of chat's roles (system, user, assistant, tool).
// A chat template renders nothing useful otherwise: an empty list fails
// inside the template, and a message with another role (OpenAI's
// "developer" is "system" here) is dropped from the prompt without a word
// by templates such as Qwen3's. The Manager checks every sample before
// running it: Generate fails the batch naming the sample, Stream delivers
// the sample's group with the error. The error wraps ErrSample.
func (s Sample) Validate() error {
	if len(s.Messages) == 0 {
		return fmt.Errorf("%w: no messages", ErrSample)
	}
	for i, m := range s.Messages {
		switch m.Role {
		case chat.RoleSystem, chat.RoleUser, chat.RoleAssistant, chat.RoleTool:
		default:
			return fmt.Errorf("%w: message %d has role %q (want %s, %s, %s or %s)", ErrSample, i, m.Role,
				chat.RoleSystem, chat.RoleUser, chat.RoleAssistant, chat.RoleTool)
		}
	}
	return nil
}

// describe names the sample in errors: its position in the input and the
// ids it has.
func (s Sample) describe(pos int) string {
	d := "sample " + strconv.Itoa(pos)
	switch {
	case s.ID != "":
		d += fmt.Sprintf(" (id %q)", s.ID)
	case s.GroupID != "":
		d += fmt.Sprintf(" (group %q)", s.GroupID)
	default:
		d += fmt.Sprintf(" (index %d)", s.Index)
	}
	return d
}

// groupID is the sample's group id: GroupID, else ID, else Index.
func (s Sample) groupID() string {
	switch {
	case s.GroupID != "":
		return s.GroupID
	case s.ID != "":
		return s.ID
	}
	return strconv.Itoa(s.Index)
}
