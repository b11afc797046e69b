package parser

import "strings"

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// splitThink separates reasoning from the rest of a turn. It returns the
// text outside reasoning (pieces concatenated) and the reasoning text
// (blocks joined by "\n").
//
// Rules, in order:
//   - If "</think>" occurs before any "<think>", everything before it is
//     reasoning. Qwen3 thinking templates put "<think>\n" into the
//     generation prompt, so the model's own text starts inside the block.
//   - Each "<think>…</think>" block after that is reasoning.
//   - A "<think>" that is never closed makes the rest of the text
//     reasoning: a turn cut off while thinking has no calls.
func splitThink(text string) (rest, reasoning string) {
	return splitThinkTags(text, thinkOpen, thinkClose)
}

// splitThinkTags is splitThink for a model whose reasoning tags are
// thinkOpen and thinkClose (Seed-OSS writes <seed:think>…</seed:think>).
func splitThinkTags(text, thinkOpen, thinkClose string) (rest, reasoning string) {
	if !strings.Contains(text, thinkClose) && !strings.Contains(text, thinkOpen) {
		return text, ""
	}
	var out, rs []string
	if cls := strings.Index(text, thinkClose); cls >= 0 {
		if open := strings.Index(text[:cls], thinkOpen); open < 0 {
			rs = append(rs, text[:cls])
			text = text[cls+len(thinkClose):]
		}
	}
	for {
		open := strings.Index(text, thinkOpen)
		if open < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:open])
		text = text[open+len(thinkOpen):]
		cls := strings.Index(text, thinkClose)
		if cls < 0 {
			rs = append(rs, text)
			break
		}
		rs = append(rs, text[:cls])
		text = text[cls+len(thinkClose):]
	}
	return strings.Join(out, ""), strings.Join(rs, "\n")
}
