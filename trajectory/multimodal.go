package trajectory

// MultiModal is a trajectory's images as verl's trainer reads them: the
// multi_modal_inputs of the sample (pixel_values, image_grid_thw and
// images_seqlens, derived) and, for M-RoPE models, the (4, L) position ids
// of its unpadded sequence (prompt then response): row 0 the text
// positions, rows 1–3 get_rope_index's.
type MultiModal struct {
	// PixelValues are the processor's rows of RowLen float32, every image's
	// in order. They are not written to JSONL (megabytes per image); the
	// safetensors batch carries them.
	PixelValues []float32 `json:"-"`
	RowLen      int       `json:"row_len"`
	// ImageGridTHW is one (t, h, w) row per image, in patches.
	ImageGridTHW [][3]int64 `json:"image_grid_thw"`
	// PositionIDs are verl's M-RoPE position ids; empty rows for a model
	// without M-RoPE.
	PositionIDs [4][]int64 `json:"position_ids,omitempty"`
}

// ImagesSeqlens is verl's images_seqlens: h·w patches for each of an
// image's t frames (agent_loop.py, repeat_interleave(h·w, t)).
func (m *MultiModal) ImagesSeqlens() []int64 {
	var out []int64
	for _, g := range m.ImageGridTHW {
		for range g[0] {
			out = append(out, g[1]*g[2])
		}
	}
	return out
}
