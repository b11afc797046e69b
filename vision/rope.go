package vision

import (
	"fmt"
	"slices"
)

// Family is a model family whose M-RoPE position ids RopeIndex computes.
type Family int

const (
	// Qwen2VL: temporal index = frame index.
	Qwen2VL Family = iota + 1
	// Qwen25VL: temporal index = frame · second_per_grid_t ·
	// tokens_per_second, truncated (absolute time).
	Qwen25VL
	// Qwen3VL: every video frame is its own vision block (timestamps are
	// text between them), so each video grid of t frames counts as t grids
	// of one frame.
	Qwen3VL
)

func (f Family) String() string {
	switch f {
	case Qwen2VL:
		return "qwen2_vl"
	case Qwen25VL:
		return "qwen2_5_vl"
	case Qwen3VL:
		return "qwen3_vl"
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// RopeConfig is what get_rope_index reads from a model's config.json.
type RopeConfig struct {
	Family             Family
	ImageTokenID       int // <|image_pad|>
	VideoTokenID       int // <|video_pad|>
	VisionStartTokenID int // <|vision_start|>
	// SpatialMergeSize is vision_config.spatial_merge_size (2 for all Qwen-VL).
	SpatialMergeSize int
	// TokensPerSecond is Qwen2.5-VL's vision_config.tokens_per_second (2 in
	// the released checkpoints); unused by the other families.
	TokensPerSecond float32
}

// QwenRopeConfig is the released Qwen2/2.5/3-VL checkpoints' token ids
// (151655 <|image_pad|>, 151656 <|video_pad|>, 151652 <|vision_start|>),
// merge size 2 and Qwen2.5-VL's 2 tokens a second.
func QwenRopeConfig(f Family) RopeConfig {
	return RopeConfig{Family: f, ImageTokenID: 151655, VideoTokenID: 151656, VisionStartTokenID: 151652,
		SpatialMergeSize: 2, TokensPerSecond: 2}
}

// Vision is the visual input of one sequence, in the order its blocks
// appear: image_grid_thw and video_grid_thw rows, and Qwen2.5-VL's
// second_per_grid_ts (one per video; 1.0 each when nil, as in HF).
type Vision struct {
	Images         [][3]int
	Videos         [][3]int
	SecondPerGridT []float32
}

// RopeIndex is get_rope_index of HF's modeling_qwen2_vl.py,
// modeling_qwen2_5_vl.py and modeling_qwen3_vl.py for one sequence: the
// (3, L) temporal/height/width position ids and the rope delta
// (max position + 1 − L). mask is the attention mask (nil: all ones);
// positions under a 0 are 1, as in HF. Images and videos are matched to
// their runs of pad tokens in order, each run opened by <|vision_start|>.
// Unlike HF, which indexes past its inputs, mis-sizes its output or (given
// no grids) ignores the blocks, a run whose length is not t·h·w/merge², a
// grid without a block or a block without a grid is an error.
func (c RopeConfig) RopeIndex(ids []int, mask []int, vis Vision) (pos [3][]int64, delta int64, err error) {
	L := len(ids)
	if mask != nil && len(mask) != L {
		return pos, 0, fmt.Errorf("vision: rope index: %d ids but %d mask values", L, len(mask))
	}
	if c.SpatialMergeSize <= 0 {
		return pos, 0, fmt.Errorf("vision: rope index: spatial_merge_size %d", c.SpatialMergeSize)
	}
	for i := range pos {
		pos[i] = make([]int64, L)
	}
	videos := vis.Videos
	secs := vis.SecondPerGridT
	if secs != nil && len(secs) != len(videos) {
		return pos, 0, fmt.Errorf("vision: rope index: %d second_per_grid_ts for %d videos", len(secs), len(videos))
	}
	if c.Family == Qwen3VL {
		// repeat_interleave(video_grid_thw, t) with t set to 1.
		var split [][3]int
		for _, g := range videos {
			for range max(g[0], 0) {
				split = append(split, [3]int{1, g[1], g[2]})
			}
		}
		videos, secs = split, nil
	}
	// The unmasked tokens, and where they sit.
	valid := make([]int, 0, L)
	for i := range ids {
		if mask == nil || mask[i] == 1 {
			valid = append(valid, i)
		}
	}
	toks := make([]int, len(valid))
	for j, i := range valid {
		toks[j] = ids[i]
	}
	// Count blocks as HF does: a vision_start followed by an image or video pad.
	imageNums, videoNums := 0, 0
	for j := 0; j+1 < len(toks); j++ {
		if toks[j] == c.VisionStartTokenID {
			switch toks[j+1] {
			case c.ImageTokenID:
				imageNums++
			case c.VideoTokenID:
				videoNums++
			}
		}
	}
	if imageNums != len(vis.Images) || videoNums != len(videos) {
		// HF takes its text-only branch when no grids are given whatever the
		// ids hold, and fails or misplaces positions on other mismatches.
		return pos, 0, fmt.Errorf("vision: rope index: the ids hold %d image and %d video blocks, the inputs %d images and %d videos",
			imageNums, videoNums, len(vis.Images), len(videos))
	}
	if len(vis.Images) == 0 && len(videos) == 0 {
		// HF's text-only branch: cumsum(mask) − 1, masked positions 1.
		var p int64
		for i := range ids {
			v := int64(1)
			if mask == nil || mask[i] == 1 {
				v = p
				p++
			}
			pos[0][i], pos[1][i], pos[2][i] = v, v, v
		}
		if len(valid) == 0 {
			// max over the masked-filled ids, as HF's max(0)[0].max(-1).
			return pos, 1 + 1 - int64(L), nil
		}
		mx := p - 1
		if len(valid) < L {
			mx = max(mx, 1)
		}
		return pos, mx + 1 - int64(L), nil
	}
	m := c.SpatialMergeSize
	var out [3][]int64
	for i := range out {
		out[i] = make([]int64, 0, len(toks))
	}
	next := int64(0) // llm_pos_ids_list[-1].max() + 1
	st, imageIndex, videoIndex := 0, 0, 0
	for range imageNums + videoNums {
		edImage, edVideo := len(toks)+1, len(toks)+1
		if imageIndex < imageNums {
			if k := slices.Index(toks[st:], c.ImageTokenID); k >= 0 {
				edImage = st + k
			}
		}
		if videoIndex < videoNums {
			if k := slices.Index(toks[st:], c.VideoTokenID); k >= 0 {
				edVideo = st + k
			}
		}
		var g [3]int
		var sec float32
		var ed, pad int
		switch {
		case edImage < edVideo:
			g, ed, pad = vis.Images[imageIndex], edImage, c.ImageTokenID
			imageIndex++
		case edVideo <= len(toks):
			g, ed, pad = videos[videoIndex], edVideo, c.VideoTokenID
			sec = 1
			if secs != nil {
				sec = secs[videoIndex]
			}
			videoIndex++
		default:
			return pos, 0, fmt.Errorf("vision: rope index: no pad token after position %d for the next image or video", st)
		}
		if g[0] <= 0 || g[1] <= 0 || g[2] <= 0 || g[1]%m != 0 || g[2]%m != 0 {
			return pos, 0, fmt.Errorf("vision: rope index: grid %v is not positive multiples of merge size %d", g, m)
		}
		lt, lh, lw := g[0], g[1]/m, g[2]/m
		n := lt * lh * lw
		if ed+n > len(toks) {
			return pos, 0, fmt.Errorf("vision: rope index: grid %v needs %d pad tokens from position %d, the sequence ends first", g, n, ed)
		}
		for j := ed; j < ed+n; j++ {
			if toks[j] != pad {
				return pos, 0, fmt.Errorf("vision: rope index: grid %v needs %d pad tokens from position %d; position %d holds %d",
					g, n, ed, j, toks[j])
			}
		}
		textLen := ed - st
		for k := range textLen {
			for a := range 3 {
				out[a] = append(out[a], next+int64(k))
			}
		}
		base := next + int64(textLen)
		mx := base - 1
		for t := range lt {
			tIdx := int64(t)
			if c.Family == Qwen25VL {
				// torch: arange(t) * second_per_grid_t * tokens_per_second in
				// float32, then .long() (truncation). Images have 0 seconds.
				tIdx = int64(float32(float32(t)*sec) * c.TokensPerSecond)
			}
			for h := range lh {
				for w := range lw {
					out[0] = append(out[0], base+tIdx)
					out[1] = append(out[1], base+int64(h))
					out[2] = append(out[2], base+int64(w))
					mx = max(mx, base+tIdx, base+int64(h), base+int64(w))
				}
			}
		}
		next = mx + 1
		st = ed + n
	}
	if st < len(toks) {
		for k := range len(toks) - st {
			for a := range 3 {
				out[a] = append(out[a], next+int64(k))
			}
		}
		next += int64(len(toks) - st)
	}
	for a := range 3 {
		for j, i := range valid {
			pos[a][i] = out[a][j]
		}
		for i := range L {
			if mask != nil && mask[i] != 1 {
				pos[a][i] = 1
			}
		}
	}
	// mrope_position_deltas: llm_positions.max() + 1 − len(input_ids[i]).
	return pos, next - int64(L), nil
}

// VerlPositionIDs is verl's position_ids for an M-RoPE model, shape (4, L):
// row 0 the text positions (0, 1, … over the attention mask, 1 under a 0
// as verl fills them) and rows 1–3 RopeIndex's.
func (c RopeConfig) VerlPositionIDs(ids []int, mask []int, vis Vision) ([4][]int64, error) {
	var out [4][]int64
	p, _, err := c.RopeIndex(ids, mask, vis)
	if err != nil {
		return out, err
	}
	out[0] = make([]int64, len(ids))
	var n int64
	for i := range ids {
		if mask == nil || mask[i] == 1 {
			out[0][i] = n
			n++
		} else {
			out[0][i] = 1
		}
	}
	out[1], out[2], out[3] = p[0], p[1], p[2]
	return out, nil
}
