package captureprom_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/capture/captureprom"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

func Example() {
	tok, _ := tokenizer.Load(filepath.Join("..", "..", "internal", "arith", "checkpoint"))
	dir, _ := os.MkdirTemp("", "captureprom-example-")
	defer os.RemoveAll(dir)
	store, _ := capture.OpenDir(dir)
	defer store.Close()
	c, _ := capture.New(context.Background(), capture.Config{Engine: servertest.New(servertest.Config{}), Store: store,
		Chat: &httpapi.Chat{Tokenizer: tok}, BaseURL: "http://127.0.0.1:8080"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(captureprom.New(c, captureprom.Options{}))

	_, _ = c.Create(context.Background(), capture.CreateOptions{Group: "sample-0"})
	fams, _ := reg.Gather()
	for _, f := range fams {
		if f.GetName() == "agentrl_capture_rollouts_open" {
			fmt.Println(f.GetName(), f.Metric[0].Gauge.GetValue())
		}
	}
	// Output:
	// agentrl_capture_rollouts_open 1
}
