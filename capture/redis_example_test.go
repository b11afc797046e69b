package capture_test

import (
	"context"
	"net/http"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
)

// Replicas behind a load balancer: each process opens the same Redis
// (fsyncing every write) and serves its Capture; any of them serves any
// call, reward, finish or export of any rollout. (Not run: it needs a
// Redis; TestRedisReplicasServeOneRollout runs the same with one of its
// own.)
func ExampleOpenRedis() {
	ctx := context.Background()
	var engine server.LLMServer // a router over the engines
	var chat *httpapi.Chat      // the model's tokenizer, template and parser
	store, err := capture.OpenRedis(ctx, "redis://10.0.0.7:6379/0", capture.RedisOptions{})
	if err != nil {
		panic(err) // unreachable, or a Redis that does not fsync each write
	}
	defer store.Close()
	c, err := capture.New(ctx, capture.Config{Engine: engine, Chat: chat, Store: store,
		BaseURL: "http://capture.internal:8080"}) // the load balancer's address
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", c.Handler())
	mux.Handle("/control/", http.StripPrefix("/control", c.ControlHandler("control-token")))
	_ = http.ListenAndServe(":8080", mux)
}
