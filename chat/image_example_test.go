package chat_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentrl/agentrl/chat"
)

// Image parts read from OpenAI's image_url and Qwen-VL's image forms; a
// part made in memory is written as image_url with a data URL.
func ExampleImagePart() {
	var m chat.Message
	_ = json.Unmarshal([]byte(`{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "cat.png"}},
		{"type": "image", "image": "file:///data/dog.jpg"}, {"type": "text", "text": "Which is bigger?"}]}`), &m)
	for _, im := range m.Images() {
		fmt.Println(im.URL)
	}
	b, _ := json.Marshal(chat.Message{Role: chat.RoleTool, Parts: []chat.ContentPart{chat.ImagePart(chat.Image{Data: []byte("GIF89a")})}})
	fmt.Println(string(b))
	// Output:
	// cat.png
	// file:///data/dog.jpg
	// {"role":"tool","content":[{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlh"}}]}
}
