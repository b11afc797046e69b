package agentloop_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

// retryLoop is a custom agent loop: it lets the model answer and, while
// the answer is not "42", tells it to try again, at most three times.
type retryLoop struct {
	env *agentloop.Env
	cfg agentloop.Config
}

func (l retryLoop) Run(ctx context.Context, s agentloop.Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	e := agentloop.NewEpisode(l.env, l.cfg, s, p, nil)
	if !e.Start() {
		return e.Finish()
	}
	for try := 1; ; try++ {
		ids, ok := e.Generate(ctx)
		if !ok {
			return e.Finish() // budget, cancellation (partial turn kept) or engine error
		}
		answer, err := e.ModelText(ids)
		if err != nil {
			e.Fail(err)
			return e.Finish()
		}
		if answer == "42" || try == 3 {
			e.SetExtra("tries", try)
			return e.Finish() // completed
		}
		e.AddMessage(chat.Message{Role: chat.RoleAssistant, Content: answer})
		if !e.Observe(chat.Message{Role: chat.RoleUser, Content: "Wrong, try again."}) {
			return e.Finish() // the observation would not fit the response budget
		}
	}
}

// A custom loop built on Episode, registered and run by a Manager.
func ExampleEpisode() {
	tok, err := loadQwen3()
	if err != nil {
		fmt.Println(err)
		return
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	answers := [][]int32{append(tok.Encode("41"), imEnd), append(tok.Encode("42"), imEnd)}
	engine := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"q": answers}, nil)})

	reg := agentloop.NewRegistry()
	_ = reg.Register("retry_agent", func(env *agentloop.Env, cfg agentloop.Config) (agentloop.AgentLoop, error) {
		return retryLoop{env, cfg}, nil
	}, agentloop.Config{ResponseLength: 256})
	m, err := agentloop.NewManager(reg, &agentloop.Env{Server: engine, Tokenizer: tok},
		agentloop.Options{RewardFromLoop: true, DefaultAgent: "retry_agent", Sampling: server.SamplingParams{Logprobs: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Generate(context.Background(), []agentloop.Sample{
		{ID: "q", Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 6*7?"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := out.Trajectories[0]
	text, _ := tok.Decode(t.ResponseIDs, false)
	fmt.Println(t.ID, t.StopReason, t.NumTurns, string(t.Extra["tries"]), t.MaskOnes() == len(answers[0])+len(answers[1]), t.Validate())
	fmt.Printf("%q\n", text)
	// Output:
	// q completed 4 2 true <nil>
	// "41<|im_end|>\n<|im_start|>user\nWrong, try again.<|im_end|>\n<|im_start|>assistant\n42<|im_end|>"
}

// Episode.Generate stops the episode when the response budget is used up:
// here Config.ResponseLength is 3 tokens and the model would write more.
func ExampleEpisode_Generate() {
	tok, err := loadQwen3()
	if err != nil {
		fmt.Println(err)
		return
	}
	engine := servertest.New(servertest.Config{Rule: servertest.Constant(tok.Encode("one two three four five")...)})
	env := &agentloop.Env{Server: engine, Tokenizer: tok}
	e := agentloop.NewEpisode(env, agentloop.Config{ResponseLength: 3}, agentloop.Sample{ID: "b",
		Messages: []chat.Message{{Role: chat.RoleUser, Content: "Count."}}}, server.SamplingParams{}, nil)
	if e.Start() {
		ids, ok := e.Generate(context.Background())
		fmt.Println(len(ids), ok, e.Budget())
	}
	t, err := e.Finish()
	fmt.Println(t.StopReason, len(t.ResponseIDs), err)
	// Output:
	// 3 false 0
	// response_length 3 <nil>
}

// Consuming Stream with an Accumulator: each group is handled as soon as
// it finishes (here printed; a trainer would write it out), and the kept
// trajectories, the metrics and the batch come out as Generate's would.
func ExampleAccumulator() {
	tok, err := loadQwen3()
	if err != nil {
		fmt.Println(err)
		return
	}
	engine := servertest.New(servertest.Config{Rule: servertest.Constant(tok.Encode("4")...)})
	m, err := agentloop.NewManager(nil, &agentloop.Env{Server: engine, Tokenizer: tok}, agentloop.Options{RewardFromLoop: true, N: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	in := make(chan agentloop.Sample)
	go func() {
		defer close(in)
		for _, id := range []string{"p1", "p2"} {
			in <- agentloop.Sample{ID: id, Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 2+2?"}}}
		}
	}()
	acc := agentloop.NewAccumulator()
	written := 0
	for r := range m.Stream(context.Background(), in) {
		written += len(acc.Add(r)) // the group's kept trajectories, to write out now
	}
	b, err := acc.Collate(trajectory.CollateOptions{PromptLen: 32, ResponseLen: 4})
	fmt.Println(written, len(acc.Trajectories()), acc.Metrics().Groups, b.Size, err)
	// Output:
	// 4 4 2 4 <nil>
}
