package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// encodeCases are call records with what encoding a string, a float or
// an optional field can trip on: HTML and control characters, invalid
// UTF-8, U+2028, logprobs near the 'e' format's bounds, empty and nil
// slices, every optional field set and unset.
func encodeCases() []Record {
	at := time.Date(2026, 12, 3, 0, 1, 2, 345678901, time.UTC)
	hostile := "<tool_call>\n\"a\" & 'b' \\ \x00\x1f é \u2028 \xff\xfe end"
	seed := uint64(7)
	full := &CallRecord{ID: "c12", Dialect: "messages", Request: json.RawMessage("{\n  \"model\" : \"x\",\n \"messages\": [ ]\n}"),
		Header: map[string][]string{"User-Agent": {"sdk/1 <x>"}, "X-Stainless": {"a", "b"}},
		Messages: []chat.Message{{Role: "system", Content: hostile}, {Role: "user", Content: "hi"},
			{Role: "assistant", ReasoningContent: "think " + hostile, ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function",
				Function: chat.FunctionCall{Name: "ls", Arguments: `{"dir": "<.>"}`}}}},
			{Role: "tool", ToolCallID: "call_1", Content: "a.txt\nb.txt"}},
		Tools:          []chat.ToolSchema{{Type: "function", Function: chat.FunctionSchema{Name: "ls", Parameters: json.RawMessage(`{"type": "object"}`)}}},
		TemplateKwargs: map[string]any{"enable_thinking": false, "x": []any{1.5, "<"}},
		Parent:         "c11", Segment: "ambiguous parent: also matches c10 " + hostile,
		DeltaIDs: []int32{0, 1, 151645, math.MaxInt32}, SampledIDs: []int32{5, 6, 7, 8, 9, 10, 11, 12, 13},
		Logprobs:   []float32{0, float32(math.Copysign(0, -1)), -1e-6, -9.99e-7, -1e-7, -1.5e-45, -0.125, -17.25, -3.4e38},
		StopReason: "eos", WeightVersion: -3, Sampling: &Sampling{Temperature: 0.7, TopP: 1, TopK: 20, MaxNewTokens: 16, StopTokenIDs: []int32{2}, Seed: &seed, Logprobs: true},
		Answer:   chat.Message{Role: "assistant", Content: hostile, ReasoningContent: "r"},
		Received: at, Dispatched: at.Add(time.Millisecond), Recorded: at.In(time.FixedZone("x", 3600))}
	bare := &CallRecord{ID: "c0", PromptIDs: []int32{1}, SampledIDs: []int32{}, Messages: []chat.Message{}}
	nils := &CallRecord{ID: "c1", PromptIDs: []int32{1, 2}}
	emptyDelta := &CallRecord{ID: "c2", Parent: "c1", DeltaIDs: []int32{}, SampledIDs: []int32{3}, Logprobs: []float32{}}
	var out []Record
	for _, c := range []*CallRecord{full, bare, nils, emptyDelta} {
		out = append(out, Record{Kind: KindCall, Time: at, Call: c})
	}
	r := 0.5
	return append(out, Record{Kind: KindReward, Time: at, Reward: &r}, Record{Kind: KindAbort, CallID: "c3", Reason: hostile})
}

// sameAsMarshal says how got, marshalRecord's line, differs from want,
// json.Marshal's: they must be the same bytes but for the HTML escaping
// encoding/json adds to what MarshalJSON methods return (the messages),
// and decode to the same record.
func sameAsMarshal(got, want []byte) string {
	var esc bytes.Buffer
	json.HTMLEscape(&esc, got)
	if esc.String() != string(want) {
		return fmt.Sprintf("bytes differ:\n%s\n%s", want, got)
	}
	if bytes.IndexByte(got, '\n') >= 0 {
		return "a newline in the line"
	}
	rg, errG := DecodeRecord(got)
	rw, errW := DecodeRecord(want)
	if (errG == nil) != (errW == nil) {
		return fmt.Sprintf("decoding: %v, and Marshal's: %v", errG, errW)
	}
	if rg.Call != nil && rg.Call.Request != nil {
		// The request as received keeps its <, > and &; Marshal's is
		// escaped.
		var r bytes.Buffer
		json.HTMLEscape(&r, rg.Call.Request)
		rg.Call.Request = r.Bytes()
	}
	if !reflect.DeepEqual(rg, rw) {
		return fmt.Sprintf("decoded differently:\n%+v\n%+v", rw, rg)
	}
	return ""
}

// The hand-written encoder writes json.Marshal's bytes (up to HTML
// escaping), which decode to the same record.
func TestEncodeCallAgreesWithMarshal(t *testing.T) {
	for i, r := range encodeCases() {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		got, err := marshalRecord(&r)
		require.NoError(t, err, "case %d", i)
		require.Empty(t, sameAsMarshal(got, want), "case %d", i)
	}
	// What Marshal refuses, so does it.
	bad := encodeCases()[0]
	bad.Call.Logprobs = []float32{float32(math.NaN())}
	_, err := marshalRecord(&bad)
	require.Error(t, err)
	bad = encodeCases()[0]
	bad.Call.Request = json.RawMessage(`{"unterminated`)
	_, err = marshalRecord(&bad)
	require.ErrorContains(t, err, "the request is not JSON")
}

// FuzzEncodeCall: for any strings, ids and logprobs a call can hold, the
// encoder writes json.Marshal's bytes, on one line.
func FuzzEncodeCall(f *testing.F) {
	f.Add("c0", "hello <b>", "\xff\u2028\n", `{"a":1}`, int32(5), float32(-0.5), float32(1e-7))
	f.Add("", "", "", `[]`, int32(0), float32(0), float32(-3e38))
	f.Fuzz(func(t *testing.T, id, text, reason, request string, tokID int32, lp1, lp2 float32) {
		if tokID < 0 {
			tokID = -(tokID + 1)
		}
		c := &CallRecord{ID: id, Dialect: "chat", Request: json.RawMessage(request),
			Messages: []chat.Message{{Role: "user", Content: text}, {Role: "tool", ToolCallID: reason, Content: text + reason}},
			Segment:  reason, PromptIDs: []int32{tokID}, SampledIDs: []int32{tokID, 1}, Logprobs: []float32{lp1, lp2},
			StopReason: reason, Answer: chat.Message{Role: "assistant", Content: reason, ReasoningContent: text}}
		r := Record{Kind: KindCall, Time: time.Unix(int64(tokID), 0), Call: c}
		want, wantErr := json.Marshal(r)
		got, gotErr := marshalRecord(&r)
		if wantErr != nil || gotErr != nil {
			if (wantErr == nil) != (gotErr == nil) && !(len(request) == 0 && gotErr == nil) {
				t.Fatalf("Marshal: %v, marshalRecord: %v", wantErr, gotErr)
			}
			return
		}
		if d := sameAsMarshal(got, want); d != "" {
			t.Fatal(d)
		}
	})
}
