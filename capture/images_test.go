package capture_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/vision"
)

// vlRig is a capture of a Qwen2-VL model: the Qwen3 vocabulary (which
// has the vision tokens) with Qwen2-VL's template, image parts served
// through httpapi.VisionImages, and agentloop.Vision for the rebuild.
func vlRig(t *testing.T, withVision bool, replies ...string) (*rig, *agentloop.Vision) {
	t.Helper()
	tok, err := tokenizertest.Qwen3(tokenizertest.Qwen2VLTemplate)
	require.NoError(t, err)
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	vis := &agentloop.Vision{Processor: proc, Placeholders: vision.QwenImagePlaceholders,
		Rope: vision.QwenRopeConfig(vision.Qwen25VL), Sources: vision.Sources{NoFiles: true}}
	r := newRigWith(t, tok, newScript(t, tok, replies...).Rule, func(c *capture.Config) {
		c.Chat = &httpapi.Chat{Tokenizer: tok, Images: &httpapi.VisionImages{Processor: proc, Tokens: vision.QwenImagePlaceholders}}
		if withVision {
			c.Vision = vis
		}
	})
	return r, vis
}

func imageURL(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "vision", "testdata", "images", name))
	require.NoError(t, err)
	return "data:" + http.DetectContentType(data) + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// postChat sends one chat completion to the rollout and returns the
// assistant's text.
func postChat(t *testing.T, r *rig, ro capture.Rollout, msgs []map[string]any) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": "agentrl", "messages": msgs, "max_tokens": 32})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, ro.OpenAIBaseURL+"/chat/completions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ro.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.model.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", data)
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(data, &out))
	require.Len(t, out.Choices, 1)
	return out.Choices[0].Message.Content
}

func userWithImage(text, url string) map[string]any {
	return map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}},
		map[string]any{"type": "text", "text": text}}}
}

// TestImagesCaptured: a harness's conversation with images — one in the
// first user turn, another in a later one — is served with the images
// and continued on the exact tokens: the second call's prompt is the
// first's prompt and sampled tokens, then the new turn's delta with its
// image block expanded, and the engine gets both images. The rebuild is
// one trajectory whose images, grids and M-RoPE position ids are those of
// its sequence; without Config.Vision the rebuild says why it cannot.
func TestImagesCaptured(t *testing.T) {
	for _, withVision := range []bool{true, false} {
		t.Run(fmt.Sprint("vision=", withVision), func(t *testing.T) {
			r, vis := vlRig(t, withVision, "A checkerboard.", "A smaller photo.")
			ctx := context.Background()
			ro, err := r.c.Create(ctx, capture.CreateOptions{})
			require.NoError(t, err)
			first := imageURL(t, "rgb_640x480_checker.png")
			second := imageURL(t, "webp_lossy_99x67.webp")
			msgs := []map[string]any{userWithImage("What is this?", first)}
			answer := postChat(t, r, ro, msgs)
			require.Equal(t, "A checkerboard.", answer)
			msgs = append(msgs, map[string]any{"role": "assistant", "content": answer}, userWithImage("And this one?", second))
			require.Equal(t, "A smaller photo.", postChat(t, r, ro, msgs))

			r.eng.mu.Lock()
			reqs, outs := r.eng.reqs, r.eng.outs
			r.eng.mu.Unlock()
			require.Len(t, reqs, 2)
			require.NotNil(t, reqs[0].Vision)
			require.Len(t, reqs[0].Vision.Images, 1)
			require.Len(t, reqs[1].Vision.Images, 2)
			tokens := []int{reqs[1].Vision.Images[0].Tokens, reqs[1].Vision.Images[1].Tokens}
			require.Equal(t, []int{391, 8}, tokens) // smart_resize at Qwen2-VL's defaults: 640×480 → 644×476, 99×67 → 112×56
			// Continued on the exact tokens: the first call's prompt and
			// sampled ids, then the delta, its block expanded.
			prefix := append(append([]int32{}, reqs[0].PromptIDs...), outs[0].TokenIDs...)
			require.Equal(t, prefix, reqs[1].PromptIDs[:len(prefix)])
			require.NoError(t, server.CheckRequest(reqs[1], 0))
			runs, err := reqs[1].Vision.PadRuns(reqs[1].PromptIDs)
			require.NoError(t, err)
			require.Equal(t, tokens, runs)

			calls := calls(t, r, ro.ID)
			require.Len(t, calls, 2)
			require.Equal(t, calls[0].ID, calls[1].Parent, "segment: %s", calls[1].Segment)

			trajs, rep, err := r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
			if !withVision {
				require.ErrorIs(t, err, agentloop.ErrImage)
				require.ErrorContains(t, err, "2 images, and no image processor")
				return
			}
			require.NoError(t, err)
			require.Equal(t, 1, rep.Trajectories)
			require.Equal(t, 1.0, rep.Delivered)
			tr := trajs[0]
			seq := append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...)
			require.Equal(t, append(append([]int32{}, reqs[1].PromptIDs...), outs[1].TokenIDs...), seq)
			mm := tr.MultiModal
			require.NotNil(t, mm)
			require.Equal(t, [][3]int64{{1, 34, 46}, {1, 4, 8}}, mm.ImageGridTHW)
			require.Len(t, mm.PixelValues, (34*46+4*8)*mm.RowLen)
			pos, err := vis.Rope.VerlPositionIDs(toInts(seq), nil, vision.Vision{Images: [][3]int{{1, 34, 46}, {1, 4, 8}}})
			require.NoError(t, err)
			require.Equal(t, pos, mm.PositionIDs)
		})
	}
}

// TestImageEditedStartsSegment: a harness that sends an earlier turn back
// with another image (or the text and image parts moved) has rewritten
// history: the call starts a new segment naming the part.
func TestImageEditedStartsSegment(t *testing.T) {
	for _, c := range []struct {
		name  string
		first func(t *testing.T) map[string]any
		want  string
	}{
		{"another image", func(t *testing.T) map[string]any {
			return userWithImage("What is this?", imageURL(t, "jpeg_420_333x201.jpg"))
		}, "messages[0] (user) differs from c0's: content[0] is another image"},
		{"parts moved", func(t *testing.T) map[string]any {
			return map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is this?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": imageURL(t, "rgb_640x480_checker.png")}}}}
		}, "messages[0] (user) differs from c0's: content[0] is a \"text\" part, was an image part"},
		{"text edited", func(t *testing.T) map[string]any {
			return userWithImage("What is that?", imageURL(t, "rgb_640x480_checker.png"))
		}, "messages[0] (user) differs from c0's: content[1] text edited"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := vlRig(t, true, "A checkerboard.", "Something else.")
			ctx := context.Background()
			ro, err := r.c.Create(ctx, capture.CreateOptions{})
			require.NoError(t, err)
			answer := postChat(t, r, ro, []map[string]any{userWithImage("What is this?", imageURL(t, "rgb_640x480_checker.png"))})
			postChat(t, r, ro, []map[string]any{c.first(t), {"role": "assistant", "content": answer}, {"role": "user", "content": "More?"}})
			recorded := calls(t, r, ro.ID)
			last := recorded[len(recorded)-1]
			require.Empty(t, last.Parent)
			require.Contains(t, last.Segment, c.want)
			trajs, rep, err := r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
			require.NoError(t, err)
			require.Equal(t, 2, rep.Trajectories)
			for _, tr := range trajs {
				require.NotNil(t, tr.MultiModal)
			}
		})
	}
}

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
