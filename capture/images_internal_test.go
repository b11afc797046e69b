package capture

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// A continued call's history images become the parent's, so a rollout's
// index holds one copy of each however many calls resend it; its new
// messages' images stay its own. sameParts is what makes that lossless:
// it accepts only the same source.
func TestShareImages(t *testing.T) {
	img := func(s string) chat.ContentPart { return chat.ImagePart(chat.Image{URL: "data:image/png;base64," + s}) }
	text := chat.ContentPart{Type: "text", Text: "look"}
	parent := []chat.Message{{Role: chat.RoleUser, Parts: []chat.ContentPart{img("AAAA"), text}}}
	msgs := []chat.Message{
		{Role: chat.RoleUser, Parts: []chat.ContentPart{img("AAAA"), text}},
		{Role: chat.RoleAssistant, Content: "ok"},
		{Role: chat.RoleUser, Parts: []chat.ContentPart{img("BBBB")}},
	}
	require.Empty(t, sameMessage(parent[0], msgs[0]))
	require.NotSame(t, parent[0].Parts[0].Image, msgs[0].Parts[0].Image)
	fresh := msgs[2].Parts[0].Image
	shareImages(parent, msgs)
	require.Same(t, parent[0].Parts[0].Image, msgs[0].Parts[0].Image)
	require.Same(t, fresh, msgs[2].Parts[0].Image)
	require.Nil(t, msgs[0].Parts[1].Image)

	// Bytes and the data URL they encode to are the same image; another
	// source is not.
	data := []byte("\x89PNG\r\n\x1a\nrest")
	asBytes := chat.ImagePart(chat.Image{Data: data})
	asURL := chat.ImagePart(chat.Image{URL: asBytes.Image.DataURL()})
	require.Empty(t, sameParts([]chat.ContentPart{asBytes}, []chat.ContentPart{asURL}))
	require.Equal(t, "content[0] is another image", sameParts([]chat.ContentPart{asBytes}, []chat.ContentPart{img("AAAA")}))
	require.Equal(t, "2 content parts, were 1", sameParts([]chat.ContentPart{text}, []chat.ContentPart{text, text}))
}
