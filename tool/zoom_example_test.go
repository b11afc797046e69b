package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/vision"
)

// DeepEyes' zoom-in tool: created with the sample's image, it answers a
// bounding box with the crop as an image, and a bad box with verl's
// error text and its −0.05 reward.
func ExampleNewZoomIn() {
	ctx := context.Background()
	png, err := os.ReadFile("../vision/testdata/images/rgb_448x448_smooth.png")
	if err != nil {
		panic(err)
	}
	z := tool.NewZoomIn(chat.ToolSchema{}, tool.ZoomInConfig{})
	id, err := z.Create(ctx, map[string]any{"image": png})
	if err != nil {
		panic(err)
	}
	defer z.Release(ctx, id)

	res, _ := z.Execute(ctx, id, json.RawMessage(`{"bbox_2d": [0, 0, 112, 56], "label": "corner"}`))
	crop, _ := vision.Decode(res.Images[0].Data, vision.Limits{})
	fmt.Println(res.Text, res.Reward)
	fmt.Printf("crop %d×%d\n", crop.W, crop.H)

	res, _ = z.Execute(ctx, id, json.RawMessage(`{"bbox_2d": [300, 10, 100, 50]}`))
	fmt.Println(res.Text, res.Reward, len(res.Images))
	// Output:
	// Zoomed in on the image to the region [0, 0, 112, 56] with label corner. 0
	// crop 112×56
	// Error: The specified bounding box [300, 10, 100, 50] is invalid or results in a crop smaller than the minimum size of 28x28. -0.05 0
}
