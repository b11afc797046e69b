package vision

import "fmt"

// PlaceholderTokens are the ids of a vision block,
// <|vision_start|><|image_pad|>…<|vision_end|>.
type PlaceholderTokens struct {
	VisionStart, Pad, VisionEnd int
}

// QwenImagePlaceholders and QwenVideoPlaceholders are the Qwen2/2.5/3-VL
// tokenizers' ids: <|vision_start|> 151652, <|vision_end|> 151653,
// <|image_pad|> 151655, <|video_pad|> 151656.
var (
	QwenImagePlaceholders = PlaceholderTokens{VisionStart: 151652, Pad: 151655, VisionEnd: 151653}
	QwenVideoPlaceholders = PlaceholderTokens{VisionStart: 151652, Pad: 151656, VisionEnd: 151653}
)

// block is one vision block of a sequence: ids[start] is VisionStart,
// ids[start+1 : start+1+pads] the pad run, then VisionEnd.
type block struct{ start, pads int }

// blocks finds t's blocks in ids. A pad outside a block, a block that is
// not closed or holds anything but pads is an error naming the position:
// these are the ids the model sees, and a stray pad would take an image's
// features.
func (t PlaceholderTokens) blocks(ids []int) ([]block, error) {
	var out []block
	for i := 0; i < len(ids); i++ {
		switch ids[i] {
		case t.Pad:
			return nil, fmt.Errorf("vision: pad token %d at position %d is outside a vision block", t.Pad, i)
		case t.VisionStart:
			if i+1 >= len(ids) || ids[i+1] != t.Pad {
				// A vision block of another kind (a video's while t is for
				// images): not ours.
				continue
			}
			j := i + 1
			for j < len(ids) && ids[j] == t.Pad {
				j++
			}
			if j >= len(ids) || ids[j] != t.VisionEnd {
				return nil, fmt.Errorf("vision: vision block at position %d is not closed by %d after its pad tokens", i, t.VisionEnd)
			}
			out = append(out, block{start: i, pads: j - i - 1})
			i = j
		}
	}
	return out, nil
}

// CountPlaceholders is the number of pad tokens in each of t's blocks in
// ids, in order.
func CountPlaceholders(ids []int, t PlaceholderTokens) ([]int, error) {
	bs, err := t.blocks(ids)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = b.pads
	}
	return out, nil
}

// ExpandPlaceholders gives block i of ids counts[i] pad tokens (the
// processor's Features.Tokens), as HF's processor does to the text before
// tokenizing: a collapsed block (one pad) is expanded, a block that already
// has counts[i] pads (history expanded earlier) is kept, anything else is an
// error. The ids around the blocks are copied unchanged, so a prompt or a
// tool result can be expanded without re-tokenizing anything.
func ExpandPlaceholders(ids []int, t PlaceholderTokens, counts []int) ([]int, error) {
	bs, err := t.blocks(ids)
	if err != nil {
		return nil, err
	}
	if len(bs) != len(counts) {
		return nil, fmt.Errorf("vision: %d vision blocks in the ids, %d placeholder counts", len(bs), len(counts))
	}
	n := len(ids)
	for i, b := range bs {
		if counts[i] <= 0 {
			return nil, fmt.Errorf("vision: placeholder count %d for block %d", counts[i], i)
		}
		if b.pads != 1 && b.pads != counts[i] {
			return nil, fmt.Errorf("vision: vision block %d at position %d has %d pad tokens, want 1 (to expand) or %d",
				i, b.start, b.pads, counts[i])
		}
		n += counts[i] - b.pads
	}
	out := make([]int, 0, n)
	prev := 0
	for i, b := range bs {
		out = append(out, ids[prev:b.start+1]...)
		for range counts[i] {
			out = append(out, t.Pad)
		}
		prev = b.start + 1 + b.pads
	}
	return append(out, ids[prev:]...), nil
}

// CollapsePlaceholders shrinks every block of t to a single pad token, the
// form vLLM takes with its multi_modal_data.
func CollapsePlaceholders(ids []int, t PlaceholderTokens) ([]int, error) {
	bs, err := t.blocks(ids)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ids))
	prev := 0
	for _, b := range bs {
		out = append(out, ids[prev:b.start+2]...)
		prev = b.start + 1 + b.pads
	}
	return append(out, ids[prev:]...), nil
}
