package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// AgentLoop turns one sample into one trajectory.
//
// Run must be safe for concurrent use: the Manager builds one loop per agent
// name and runs every sample of that name through it. Run returns a
// trajectory whenever the prompt could be encoded, also when it fails
// later: a trajectory whose StopReason is trajectory.StopError comes with the
// error that ended it, and a cancelled run returns its partial trajectory
// with StopReason trajectory.StopAborted and a nil error.
type AgentLoop interface {
	Run(ctx context.Context, s Sample, p server.SamplingParams) (*trajectory.Trajectory, error)
}

// Tokenizer is what agent loops need from a tokenizer;
// *tokenizer.Tokenizer implements it.
type Tokenizer interface {
	EncodeChat(c tokenizer.ChatContext) ([]int32, error)
	EncodeDelta(c tokenizer.ChatContext, added []chat.Message) ([]int32, error)
	Decode(ids []int32, skipSpecial bool) (string, error)
	EOSTokenIDs() []int32
}

// Env is what a Factory gets to build a loop: the engine, the tokenizer,
// the tools and interactions samples may use, and an optional trace hook.
type Env struct {
	Server    server.LLMServer
	Tokenizer Tokenizer
	// Tools are the tools samples may call; nil means none. A sample narrows
	// them with Sample.Tools.
	Tools *tool.Set
	// Interactions are the user/environment simulators, selected per sample
	// by Sample.InteractionKwargs["name"].
	Interactions map[string]Interaction
	// Trace, when set, receives per-turn events. It is called from many
	// goroutines at once.
	Trace TraceFunc
	// Boundary, when set, is verl's continuous-token rule for the model's
	// family (tokenizer.ContinuousFamilyForModelType of its config.json
	// model_type): every observation's delta is checked to build the
	// stream verl's rule builds, and an episode whose delta would not ends
	// with StopError naming the family. nil: no check.
	Boundary *tokenizer.Boundary
	// Vision, when set, lets samples and tool results carry images (see
	// Vision); nil: an image is an ErrImage error.
	Vision *Vision
}

func (e *Env) check() error {
	if e == nil {
		return errors.New("agentloop: Env is nil")
	}
	if e.Server == nil {
		return errors.New("agentloop: Env.Server is nil")
	}
	if e.Tokenizer == nil {
		return errors.New("agentloop: Env.Tokenizer is nil")
	}
	return nil
}

// Config holds the knobs of the built-in loops. The YAML keys are verl's
// actor_rollout_ref.rollout.multi_turn.* (plus prompt_length and
// response_length from actor_rollout_ref.rollout); zero means verl's default
// or unlimited, as noted.
type Config struct {
	// MaxAssistantTurns and MaxUserTurns end the loop with
	// trajectory.StopMaxTurns; 0 = unlimited.
	MaxAssistantTurns int `yaml:"max_assistant_turns" json:"max_assistant_turns"`
	MaxUserTurns      int `yaml:"max_user_turns" json:"max_user_turns"`
	// MaxParallelCalls is how many of a turn's tool calls run; 0 = 1 (verl's
	// default). Calls beyond it get an observation saying they were not run.
	MaxParallelCalls int `yaml:"max_parallel_calls" json:"max_parallel_calls"`
	// MaxToolResponseLength caps each tool response in characters; 0 = 256
	// (verl's default), negative = unlimited.
	MaxToolResponseLength int `yaml:"max_tool_response_length" json:"max_tool_response_length"`
	// ToolResponseTruncateSide is "left", "right" or "middle" ("" = middle,
	// verl's default), read by tool.ParseSide (see tool.Truncate).
	ToolResponseTruncateSide string `yaml:"tool_response_truncate_side" json:"tool_response_truncate_side"`
	// MaxConsecutiveInvalidToolCalls ends the loop with
	// trajectory.StopInvalidCalls after that many turns in a row whose calls
	// were all invalid (unparsable, unknown tool or bad arguments); 0 = never.
	MaxConsecutiveInvalidToolCalls int `yaml:"max_consecutive_invalid_tool_calls" json:"max_consecutive_invalid_tool_calls"`
	// Format is the tool-call parser format (parser.Formats() or
	// parser.Aliases()); "" = hermes. An unknown name is an ErrConfig error
	// when the config is registered.
	Format string `yaml:"format" json:"format"`
	// ThinkAware ignores tool calls written inside <think>…</think>.
	ThinkAware bool `yaml:"think_aware" json:"think_aware"`
	// PromptLength: a longer prompt (tool schemas included) ends the loop
	// before generating with trajectory.StopPromptLength; 0 = unlimited.
	PromptLength int `yaml:"prompt_length" json:"prompt_length"`
	// ResponseLength is the response budget in tokens (model and
	// observation tokens); 0 = unlimited.
	ResponseLength int `yaml:"response_length" json:"response_length"`
	// ChatTemplateKwargs are extra template variables, e.g. enable_thinking.
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs" json:"chat_template_kwargs"`
	// Extra carries settings of custom loops (YAML key "extra"; unknown keys
	// elsewhere are errors, so a misspelt knob is never silently ignored).
	Extra map[string]any `yaml:"extra" json:"extra,omitempty"`
}

func (c Config) truncateSide() tool.Side {
	if c.ToolResponseTruncateSide == "" {
		return tool.TruncateMiddle
	}
	side, _ := tool.ParseSide(c.ToolResponseTruncateSide) // checked by validate
	return side
}

func (c Config) validate() error {
	var bad []string
	if c.MaxAssistantTurns < 0 {
		bad = append(bad, fmt.Sprintf("max_assistant_turns %d < 0", c.MaxAssistantTurns))
	}
	if c.MaxUserTurns < 0 {
		bad = append(bad, fmt.Sprintf("max_user_turns %d < 0", c.MaxUserTurns))
	}
	if c.MaxParallelCalls < 0 {
		bad = append(bad, fmt.Sprintf("max_parallel_calls %d < 0", c.MaxParallelCalls))
	}
	if c.MaxConsecutiveInvalidToolCalls < 0 {
		bad = append(bad, fmt.Sprintf("max_consecutive_invalid_tool_calls %d < 0", c.MaxConsecutiveInvalidToolCalls))
	}
	if c.PromptLength < 0 || c.ResponseLength < 0 {
		bad = append(bad, fmt.Sprintf("prompt_length %d and response_length %d must be >= 0", c.PromptLength, c.ResponseLength))
	}
	if c.ToolResponseTruncateSide != "" {
		if _, err := tool.ParseSide(c.ToolResponseTruncateSide); err != nil {
			bad = append(bad, fmt.Sprintf("tool_response_truncate_side: %v", err))
		}
	}
	// The parser is looked up here, so that a misspelt format fails when
	// the config is registered, not in every sample; its error is wrapped
	// (parser.ErrUnknownFormat).
	var format error
	if c.Format != "" {
		if _, err := parser.New(c.Format, parser.Options{}); err != nil {
			format = err
		}
	}
	switch {
	case format != nil && len(bad) > 0:
		return fmt.Errorf("%w: %s; format: %w", ErrConfig, strings.Join(bad, "; "), format)
	case format != nil:
		return fmt.Errorf("%w: format: %w", ErrConfig, format)
	case len(bad) > 0:
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(bad, "; "))
	}
	return nil
}

// ErrConfig is wrapped by errors about a loop's or the Manager's settings.
var ErrConfig = errors.New("agentloop: invalid config")

// Keys the built-in loops and the Manager write into trajectory.Extra.
// Counts are typed fields of the trajectory instead (ToolCalls, ToolErrors,
// NumPreempted).
const (
	ExtraInteractionScore         = "interaction_score"          // the interaction's final score (number)
	ExtraInteractionScoreError    = "interaction_score_error"    // why the interaction gave no final score
	ExtraInteractionFinalizeError = "interaction_finalize_error" // the interaction's Finalize failed
	ExtraReleaseError             = "release_error"              // closing the trajectory's tool instances failed
	ExtraError                    = "error"                      // the error that ended a StopError trajectory
	ExtraTimeout                  = "timeout"                    // true: Options.Timeout cut the trajectory (aborted)
	ExtraRewardError              = "reward_error"               // the reward function failed
)

func setExtra(t *trajectory.Trajectory, key string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return // only plain numbers and strings are stored here
	}
	if t.Extra == nil {
		t.Extra = make(map[string]json.RawMessage)
	}
	t.Extra[key] = b
}

// ExtraInt reads an integer the loops stored in t.Extra (0 when absent).
func ExtraInt(t *trajectory.Trajectory, key string) int {
	var n int
	if raw, ok := t.Extra[key]; ok {
		_ = json.Unmarshal(raw, &n)
	}
	return n
}
