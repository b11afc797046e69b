package chat

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestImageParts(t *testing.T) {
	var m Message
	require.NoError(t, json.Unmarshal([]byte(`{"role":"user","content":[
		{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"high"}},
		{"type":"text","text":"and"},
		{"type":"image","image":"file:///x/y.jpg"},
		{"type":"image_url","image_url":"https://example.com/z.webp"},
		{"type":"image"}]}`), &m))
	require.Equal(t, []*Image{{URL: "data:image/png;base64,AAAA"}, {URL: "file:///x/y.jpg"}, {URL: "https://example.com/z.webp"}}, m.Images())
	require.Nil(t, m.Parts[4].Image, `a bare {"type": "image"} has no source of its own`)
	require.Equal(t, "and", m.Text())
	// Parts read from JSON are written back as they came.
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.Contains(t, string(b), `"detail":"high"`)

	// Parts made in memory are written as image_url with a data URL.
	png := []byte("\x89PNG\r\n\x1a\n....")
	b, err = json.Marshal(Message{Role: RoleTool, Parts: []ContentPart{ImagePart(Image{Data: png}), {Type: "text", Text: "crop"}}})
	require.NoError(t, err)
	require.Equal(t, `{"role":"tool","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgouLi4u"}},{"type":"text","text":"crop"}]}`, string(b))
	var back Message
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "data:image/png;base64,iVBORw0KGgouLi4u", back.Images()[0].URL)

	for in, want := range map[string]string{
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}`: "content[0]: image_url: no url",
		`{"role":"user","content":[{"type":"image_url","image_url":5}]}`:          `content[0]: image_url: want {"url": ...} or a string`,
		`{"role":"user","content":[{"type":"image_url"}]}`:                        "content[0]: image_url",
		`{"role":"user","content":[{"type":"image","image":{"a":1}}]}`:            "content[0]: image: want a data URL",
		`{"role":"user","content":[{"type":"image","image":""}]}`:                 "content[0]: image: empty",
	} {
		err := json.Unmarshal([]byte(in), &m)
		require.ErrorIs(t, err, ErrInvalidMessage, in)
		require.ErrorContains(t, err, want, in)
	}
}
