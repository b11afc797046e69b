package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// FuzzAnthropicEvents drives the Messages writer with arbitrary turns cut
// at arbitrary chunk boundaries: every frame is JSON named by its type;
// message_start and ping come first, message_delta and message_stop
// last; blocks open at contiguous indices, one at a time, each closed
// before the next, deltas only to the open one; and the blocks, summed
// from their deltas, are the non-streamed reply's content whenever the
// turn comes in the order a parser writes it (reasoning, text, calls).
func FuzzAnthropicEvents(f *testing.F) {
	// plan: a delta per byte, by its value mod 4: 0 reasoning, 1 content,
	// 2 a call, 3 nothing.
	f.Add([]byte{0, 0, 1, 2, 2}, "hmm", "Let me check.", uint8(2))
	f.Add([]byte{}, "", "", uint8(0))
	f.Add([]byte{1, 2, 1}, "", "a\"b\n", uint8(1))
	f.Add([]byte{0, 1, 0, 1, 2}, "x", "y", uint8(3))
	f.Add([]byte{0}, "only thinking", "", uint8(0)) // still one empty text block, as the reply has
	f.Add([]byte{3, 1}, "", "STOP", uint8(4))
	f.Fuzz(func(t *testing.T, plan []byte, reasoning, content string, stop uint8) {
		if len(plan) > 64 {
			plan = plan[:64]
		}
		if !utf8.ValidString(reasoning) || !utf8.ValidString(content) {
			return // the decoder hands out whole characters only
		}
		head := anthropicResponse{ID: "msg_x", Type: "message", Role: "assistant", Model: "m", Content: []anthropicContent{}}
		ev := newAnthropicEvents(head)
		var frames []sseFrame
		var turn turnResult
		canonical := true
		phase := 0 // 0 reasoning, 1 text, 2 calls: the parser's order
		for i, step := range plan {
			var d turnDelta
			switch step % 4 {
			case 0:
				d.reasoning = reasoning
				canonical = canonical && phase == 0
				turn.reasoning += reasoning
			case 1:
				d.content = content
				canonical = canonical && phase <= 1
				if d.content != "" {
					phase = max(phase, 1)
				}
				turn.content += content
			case 2:
				c := turnCall{id: string(rune('a' + i%26)), name: "f", arguments: `{"i": ` + string(rune('0'+i%10)) + `}`}
				d.calls = []turnCall{c}
				phase = 2
				turn.calls = append(turn.calls, c)
			}
			frames = append(frames, ev.add(d)...)
		}
		turn.stop = []server.StopReason{server.StopEOS, server.StopLength, server.StopAbort}[stop%3]
		if stop%5 == 4 {
			turn.matched = "STOP"
		}
		turn.usage = turnUsage{prompt: 10, completion: 3, cached: 4}
		frames = append(frames, ev.finish(turn)...)
		require.NoError(t, ev.err)

		type event struct {
			Type         string            `json:"type"`
			Index        *int              `json:"index"`
			ContentBlock *anthropicContent `json:"content_block"`
			Delta        struct {
				Type        string  `json:"type"`
				Text        string  `json:"text"`
				Thinking    string  `json:"thinking"`
				PartialJSON string  `json:"partial_json"`
				StopReason  *string `json:"stop_reason"`
			} `json:"delta"`
			Usage *anthropicUsage `json:"usage"`
		}
		var blocks []anthropicContent
		var raw []string // tool inputs as streamed
		open := -1
		require.GreaterOrEqual(t, len(frames), 4)
		for i, fr := range frames {
			var e event
			require.NoError(t, json.Unmarshal(fr.data, &e), "%s", fr.data)
			require.Equal(t, fr.name, e.Type)
			switch {
			case i == 0:
				require.Equal(t, "message_start", e.Type)
				continue
			case i == 1:
				require.Equal(t, "ping", e.Type)
				continue
			case i == len(frames)-2:
				require.Equal(t, "message_delta", e.Type)
				require.Equal(t, -1, open, "every block is closed")
				reason, _ := anthropicStopReason(turn)
				require.Equal(t, reason, *e.Delta.StopReason)
				require.Equal(t, anthropicUsageOf(turn.usage), *e.Usage)
				continue
			case i == len(frames)-1:
				require.Equal(t, "message_stop", e.Type)
				continue
			}
			require.NotNil(t, e.Index, "%s", fr.data)
			switch e.Type {
			case "content_block_start":
				require.Equal(t, -1, open)
				require.Equal(t, len(blocks), *e.Index)
				open = *e.Index
				blocks = append(blocks, *e.ContentBlock)
				raw = append(raw, "")
			case "content_block_delta":
				require.Equal(t, open, *e.Index)
				b := &blocks[open]
				switch e.Delta.Type {
				case "text_delta":
					require.Equal(t, "text", b.Type)
					*b.Text += e.Delta.Text
				case "thinking_delta":
					require.Equal(t, "thinking", b.Type)
					*b.Thinking += e.Delta.Thinking
				case "input_json_delta":
					require.Equal(t, "tool_use", b.Type)
					raw[open] += e.Delta.PartialJSON
				default:
					t.Fatalf("delta type %q", e.Delta.Type)
				}
			case "content_block_stop":
				require.Equal(t, open, *e.Index)
				open = -1
			default:
				t.Fatalf("event %q in the middle", e.Type)
			}
		}
		for i := range blocks {
			if blocks[i].Type == "tool_use" {
				blocks[i].Input = json.RawMessage(raw[i])
			}
		}
		if canonical {
			want, err := json.Marshal(anthropicContentOf(turn))
			require.NoError(t, err)
			got, err := json.Marshal(blocks)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got))
			return
		}
		// Out of order, the same text still arrives, each kind in its
		// blocks.
		var texts, thoughts strings.Builder
		for _, b := range blocks {
			if b.Text != nil {
				texts.WriteString(*b.Text)
			}
			if b.Thinking != nil {
				thoughts.WriteString(*b.Thinking)
			}
		}
		require.Equal(t, turn.content, texts.String())
		require.Equal(t, turn.reasoning, thoughts.String())
	})
}
