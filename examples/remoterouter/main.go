// Command remoterouter runs tool-calling rollouts against remote
// SGLang-compatible servers through the router. Without --servers it starts
// two local ones (httpapi serving a scripted servertest model on loopback)
// and makes one of them fail with HTTP 503 midway: the router retries the
// failed calls on the other server and no trajectory is lost.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/examples/internal/qwen"
	"github.com/agentrl/agentrl/router"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
)

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("remoterouter", flag.ContinueOnError)
	servers := fs.String("servers", "", "comma-separated SGLang URLs; empty starts two scripted local servers")
	samples := fs.Int("samples", 16, "number of prompts")
	tok, err := qwen.ParseFlags(fs, args)
	if err != nil {
		return err
	}

	var failing *servertest.Server
	urls := strings.Split(*servers, ",")
	if *servers == "" {
		urls = nil
		rule, err := scriptedModel(tok)
		if err != nil {
			return err
		}
		for i := 0; i < 2; i++ {
			engine := servertest.New(servertest.Config{Name: fmt.Sprintf("local%d", i), Rule: rule})
			srv, err := httpapi.Start(engine, httpapi.Config{})
			if err != nil {
				return err
			}
			defer srv.Close()
			urls = append(urls, srv.URL())
			failing = engine
		}
	}
	var backends []router.Backend
	for _, u := range urls {
		c, err := sglang.New(sglang.Config{BaseURL: u})
		if err != nil {
			return err
		}
		backends = append(backends, router.Backend{Name: u, Server: c})
	}
	r, err := router.New(router.Config{}, backends...)
	if err != nil {
		return err
	}
	defer r.Close()

	tools, err := tool.NewSet(tool.NewCalculator())
	if err != nil {
		return err
	}
	var generated atomic.Int64
	env := &agentloop.Env{Server: r, Tokenizer: tok, Tools: tools, Trace: func(e agentloop.Event) {
		if e.Kind == agentloop.EventGenerate && generated.Add(1) == int64(*samples) && failing != nil {
			failing.SetFault(servertest.Unavailable()) // served as HTTP 503 from now on
		}
	}}
	m, err := agentloop.NewManager(nil, env, agentloop.Options{
		DefaultAgent:   agentloop.ToolAgentName,
		Concurrency:    8,
		Sampling:       server.SamplingParams{Temperature: 1},
		RewardFromLoop: true, // the demo shows routing, not scoring
	})
	if err != nil {
		return err
	}
	batch := make([]agentloop.Sample, *samples)
	for i := range batch {
		batch[i] = agentloop.Sample{Index: i, Messages: []chat.Message{
			{Role: chat.RoleUser, Content: fmt.Sprintf("What is %d * 7? Use the calculator.", i)},
		}}
	}
	out, err := m.Generate(ctx, batch)
	if err != nil {
		return err
	}
	for _, res := range out.Results {
		if err := res.Err(); err != nil {
			return err
		}
	}
	mt := out.Metrics
	fmt.Fprintf(stdout, "trajectories: %d, stop reasons: %v, tool calls: %d (success rate %.2f)\n",
		mt.Trajectories, mt.StopReasons, mt.ToolCalls, mt.ToolSuccessRate())
	if failing != nil {
		fmt.Fprintf(stdout, "failing server: %d calls failed and were retried elsewhere\n", failing.Stats().Failed)
	}
	return nil
}

// scriptedModel calls the calculator with the question's numbers, then
// answers with the result it read back: a deterministic stand-in for a
// model, readable by any server of the fleet.
func scriptedModel(tok *tokenizer.Tokenizer) (servertest.Rule, error) {
	return qwen.ScriptedModel(tok, func(_ servertest.Call, text string) string {
		if i := strings.LastIndex(text, "<tool_response>\n"); i >= 0 {
			result := text[i+len("<tool_response>\n"):]
			result = result[:strings.Index(result, "\n")]
			return "The answer is " + result + "."
		}
		var n int
		q := text[strings.LastIndex(text, "What is "):]
		fmt.Sscanf(q, "What is %d", &n)
		return fmt.Sprintf("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%d * 7\"}}\n</tool_call>", n)
	})
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "remoterouter:", err)
		os.Exit(1)
	}
}
