package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVisionCheck(t *testing.T) {
	v := func(tokens ...int) *Vision {
		out := &Vision{VisionStart: 7, Pad: 8, VisionEnd: 9}
		for _, n := range tokens {
			out.Images = append(out.Images, Image{Data: []byte{1}, Tokens: n})
		}
		return out
	}
	ids := []int32{1, 7, 8, 8, 8, 9, 2, 7, 8, 9, 3}
	require.NoError(t, CheckRequest(GenerateRequest{PromptIDs: ids, Vision: v(3, 1)}, 0))
	starts, err := v(3, 1).ImageStarts(ids)
	require.NoError(t, err)
	require.Equal(t, []int{2, 8}, starts)
	for _, tt := range []struct {
		name string
		ids  []int32
		v    *Vision
		want string
	}{
		{"count", ids, v(2, 1), "image 0: its block has 3 pad tokens, the image stands for 2"},
		{"fewer images", ids, v(3), "more image blocks than the 1 images"},
		{"more images", ids, v(3, 1, 4), "3 images but 2 image blocks"},
		{"none", ids, v(), "no images"},
		{"open", []int32{7, 8}, v(1), "not closed"},
		{"stray pad", []int32{8, 7, 8, 9}, v(1), "image pad at 0 outside a vision block"},
		{"split", []int32{7, 8, 1, 8, 9}, v(2), "pads are split by other tokens"},
		{"nested", []int32{7, 7, 8, 9}, v(1), "opened inside another"},
		{"no data", []int32{7, 8, 9}, &Vision{VisionStart: 7, Pad: 8, VisionEnd: 9, Images: []Image{{Tokens: 1}}}, "image 0 has no data"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRequest(GenerateRequest{PromptIDs: tt.ids, Vision: tt.v}, 0)
			require.ErrorIs(t, err, ErrBadRequest)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestVisionExpand(t *testing.T) {
	v := &Vision{VisionStart: 7, Pad: 8, VisionEnd: 9, Images: []Image{{Data: []byte{1}, Tokens: 3}, {Data: []byte{1}, Tokens: 2}}}
	got, err := v.Expand([]int32{1, 7, 8, 9, 2, 7, 9, 7, 8, 9})
	require.NoError(t, err)
	require.Equal(t, []int32{1, 7, 8, 8, 8, 9, 2, 7, 9, 7, 8, 8, 9}, got)
	// Already expanded blocks stay.
	got, err = v.Expand([]int32{7, 8, 8, 8, 9, 7, 8, 9})
	require.NoError(t, err)
	require.Equal(t, []int32{7, 8, 8, 8, 9, 7, 8, 8, 9}, got)
	for ids, want := range map[string][]int32{
		"neither 1 nor the image's 3":        {7, 8, 8, 9, 7, 8, 9},
		"2 images but 1 image blocks":        {7, 8, 9},
		"more image blocks than the 2":       {7, 8, 9, 7, 8, 9, 7, 8, 9},
		"image pad at 0 outside a vision bl": {8},
	} {
		_, err := v.Expand(want)
		require.ErrorContains(t, err, ids)
	}
}
