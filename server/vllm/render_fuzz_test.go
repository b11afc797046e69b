package vllm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// FuzzRenderAnswer: whatever a server answers the render step with, the
// result is an error or an item whose placeholder lies within the one
// image block of its token_ids, with a hash and kwargs_data.
func FuzzRenderAnswer(f *testing.F) {
	v := &server.Vision{VisionStart: 7, Pad: 8, VisionEnd: 9}
	f.Add([]byte(`{"token_ids":[1,7,8,8,9,2],"features":{"mm_hashes":{"image":["h"]},"mm_placeholders":{"image":[{"offset":2,"length":2}]},"kwargs_data":{"image":["k"]}}}`))
	f.Add([]byte(`{"token_ids":[7,8,9],"features":{"mm_hashes":{"image":["h"]},"mm_placeholders":{"image":[{"offset":0,"length":3}]},"kwargs_data":{"image":["k"]}}}`))
	f.Add([]byte(`{"token_ids":[7,8,9],"features":{"mm_hashes":{"image":["h"]},"mm_placeholders":{"image":[{"offset":-5,"length":9}]},"kwargs_data":{"image":[null]}}}`))
	f.Add([]byte(`{"token_ids":[7,8,9,7,8,9],"features":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseRender(v, data)
		if err != nil {
			require.Nil(t, r)
			return
		}
		require.Positive(t, r.pads)
		require.NotEmpty(t, r.kwargs)
		require.Positive(t, r.length)
		require.GreaterOrEqual(t, r.rel, -1)
		require.LessOrEqual(t, r.rel+r.length, r.pads+1)
	})
}
