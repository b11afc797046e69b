package server

import "fmt"

// Vision is the visual input of a GenerateRequest for a vision-language
// model (Qwen2/2.5/3-VL): the images of the prompt, in the order of their
// placeholder blocks, and the ids of those blocks. PromptIDs holds every
// block expanded, <|vision_start|>, Tokens pads, <|vision_end|>, as the
// model's processor expands it and as the trajectory keeps it. Engines
// send it as their server takes it: SGLang the expanded ids with
// image_data, vLLM the expanded ids with the features its render step
// made for each image (see package vllm).
type Vision struct {
	Images []Image
	// VisionStart, Pad and VisionEnd are the block's token ids
	// (151652, 151655 and 151653 in the Qwen-VL tokenizers).
	VisionStart, Pad, VisionEnd int32
}

// Image is one image of a prompt.
type Image struct {
	// Data is the encoded image (PNG, JPEG, WebP or GIF), what the
	// engine's own processor decodes.
	Data []byte
	// Tokens is the number of pad tokens of the image's block in
	// PromptIDs; Grid is its image_grid_thw (temporal, height and width in
	// patches), for engines that are given the processor's features.
	Tokens int
	Grid   [3]int
}

// PadRuns is the number of pad tokens in each vision block of ids, in
// order; an error for a block that is not closed or a pad outside a block.
func (v *Vision) PadRuns(ids []int32) ([]int, error) {
	var runs []int
	in := false
	for i, id := range ids {
		switch {
		case id == v.VisionStart:
			if in {
				return nil, fmt.Errorf("vision block at %d opened inside another", i)
			}
			in = true
			runs = append(runs, 0)
		case id == v.VisionEnd:
			if !in {
				return nil, fmt.Errorf("vision end at %d without a start", i)
			}
			in = false
		case id == v.Pad:
			if !in {
				return nil, fmt.Errorf("image pad at %d outside a vision block", i)
			}
			runs[len(runs)-1]++
		}
	}
	if in {
		return nil, fmt.Errorf("vision block not closed at the end of the prompt")
	}
	return runs, nil
}

// check is CheckRequest's part for the visual input: ImageStarts' checks,
// and data for every image.
func (v *Vision) check(ids []int32) error {
	if v == nil {
		return nil
	}
	if len(v.Images) == 0 {
		return badField("Vision: no images")
	}
	if _, err := v.ImageStarts(ids); err != nil {
		return badField("Vision: PromptIDs: %v", err)
	}
	for i, im := range v.Images {
		if len(im.Data) == 0 {
			return badField("Vision: image %d has no data", i)
		}
	}
	return nil
}

// ImageStarts is the index in ids of each image's first pad, in order,
// once ids are checked to hold a block per image whose pad count is the
// image's Tokens (blocks without a pad, such as video blocks, hold no
// image and are not counted).
func (v *Vision) ImageStarts(ids []int32) ([]int, error) {
	runs, err := v.PadRuns(ids)
	if err != nil {
		return nil, err
	}
	img := 0
	for _, n := range runs {
		if n == 0 {
			continue
		}
		if img >= len(v.Images) {
			return nil, fmt.Errorf("more image blocks than the %d images", len(v.Images))
		}
		if n != v.Images[img].Tokens {
			return nil, fmt.Errorf("image %d: its block has %d pad tokens, the image stands for %d", img, n, v.Images[img].Tokens)
		}
		img++
	}
	if img != len(v.Images) {
		return nil, fmt.Errorf("%d images but %d image blocks", len(v.Images), img)
	}
	starts := make([]int, 0, img)
	for i, id := range ids {
		if id == v.Pad && ids[i-1] != v.Pad { // PadRuns: a pad is never first
			starts = append(starts, i)
		}
	}
	if len(starts) != img {
		return nil, fmt.Errorf("an image block's pads are split by other tokens")
	}
	return starts, nil
}

// Expand gives each image block of ids that holds a single pad (as a chat
// template renders it) its image's Tokens pads; a block that already has
// them is kept. The ids around the blocks are copied unchanged. Blocks
// without a pad (video blocks) are not images and are left as they are.
func (v *Vision) Expand(ids []int32) ([]int32, error) {
	runs, err := v.PadRuns(ids)
	if err != nil {
		return nil, err
	}
	extra, img := 0, 0
	for _, n := range runs {
		if n == 0 {
			continue
		}
		if img >= len(v.Images) {
			return nil, fmt.Errorf("more image blocks than the %d images", len(v.Images))
		}
		switch want := v.Images[img].Tokens; {
		case want <= 0:
			return nil, fmt.Errorf("image %d stands for %d tokens", img, want)
		case n == 1:
			extra += want - 1
		case n != want:
			return nil, fmt.Errorf("image %d: its block has %d pad tokens, neither 1 nor the image's %d", img, n, want)
		}
		img++
	}
	if img != len(v.Images) {
		return nil, fmt.Errorf("%d images but %d image blocks", len(v.Images), img)
	}
	out := make([]int32, 0, len(ids)+extra)
	img = -1
	for i, id := range ids {
		if id == v.VisionStart && i+1 < len(ids) && ids[i+1] == v.Pad {
			img++
		}
		if id == v.Pad && ids[i-1] == v.VisionStart && (i+1 >= len(ids) || ids[i+1] != v.Pad) {
			for range v.Images[img].Tokens {
				out = append(out, v.Pad)
			}
			continue
		}
		out = append(out, id)
	}
	return out, nil
}
