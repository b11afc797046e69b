package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
)

// vlModelDir is the Qwen3 tokenizer (its vocabulary has the Qwen-VL vision
// tokens) with Qwen2-VL's chat template, Qwen2VLImageProcessor's default
// preprocessor_config.json and a Qwen2.5-VL config.json.
func vlModelDir(t *testing.T) string {
	dir := qwenTokenizerDir(t)
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(data, &cfg))
	cfg["chat_template"] = tokenizertest.Qwen2VLTemplate
	data, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), []byte(`{"min_pixels": 3136,
 "max_pixels": 1003520, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
 "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen2_5_vl",
 "image_token_id": 151655, "video_token_id": 151656, "vision_start_token_id": 151652,
 "vision_config": {"spatial_merge_size": 2, "tokens_per_second": 2}}`), 0o644))
	return dir
}

// TestTokenizeImages checks the command's image report against the vision
// package's goldens (HF's processing steps in Pillow and numpy).
func TestTokenizeImages(t *testing.T) {
	dir := vlModelDir(t)
	corpus := filepath.Join("..", "..", "vision", "testdata")
	var golden struct {
		Images []struct {
			File    string `json:"file"`
			Results map[string]struct {
				Grid   [3]int    `json:"grid"`
				Tokens int       `json:"tokens"`
				Shape  [2]int    `json:"shape"`
				First  []float32 `json:"first"`
				Mean   float64   `json:"mean"`
				RMS    float64   `json:"rms"`
			} `json:"results"`
		} `json:"images"`
	}
	data, err := os.ReadFile(filepath.Join(corpus, "golden.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &golden))
	want := map[string]int{}
	for i, im := range golden.Images {
		want[im.File] = i
	}
	files := []string{"images/rgb_640x480_checker.png", "images/palette_120x90.png"}
	png, err := os.ReadFile(filepath.Join(corpus, files[1]))
	require.NoError(t, err)
	ctx := map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image", "image": filepath.Join(corpus, files[0])},
		map[string]any{"type": "text", "text": "and"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}},
	}}}, "add_generation_prompt": true}
	line, err := json.Marshal(map[string]any{"context": ctx})
	require.NoError(t, err)
	bad, err := json.Marshal(map[string]any{"context": map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image", "image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png[:len(png)/2])}}}}}})
	require.NoError(t, err)

	code, out, errOut := runTokenizeCmd(t, []string{"--tokenizer", dir}, string(line)+"\n"+string(bad)+"\n")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	var got struct {
		Text   string `json:"text"`
		IDs    []int  `json:"ids"`
		Error  string `json:"error"`
		Images []struct {
			Grid        [3]int `json:"image_grid_thw"`
			Tokens      int    `json:"placeholder_tokens"`
			PixelValues struct {
				Shape [2]int    `json:"shape"`
				Mean  float64   `json:"mean"`
				RMS   float64   `json:"rms"`
				First []float32 `json:"first"`
			} `json:"pixel_values"`
		} `json:"images"`
		PositionIDs [4][]int64 `json:"position_ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	require.Empty(t, got.Error)
	require.Contains(t, got.Text, "<|vision_start|><|image_pad|><|vision_end|>and<|vision_start|>")
	require.Len(t, got.Images, 2)
	pads := 0
	for _, id := range got.IDs {
		if id == 151655 {
			pads++
		}
	}
	require.Equal(t, got.Images[0].Tokens+got.Images[1].Tokens, pads)
	for i, f := range files {
		w := golden.Images[want[f]].Results["qwen2vl"]
		g := got.Images[i]
		require.Equal(t, w.Grid, g.Grid, f)
		require.Equal(t, w.Tokens, g.Tokens, f)
		require.Equal(t, w.Shape, g.PixelValues.Shape, f)
		require.Equal(t, w.First, g.PixelValues.First, f)
		require.InDelta(t, w.Mean, g.PixelValues.Mean, 1e-9, f)
		require.InDelta(t, w.RMS, g.PixelValues.RMS, 1e-9, f)
	}
	for r := range 4 {
		require.Len(t, got.PositionIDs[r], len(got.IDs))
	}
	// Row 0 counts tokens; the image rows stand still over an image's
	// rows, so the sequence ends below its length.
	require.Equal(t, int64(len(got.IDs)-1), got.PositionIDs[0][len(got.IDs)-1])
	require.Less(t, got.PositionIDs[1][len(got.IDs)-1], int64(len(got.IDs)-1))

	require.Contains(t, lines[1], `"error":"image 0 (data:image/png;base64,…): vision: decoding png`)
}
