package view_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/view"
)

// imageTrajectory has an image block in the prompt and one in an
// observation (Qwen-VL's ids), with grids and, when keep, the images.
func imageTrajectory(t *testing.T, keep bool) *trajectory.Trajectory {
	block := func(n int) []int32 {
		ids := []int32{151652}
		for range n {
			ids = append(ids, 151655)
		}
		return append(ids, 151653)
	}
	b := trajectory.NewBuilder(append(append([]int32{1}, block(4)...), 2))
	require.NoError(t, b.AppendModel([]int32{3, 4}, nil))
	require.NoError(t, b.AppendObservation(append(append([]int32{5}, block(2)...), 6)))
	require.NoError(t, b.AppendModel([]int32{7}, nil))
	tr := b.Build()
	tr.ID = "img"
	tr.MultiModal = &trajectory.MultiModal{ImageGridTHW: [][3]int64{{1, 4, 4}, {1, 2, 4}}, RowLen: 1176}
	if keep {
		png, err := os.ReadFile("../vision/testdata/images/rgb_56x56_checker.png")
		require.NoError(t, err)
		gif, err := os.ReadFile("../vision/testdata/images/gif_160x120.gif")
		require.NoError(t, err)
		tr.MultiModal.Images = [][]byte{png, gif}
	}
	return tr
}

// TestImagesShownWherePlaceholdersStand: each image block's image (or a
// box naming it when the trajectory kept no bytes) heads its pads, and
// every pad says which image it stands for.
func TestImagesShownWherePlaceholdersStand(t *testing.T) {
	for _, keep := range []bool{true, false} {
		tr := imageTrajectory(t, keep)
		var buf bytes.Buffer
		require.NoError(t, view.WriteHTML(&buf, []*trajectory.Trajectory{tr}, view.Options{}))
		doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
		require.NoError(t, err)
		var figures []*html.Node
		pads := map[string]int{}
		var order []string // "fig N" and "pad N" in document order
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode {
				switch {
				case n.Data == "figure" && a1(n, "class") == "img":
					figures = append(figures, n)
					order = append(order, "fig "+a1(n, "data-image"))
				case n.Data == "span" && strings.Contains(a1(n, "class"), "img") && a1(n, "data-image") != "":
					pads[a1(n, "data-image")]++
					order = append(order, "pad "+a1(n, "data-image"))
					require.Contains(t, a1(n, "title"), "image "+a1(n, "data-image"))
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
		require.Len(t, figures, 2)
		require.Equal(t, map[string]int{"1": 4, "2": 2}, pads)
		require.Equal(t, []string{"fig 1", "pad 1", "pad 1", "pad 1", "pad 1", "fig 2", "pad 2", "pad 2"}, order)
		text := buf.String()
		require.Contains(t, text, "image 1 · 4 tokens · grid 1×4×4")
		require.Contains(t, text, "image 2 · 2 tokens · grid 1×2×4")
		if keep {
			for i, mime := range []string{"image/png", "image/gif"} {
				img := figures[i].FirstChild
				require.Equal(t, "img", img.Data)
				require.Equal(t, "data:"+mime+";base64,"+base64.StdEncoding.EncodeToString(tr.MultiModal.Images[i]), a1(img, "src"))
			}
		} else {
			require.NotContains(t, text, "<img src")
			require.Contains(t, text, `<div class="noimg">image 1 · 4 tokens`)
		}
	}
	// Grids that do not match the blocks are a note.
	tr := imageTrajectory(t, false)
	tr.MultiModal.ImageGridTHW = tr.MultiModal.ImageGridTHW[:1]
	d := view.DetailOf(0, tr, view.Options{})
	require.Contains(t, d.Notes, "2 image blocks in the tokens, 1 image grids in the trajectory")
}

func a1(n *html.Node, key string) string {
	v, _ := attr(n, key)
	return v
}
