package capture_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// A rollout of a black-box harness: create it, let the harness call its
// base URL with its key (here one plain HTTP call), set the reward and
// rebuild the trajectory.
func Example() {
	ctx := context.Background()
	tok, err := tokenizer.Load(filepath.Join("..", "internal", "arith", "checkpoint"))
	if err != nil {
		panic(err)
	}
	end, _ := tok.TokenID("<|im_end|>")
	engine := servertest.New(servertest.Config{Rule: servertest.Constant(append(tok.Encode("4"), end)...)})
	dir, err := os.MkdirTemp("", "capture")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := capture.OpenDir(dir)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	srv := httptest.NewUnstartedServer(nil)
	c, err := capture.New(ctx, capture.Config{Engine: engine, Chat: &httpapi.Chat{Tokenizer: tok}, Store: store,
		BaseURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = c.Handler()
	srv.Start()
	defer srv.Close()

	ro, err := c.Create(ctx, capture.CreateOptions{Group: "sample-0"})
	if err != nil {
		panic(err)
	}
	// What the harness does, given OPENAI_BASE_URL and OPENAI_API_KEY.
	req, _ := http.NewRequest("POST", ro.OpenAIBaseURL+"/chat/completions",
		strings.NewReader(`{"model":"agentrl","messages":[{"role":"user","content":"2+2?"}]}`))
	req.Header.Set("Authorization", "Bearer "+ro.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"content":"4"`))

	_ = c.SetReward(ctx, ro.ID, 1)
	_ = c.Finish(ctx, ro.ID)
	trajs, report, err := c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(trajs), trajs[0].GroupID, *trajs[0].Reward, trajs[0].MaskOnes(), report.Delivered)
	// Output:
	// 200 true
	// 1 sample-0 1 2 1
}
