package trajectory

import "fmt"

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
	// Images are the encoded images (PNG, JPEG, WebP or GIF), one per
	// grid, when the loop was asked to keep them (agentloop's
	// Vision.KeepImages), for the viewer; nil otherwise.
	Images [][]byte `json:"images,omitempty"`
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

// BatchMultiModal is a batch's images in verl's layout, flattened for
// safetensors: verl keeps multi_modal_inputs as one dict per row
// (non_tensor_batch), here row i's images are the RowImages[i] rows of
// ImageGridTHW after the earlier rows' ones, and their pixel_values the
// matching rows of PixelValues (t·h·w rows per image).
type BatchMultiModal struct {
	// PositionIDs is verl's (B, 4, L) position_ids for M-RoPE models: for
	// each row, row 0 the text positions and rows 1–3 get_rope_index's at
	// the valid columns, 1 on padding (as verl's _compute_position_ids
	// fills them); a row without images has its text positions in all four.
	// nil when no row has position ids.
	PositionIDs []int32
	// PixelValues are every image's pixel_values, rows of RowLen float32.
	PixelValues []float32
	RowLen      int
	// ImageGridTHW is one (t, h, w) per image, [N, 3]; ImagesSeqlens is
	// verl's images_seqlens (h·w per frame); RowImages the number of
	// images of each row, [B].
	ImageGridTHW  []int32
	ImagesSeqlens []int32
	RowImages     []int32
}

// collateMultiModal checks the rows' images and sizes the batch's; nil
// when no row has any.
func collateMultiModal(trajs []*Trajectory, P, R int) (*BatchMultiModal, error) {
	var mm *BatchMultiModal
	rows, pos := 0, false
	for i, t := range trajs {
		m := t.MultiModal
		if m == nil {
			continue
		}
		if mm == nil {
			mm = &BatchMultiModal{RowLen: m.RowLen}
		}
		if m.RowLen != mm.RowLen {
			return nil, &RowError{i, fmt.Errorf("%w: multi_modal: pixel rows of %d values, an earlier row has %d", ErrInvalid, m.RowLen, mm.RowLen)}
		}
		n := 0
		for _, g := range m.ImageGridTHW {
			if g[0] <= 0 || g[1] <= 0 || g[2] <= 0 {
				return nil, &RowError{i, fmt.Errorf("%w: multi_modal: image_grid_thw %v", ErrInvalid, g)}
			}
			n += int(g[0] * g[1] * g[2])
		}
		if m.RowLen <= 0 || len(m.PixelValues) != n*m.RowLen {
			return nil, &RowError{i, fmt.Errorf("%w: multi_modal: %d pixel values for %d patches of %d", ErrInvalid, len(m.PixelValues), n, m.RowLen)}
		}
		L := len(t.PromptIDs) + len(t.ResponseIDs)
		if m.PositionIDs[0] != nil {
			pos = true
			for k := range m.PositionIDs {
				if len(m.PositionIDs[k]) != L {
					return nil, &RowError{i, fmt.Errorf("%w: multi_modal: position_ids row %d has %d entries for %d tokens", ErrInvalid, k, len(m.PositionIDs[k]), L)}
				}
			}
		}
		// An image's tokens cannot be cut: the grid would no longer
		// match the sequence.
		if len(t.PromptIDs) > P || len(t.ResponseIDs) > R {
			return nil, &RowError{i, fmt.Errorf("%w: a row with images cannot be truncated (prompt %d of %d, response %d of %d tokens)",
				ErrInvalid, len(t.PromptIDs), P, len(t.ResponseIDs), R)}
		}
		rows += n
		if rows > MaxCollateElements/max(m.RowLen, 1) {
			return nil, &RowError{i, fmt.Errorf("trajectory: Collate: pixel_values over MaxCollateElements (%d)", MaxCollateElements)}
		}
	}
	if mm == nil {
		return nil, nil
	}
	if pos {
		for i, t := range trajs {
			if t.MultiModal != nil && t.MultiModal.PositionIDs[0] == nil {
				return nil, &RowError{i, fmt.Errorf("%w: multi_modal: some rows have M-RoPE position ids and this one has none", ErrInvalid)}
			}
		}
		mm.PositionIDs = make([]int32, 0) // sized in fill
	}
	mm.PixelValues = make([]float32, 0, rows*mm.RowLen)
	return mm, nil
}

// fill writes the rows' images and position ids into b (whose token
// tensors are filled).
func (mm *BatchMultiModal) fill(b *Batch, trajs []*Trajectory) {
	B, P, L := b.Size, b.PromptLen, b.PromptLen+b.ResponseLen
	mm.RowImages = make([]int32, B)
	if mm.PositionIDs != nil {
		mm.PositionIDs = make([]int32, B*4*L)
	}
	for i, t := range trajs {
		m := t.MultiModal
		if m != nil {
			mm.RowImages[i] = int32(len(m.ImageGridTHW))
			mm.PixelValues = append(mm.PixelValues, m.PixelValues...)
			for _, g := range m.ImageGridTHW {
				mm.ImageGridTHW = append(mm.ImageGridTHW, int32(g[0]), int32(g[1]), int32(g[2]))
				for range g[0] {
					mm.ImagesSeqlens = append(mm.ImagesSeqlens, int32(g[1]*g[2]))
				}
			}
		}
		if mm.PositionIDs == nil {
			continue
		}
		pad := P - len(t.PromptIDs)
		n := len(t.PromptIDs) + len(t.ResponseIDs)
		for k := range 4 {
			row := mm.PositionIDs[(i*4+k)*L : (i*4+k+1)*L]
			fill(row, 1)
			for j := range n {
				if m != nil {
					row[pad+j] = int32(m.PositionIDs[k][j])
				} else {
					row[pad+j] = int32(j)
				}
			}
		}
	}
}
