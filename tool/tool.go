package tool

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/agentrl/agentrl/chat"
)

// Result is what a tool returns for one call: the text the model sees, an
// optional step reward and optional metrics (recorded with the trajectory).
type Result struct {
	Text    string
	Reward  float64
	Metrics map[string]float64
	// Images are images the tool returns (verl's ToolResponse.image), for
	// vision-language models: the agent loop puts them in the tool message
	// before the text, as verl's ToolAgentLoop does, and processes them.
	Images []chat.Image
}

// Tool is a callable tool with per-trajectory state.
//
// Create is called once per trajectory, on the first call of the tool, with
// that sample's create kwargs; Execute runs one call with arguments that
// already passed schema validation; Release is always called for every
// instance Create returned, also when the trajectory was cancelled or a call
// panicked. Implementations must be safe for concurrent use by many
// trajectories (and by concurrent calls of one trajectory).
type Tool interface {
	Schema() chat.ToolSchema
	Create(ctx context.Context, kwargs map[string]any) (instanceID string, err error)
	Execute(ctx context.Context, instanceID string, args json.RawMessage) (Result, error)
	Release(ctx context.Context, instanceID string) error
}

// Sentinel errors carried (with errors.Is) by CallResult.Err. Every failure
// of a call wraps exactly one of them, so the agent loop can count them by
// kind; the CallResult.Text of a failed call is always a message meant for the
// model.
var (
	// ErrUnknownTool: the model called a name that is not in the set.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrInvalidArguments: arguments are not JSON, not an object, or violate the schema.
	ErrInvalidArguments = errors.New("invalid arguments")
	// ErrTimeout: the call ran longer than Limits.Timeout or the context deadline.
	ErrTimeout = errors.New("tool call timed out")
	// ErrPanic: Create, Execute or Release panicked; the error holds the value and a short stack.
	ErrPanic = errors.New("tool panicked")
	// ErrRateLimited: no token of the tool's rate limit can be had before the context ends.
	ErrRateLimited = errors.New("tool rate limited")
	// ErrExecution: the tool's Create or Execute returned an error.
	ErrExecution = errors.New("tool execution failed")
	// ErrCanceled: the caller's context was cancelled before the call finished.
	ErrCanceled = errors.New("tool call cancelled")
	// ErrSessionClosed: Call after Close.
	ErrSessionClosed = errors.New("tool session closed")
)

// Outcomes of a tool call as ErrorKind names them: metric label values.
const (
	OutcomeOK               = "ok"
	OutcomeUnknownTool      = "unknown_tool"
	OutcomeInvalidArguments = "invalid_arguments"
	OutcomeTimeout          = "timeout"
	OutcomePanic            = "panic"
	OutcomeRateLimited      = "rate_limited"
	OutcomeExecution        = "execution_error"
	OutcomeCanceled         = "canceled"
	OutcomeSessionClosed    = "session_closed"
	// OutcomeOther is an error that wraps none of the sentinels (one a
	// caller made up, not one Session.Call returns).
	OutcomeOther = "other"
)

// ErrorKind names the kind of a CallResult.Err: OutcomeOK for nil, else
// the Outcome* of the sentinel it wraps. The names are few and fixed, so
// they make good metric labels.
func ErrorKind(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrUnknownTool):
		return OutcomeUnknownTool
	case errors.Is(err, ErrInvalidArguments):
		return OutcomeInvalidArguments
	case errors.Is(err, ErrTimeout):
		return OutcomeTimeout
	case errors.Is(err, ErrPanic):
		return OutcomePanic
	case errors.Is(err, ErrRateLimited):
		return OutcomeRateLimited
	case errors.Is(err, ErrCanceled):
		return OutcomeCanceled
	case errors.Is(err, ErrSessionClosed):
		return OutcomeSessionClosed
	case errors.Is(err, ErrExecution):
		return OutcomeExecution
	}
	return OutcomeOther
}

// Limits bound how one tool is used across all sessions of a Set.
//
// MaxConcurrency caps the calls (Execute and Create) running at once; calls
// over the cap wait for a slot, bounded only by their context, so queueing
// under load never counts against the model. RatePerSecond and Burst form a
// token bucket (Burst 0 means 1): a call waits for a token, and fails at once
// with ErrRateLimited when its context deadline would pass first. Timeout
// bounds one call's Create+Execute once it has its slot and token.
type Limits struct {
	MaxConcurrency int           // per tool, 0 = unlimited
	RatePerSecond  float64       // token bucket refill rate, 0 = unlimited
	Burst          int           // bucket size, 0 = 1 when RatePerSecond > 0
	Timeout        time.Duration // per call, 0 = none
}

// Side says which side of an over-long tool response Truncate cuts off. The
// names follow verl's tool_response_truncate_side since verl PR #6313 (which
// fixed the two being swapped): "left" drops the start and keeps the tail,
// matching verl's prompt truncation; "right" drops the end and keeps the
// head.
type Side int

const (
	// TruncateLeft cuts the start: it keeps the last max characters,
	// prefixed by "(truncated)...".
	TruncateLeft Side = iota
	// TruncateRight cuts the end: it keeps the first max characters and
	// appends "...(truncated)".
	TruncateRight
	// TruncateMiddle keeps the first max/2 and the last max/2 characters with
	// "...(truncated)..." between them (an odd max keeps max-1 characters).
	TruncateMiddle
)

// String returns the verl config spelling: "left", "right" or "middle".
func (s Side) String() string {
	switch s {
	case TruncateLeft:
		return "left"
	case TruncateRight:
		return "right"
	case TruncateMiddle:
		return "middle"
	}
	return "Side(" + itoa(int(s)) + ")"
}

// ParseSide reads verl's tool_response_truncate_side value.
func ParseSide(s string) (Side, error) {
	switch s {
	case "left":
		return TruncateLeft, nil
	case "right":
		return TruncateRight, nil
	case "middle":
		return TruncateMiddle, nil
	}
	return 0, errors.New(`tool: truncate side must be "left", "right" or "middle", got "` + s + `"`)
}

// Truncation markers, identical to verl's so that trajectories match.
const (
	markLeft   = "(truncated)..." // before the kept tail
	markRight  = "...(truncated)" // after the kept head
	markMiddle = "...(truncated)..."
)

// Truncate shortens s to at most max characters (Unicode code points, as
// Python's len counts them) plus a marker, exactly as verl's ToolAgentLoop
// does with max_tool_response_length and tool_response_truncate_side:
//
//	TruncateLeft:   "(truncated)..." + s[-max:]
//	TruncateRight:  s[:max] + "...(truncated)"
//	TruncateMiddle: s[:max/2] + "...(truncated)..." + s[-(max/2):]
//
// s is returned unchanged when it has at most max characters or max <= 0
// (no limit). One deliberate difference from verl: with TruncateMiddle and
// max == 1, Python's s[-0:] is the whole string, so verl keeps all of s; here
// no character is kept. Bytes that are not valid UTF-8 count as one
// character each and are kept as they are.
func Truncate(s string, max int, side Side) string {
	if max <= 0 || len(s) <= max {
		return s // a string of n bytes has at most n characters
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	switch side {
	case TruncateLeft:
		return markLeft + s[runeOffset(s, n-max):]
	case TruncateMiddle:
		h := max / 2
		return s[:runeOffset(s, h)] + markMiddle + s[runeOffset(s, n-h):]
	default:
		return s[:runeOffset(s, max)] + markRight
	}
}

// runeOffset returns the byte offset of the k-th character of s.
func runeOffset(s string, k int) int {
	off := 0
	for i := 0; i < k; i++ {
		_, w := utf8.DecodeRuneInString(s[off:])
		off += w
	}
	return off
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
