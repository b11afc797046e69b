package capture

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentrl/agentrl/chat"
)

// The canonical changes harnesses and dialects make to a conversation
// they send back, which do not break a continuation (blackbox-capture.md,
// "What real harnesses send"):
//   - tool-call arguments re-serialized (key order, spacing): compared as
//     JSON values;
//   - reasoning dropped from earlier assistant turns;
//   - whitespace around an assistant turn's text trimmed;
//   - cache_control markers moved (the Messages decoder drops them before
//     the conversation reaches capture).
// Anything else — an edited or removed message, another system prompt,
// other tools — is a rewritten history and starts a new segment.

// sameMessage says how cur, a message of the new call's history, differs
// from prev, the same message as an earlier call received it ("" when it
// does not).
func sameMessage(prev, cur chat.Message) string {
	if prev.Role != cur.Role {
		return fmt.Sprintf("role %q, was %q", cur.Role, prev.Role)
	}
	if prev.Role == chat.RoleAssistant {
		return sameAssistant(prev, cur, true)
	}
	switch {
	case prev.Content != cur.Content:
		return "content edited"
	case len(prev.Parts) > 0 || len(cur.Parts) > 0:
		if d := sameParts(prev.Parts, cur.Parts); d != "" {
			return d
		}
	}
	switch {
	case prev.ToolCallID != cur.ToolCallID:
		return fmt.Sprintf("tool_call_id %q, was %q", cur.ToolCallID, prev.ToolCallID)
	case prev.Name != cur.Name:
		return fmt.Sprintf("name %q, was %q", cur.Name, prev.Name)
	}
	return ""
}

// sameParts compares the content parts of a message with images (text
// parts are joined into Content otherwise): the template renders them in
// order, so text and images must be the same, in the same places. An
// image is the same when its source is (the data URL a harness sends
// again, or the bytes).
func sameParts(prev, cur []chat.ContentPart) string {
	if len(prev) != len(cur) {
		return fmt.Sprintf("%d content parts, were %d", len(cur), len(prev))
	}
	for i, p := range prev {
		c := cur[i]
		switch {
		case (p.Image == nil) != (c.Image == nil), p.Image == nil && p.Type != c.Type:
			return fmt.Sprintf("content[%d] is %s, was %s", i, partKind(c), partKind(p))
		case p.Image == nil && p.Text != c.Text:
			return fmt.Sprintf("content[%d] text edited", i)
		case p.Image != nil && !sameImage(p.Image, c.Image):
			return fmt.Sprintf("content[%d] is another image", i)
		}
	}
	return ""
}

func partKind(p chat.ContentPart) string {
	if p.Image != nil {
		return "an image part"
	}
	return fmt.Sprintf("a %q part", p.Type)
}

// sameImage compares two image sources: a record holds an image as the
// data URL chat's encoding writes (bytes become a data URL).
func sameImage(a, b *chat.Image) bool {
	return a.DataURL() == b.DataURL()
}

// sameAnswer says how m, as the harness sent it back, differs from the
// answer agentrl gave.
func sameAnswer(answer, m chat.Message) string {
	if m.Role != chat.RoleAssistant {
		return fmt.Sprintf("role %q, not the assistant's answer", m.Role)
	}
	return sameAssistant(answer, m, false)
}

// sameAssistant compares two assistant turns up to the canonical changes;
// withIDs also compares the tool call ids (both sides came from the
// harness).
func sameAssistant(a, b chat.Message, withIDs bool) string {
	if strings.TrimSpace(a.Content) != strings.TrimSpace(b.Content) {
		return "content edited"
	}
	if b.ReasoningContent != "" && strings.TrimSpace(a.ReasoningContent) != strings.TrimSpace(b.ReasoningContent) {
		return "reasoning edited"
	}
	if len(a.ToolCalls) != len(b.ToolCalls) {
		return fmt.Sprintf("%d tool calls, was %d", len(b.ToolCalls), len(a.ToolCalls))
	}
	for i, ca := range a.ToolCalls {
		cb := b.ToolCalls[i]
		switch {
		case ca.Function.Name != cb.Function.Name:
			return fmt.Sprintf("tool_calls[%d] calls %q, was %q", i, cb.Function.Name, ca.Function.Name)
		case !jsonEqualText(ca.Function.Arguments, cb.Function.Arguments):
			return fmt.Sprintf("tool_calls[%d] has other arguments", i)
		case withIDs && ca.ID != cb.ID:
			return fmt.Sprintf("tool_calls[%d] has id %q, was %q", i, cb.ID, ca.ID)
		}
	}
	return ""
}

// sameTools says how the new call's tools differ from an earlier call's.
func sameTools(prev, cur []chat.ToolSchema) string {
	if len(prev) != len(cur) {
		return fmt.Sprintf("%d tools offered, were %d", len(cur), len(prev))
	}
	for i := range prev {
		p, c := prev[i].Function, cur[i].Function
		if p.Name != c.Name || p.Description != c.Description || !jsonEqualText(string(p.Parameters), string(c.Parameters)) {
			return fmt.Sprintf("tools[%d] (%s) changed", i, c.Name)
		}
	}
	return ""
}

// jsonEqualText compares two JSON texts as values; texts that are not
// JSON compare as bytes.
func jsonEqualText(a, b string) bool {
	if a == b {
		return true
	}
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// jsonEqualValues compares two decoded JSON objects; nil and empty are
// the same.
func jsonEqualValues(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && jsonEqualText(string(ja), string(jb))
}
