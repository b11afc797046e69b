package dataset

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
)

func corpusImage(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "vision", "testdata", "images", name))
	require.NoError(t, err)
	return b
}

const geo3kInstruction = "You FIRST think about the reasoning process as an internal monologue and then provide the final answer. " +
	"The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST BE put in \\boxed{}."

// TestGeo3kParquet reads geo3k-format files written by DuckDB and by
// Arrow-rs (gen_geo3k.mjs): the images column's {bytes, path} structs
// become image parts where the prompt's <image> markers stand, byte for
// byte the corpus files, and the zoom-in tool's create kwarg keeps its
// binary image.
func TestGeo3kParquet(t *testing.T) {
	want := []struct {
		parts  []chat.ContentPart
		answer string
		first  string
	}{
		{[]chat.ContentPart{chat.ImagePart(chat.Image{Data: corpusImage(t, "rgb_56x56_checker.png")}),
			{Type: "text", Text: "Find x. " + geo3kInstruction}}, "3", "rgb_56x56_checker.png"},
		{[]chat.ContentPart{chat.ImagePart(chat.Image{Data: corpusImage(t, "jpeg_420_333x201.jpg")}),
			{Type: "text", Text: "Find the area of the figure. Round to the nearest tenth. " + geo3kInstruction}}, "52.3", "jpeg_420_333x201.jpg"},
		{[]chat.ContentPart{{Type: "text", Text: "Compare "}, chat.ImagePart(chat.Image{Data: corpusImage(t, "webp_lossy_99x67.webp")}),
			{Type: "text", Text: " with "}, chat.ImagePart(chat.Image{Data: corpusImage(t, "gif_160x120.gif")}),
			{Type: "text", Text: ". Find y. " + geo3kInstruction}}, "12", "webp_lossy_99x67.webp"},
	}
	for _, file := range []string{"geo3k_duckdb.parquet", "geo3k_arrow_rs.parquet"} {
		t.Run(file, func(t *testing.T) {
			got, err := ReadAll(context.Background(), Options{}, filepath.Join("testdata", file))
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i, s := range got {
				require.Equal(t, i, s.Index)
				require.Equal(t, "hiyouga/geometry3k", s.DataSource)
				require.Equal(t, want[i].answer, s.GroundTruth)
				require.Len(t, s.Messages, 1)
				require.Equal(t, chat.RoleUser, s.Messages[0].Role)
				require.Empty(t, s.Messages[0].Content)
				require.Equal(t, want[i].parts, s.Messages[0].Parts)
				require.Equal(t, corpusImage(t, want[i].first), s.ToolsKwargs["image_zoom_in_tool"]["image"])
				// The message writes as OpenAI's image_url parts with data URLs.
				b, err := json.Marshal(s.Messages[0])
				require.NoError(t, err)
				var back chat.Message
				require.NoError(t, json.Unmarshal(b, &back))
				require.Len(t, back.Images(), len(s.Messages[0].Images()))
			}
		})
	}
}

// TestImagesColumnJSONL: verl's entry forms in JSONL (base64 bytes, path,
// image URL, a plain string) and the errors for rows whose images and
// markers disagree or whose entries are malformed, each naming the column.
func TestImagesColumnJSONL(t *testing.T) {
	png := corpusImage(t, "rgb_56x56_checker.png")
	row := func(content string, images any) map[string]any {
		return map[string]any{"prompt": []any{map[string]any{"role": "user", "content": content}}, "images": images}
	}
	s, _, err := SampleFromRow(row("<image><image>\n<image> <image>What?", []any{
		map[string]any{"bytes": base64.StdEncoding.EncodeToString(png), "path": nil},
		map[string]any{"path": "a/b.png"},
		map[string]any{"image": "file:///x/y.jpg"},
		"data:image/png;base64,AAAA",
	}), Options{})
	require.NoError(t, err)
	require.Equal(t, []chat.ContentPart{
		chat.ImagePart(chat.Image{Data: png}), chat.ImagePart(chat.Image{URL: "a/b.png"}), {Type: "text", Text: "\n"},
		chat.ImagePart(chat.Image{URL: "file:///x/y.jpg"}), {Type: "text", Text: " "},
		chat.ImagePart(chat.Image{URL: "data:image/png;base64,AAAA"}), {Type: "text", Text: "What?"},
	}, s.Messages[0].Parts)

	for _, c := range []struct {
		row       map[string]any
		col, want string
	}{
		{row("<image><image>", []any{"a.png"}), "images", "more <image> markers than the 1 images"},
		{row("<image>", []any{"a.png", "b.png"}), "images", "2 images but 1 <image> markers"},
		{row("no marker", []any{"a.png"}), "images", "1 images but 0 <image> markers"},
		{row("<image>", "a.png"), "images", "must be a list of images"},
		{row("<image>", []any{map[string]any{"bytes": nil, "path": nil}}), "images[0]", `an image needs "bytes", "path" or "image"`},
		{row("<image>", []any{42.0}), "images[0]", "must be an image object or a source string"},
		{row("<image>", []any{map[string]any{"bytes": 3.0}}), "images[0].bytes", "must be binary or base64"},
		{row("<video>", []any{"a.png"}), "images", "<video> marker: only images are supported"},
	} {
		line, err := json.Marshal(c.row)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "rows.jsonl")
		require.NoError(t, os.WriteFile(path, append(line, '\n'), 0o644))
		_, err = ReadAll(context.Background(), Options{}, path)
		require.ErrorIs(t, err, ErrFormat)
		var re *RowError
		require.ErrorAs(t, err, &re)
		require.Equal(t, 1, re.Row)
		require.Equal(t, c.col, re.Column)
		require.ErrorContains(t, err, c.want)
	}
	// Without an images column, <image> is text.
	s, _, err = SampleFromRow(map[string]any{"prompt": []any{map[string]any{"role": "user", "content": "<image>"}}}, Options{})
	require.NoError(t, err)
	require.Equal(t, "<image>", s.Messages[0].Content)
	// verl's data.image_key names another column; errors name it.
	other := map[string]any{"prompt": []any{map[string]any{"role": "user", "content": "<image>x"}}, "image": []any{"a.png"}}
	s, _, err = SampleFromRow(other, Options{ImageKey: "image"})
	require.NoError(t, err)
	require.Equal(t, []chat.ContentPart{chat.ImagePart(chat.Image{URL: "a.png"}), {Type: "text", Text: "x"}}, s.Messages[0].Parts)
	other["image"] = []any{"a.png", "b.png"}
	line, err := json.Marshal(other)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(path, append(line, '\n'), 0o644))
	_, err = ReadAll(context.Background(), Options{ImageKey: "image"}, path)
	var re *RowError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "image", re.Column)
	require.ErrorContains(t, err, "2 images but 1 <image> markers")
	var _ agentloop.Sample = s
}
