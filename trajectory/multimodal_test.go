package trajectory

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/vision"
)

// mmTrajectory builds a trajectory whose prompt and observations hold the
// images' blocks, expanded, with the processor's features and
// get_rope_index's positions, as agentloop makes them.
func mmTrajectory(t *testing.T, proc *vision.Processor, prompt []string, observed []string) *Trajectory {
	t.Helper()
	rope := vision.QwenRopeConfig(vision.Qwen25VL)
	ph := vision.QwenImagePlaceholders
	mm := &MultiModal{RowLen: proc.Config().RowLen()}
	var grids [][3]int
	block := func(name string) []int32 {
		data, err := os.ReadFile(filepath.Join("..", "vision", "testdata", "images", name))
		require.NoError(t, err)
		img, err := vision.Decode(data, vision.Limits{})
		require.NoError(t, err)
		f, err := proc.Process(img)
		require.NoError(t, err)
		mm.PixelValues = append(mm.PixelValues, f.Pixels...)
		mm.ImageGridTHW = append(mm.ImageGridTHW, [3]int64{int64(f.Grid[0]), int64(f.Grid[1]), int64(f.Grid[2])})
		grids = append(grids, f.Grid)
		ids := []int32{int32(ph.VisionStart)}
		for range f.Tokens() {
			ids = append(ids, int32(ph.Pad))
		}
		return append(ids, int32(ph.VisionEnd))
	}
	p := []int32{151644, 872, 198}
	for _, name := range prompt {
		p = append(p, block(name)...)
	}
	b := NewBuilder(append(p, 151645, 198))
	require.NoError(t, b.AppendModel([]int32{40, 41, 151645}, []float32{-0.5, -0.25, -0.125}))
	for _, name := range observed {
		require.NoError(t, b.AppendObservation(append(append([]int32{198, 151644, 872, 198}, block(name)...), 151645)))
		require.NoError(t, b.AppendModel([]int32{42, 151645}, []float32{-1, -2}))
	}
	tr := b.Build()
	seq := make([]int, 0, len(tr.PromptIDs)+len(tr.ResponseIDs))
	for _, id := range append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...) {
		seq = append(seq, int(id))
	}
	pos, err := rope.VerlPositionIDs(seq, nil, vision.Vision{Images: grids})
	require.NoError(t, err)
	mm.PositionIDs = pos
	tr.MultiModal = mm
	r := 1.0
	tr.Reward = &r
	tr.StopReason = StopCompleted
	return tr
}

// TestMultiModalBatch: a batch of rows with images in the prompt and in
// observations and a text row: verl's multi_modal_inputs per row and the
// (B, 4, L) M-RoPE position ids at the left-pad offset, through
// safetensors and back, and loaded by PyTorch with check_torch.py's
// checks of what verl's trainer reads (int64 grids, float32 pixels,
// images_seqlens = repeat_interleave(h·w, t), pad counts per row, text
// positions in row 0, 1 on padding).
func TestMultiModalBatch(t *testing.T) {
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	rows := []*Trajectory{
		mmTrajectory(t, proc, []string{"rgb_56x56_checker.png"}, nil),
		mmTrajectory(t, proc, []string{"webp_lossy_99x67.webp"}, []string{"gif_160x120.gif"}),
		{PromptIDs: []int32{1, 2, 3}, ResponseIDs: []int32{4, 5}, ResponseMask: []int8{1, 1}, Logprobs: []float32{-1, -1}, StopReason: StopCompleted},
	}
	b, err := Collate(rows, CollateOptions{PromptLen: FitLongest, ResponseLen: FitLongest, PadTokenID: 151643})
	require.NoError(t, err)
	mm := b.MultiModal
	require.NotNil(t, mm)
	require.Equal(t, []int32{1, 2, 0}, mm.RowImages)
	g := rows[1].MultiModal.ImageGridTHW
	require.Equal(t, []int32{1, 4, 4, int32(g[0][0]), int32(g[0][1]), int32(g[0][2]), int32(g[1][0]), int32(g[1][1]), int32(g[1][2])}, mm.ImageGridTHW)
	require.Equal(t, []int32{16, int32(g[0][1] * g[0][2]), int32(g[1][1] * g[1][2])}, mm.ImagesSeqlens)
	require.Len(t, mm.PixelValues, (len(rows[0].MultiModal.PixelValues) + len(rows[1].MultiModal.PixelValues)))

	// Row 0's positions sit at its left-pad offset, 1 on padding.
	L := b.PromptLen + b.ResponseLen
	pad := b.PromptLen - len(rows[0].PromptIDs)
	for k := range 4 {
		row := mm.PositionIDs[k*L : (k+1)*L]
		for j := range pad {
			require.Equal(t, int32(1), row[j])
		}
		for j, v := range rows[0].MultiModal.PositionIDs[k] {
			require.Equal(t, int32(v), row[pad+j])
		}
	}

	var buf bytes.Buffer
	require.NoError(t, b.WriteSafetensors(&buf))
	back, err := ReadSafetensorsBatch(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, b.MultiModal, back.MultiModal)
	require.Equal(t, b.PositionIDs, back.PositionIDs)

	// A row with images cannot be cut.
	_, err = Collate(rows, CollateOptions{PromptLen: 8, ResponseLen: FitLongest, TruncatePrompts: true})
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "row 0: ")
	require.ErrorContains(t, err, "cannot be truncated")

	py := torchPython(t)
	path := filepath.Join(t.TempDir(), "batch.safetensors")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	out, err := exec.Command(py, "testdata/check_torch.py", path).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "ok: torch")

	// check_torch.py catches a pad count that does not match the grids.
	bad := *b
	badMM := *mm
	badMM.RowImages = []int32{2, 1, 0}
	bad.MultiModal = &badMM
	buf.Reset()
	require.NoError(t, bad.WriteSafetensors(&buf))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	out, err = exec.Command(py, "testdata/check_torch.py", path).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "image pad tokens")
}
