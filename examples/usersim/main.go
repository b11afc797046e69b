// Command usersim shows an Interaction that simulates a user: a guessing
// game where the "user" holds a secret number and answers each guess with
// "Higher." or "Lower." until the model finds it. The user's turns are
// appended as tokenizer deltas (mask 0), each turn's reward is kept in
// TurnRewards, and the final score becomes the trajectory reward.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/examples/internal/qwen"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// guessingUser is the simulated user. One value serves every trajectory;
// episodes are kept by instance id.
type guessingUser struct {
	mu       sync.Mutex
	next     int
	episodes map[string]*episode
}

type episode struct {
	secret  int
	guesses int
}

func (u *guessingUser) Start(_ context.Context, kwargs map[string]any) (string, error) {
	secret, ok := kwargs["secret"].(int)
	if !ok {
		return "", fmt.Errorf("interaction_kwargs.secret must be an int, got %T", kwargs["secret"])
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.next++
	id := strconv.Itoa(u.next)
	u.episodes[id] = &episode{secret: secret}
	return id, nil
}

func (u *guessingUser) Respond(_ context.Context, id string, msgs []chat.Message) (agentloop.Reply, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ep, ok := u.episodes[id]
	if !ok {
		return agentloop.Reply{}, fmt.Errorf("unknown episode %q", id)
	}
	ep.guesses++
	guess, err := strconv.Atoi(strings.TrimSpace(msgs[len(msgs)-1].Content))
	switch {
	case err != nil:
		return agentloop.Reply{Text: "Please answer with a number only.", Reward: -1}, nil
	case guess < ep.secret:
		return agentloop.Reply{Text: "Higher.", Reward: -0.1}, nil
	case guess > ep.secret:
		return agentloop.Reply{Text: "Lower.", Reward: -0.1}, nil
	}
	return agentloop.Reply{Reward: 1, Terminate: true}, nil
}

func (u *guessingUser) FinalScore(_ context.Context, id string) (float64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return 1 / float64(u.episodes[id].guesses), nil
}

func (u *guessingUser) Finalize(_ context.Context, id string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.episodes, id)
	return nil
}

var feedback = regexp.MustCompile(`<\|im_start\|>assistant\n(\d+)<\|im_end\|>\n<\|im_start\|>user\n(Higher|Lower)\.`)

// bisectingModel is a scripted model that binary-searches 1..100 from the
// feedback in its conversation.
func bisectingModel(tok *tokenizer.Tokenizer) (servertest.Rule, error) {
	return qwen.ScriptedModel(tok, func(_ servertest.Call, text string) string {
		lo, hi := 1, 100
		for _, m := range feedback.FindAllStringSubmatch(text, -1) {
			g, _ := strconv.Atoi(m[1])
			if m[2] == "Higher" {
				lo = g + 1
			} else {
				hi = g - 1
			}
		}
		return strconv.Itoa((lo + hi) / 2)
	})
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("usersim", flag.ContinueOnError)
	tok, err := qwen.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	rule, err := bisectingModel(tok)
	if err != nil {
		return err
	}
	env := &agentloop.Env{
		Server:       servertest.New(servertest.Config{Rule: rule}),
		Tokenizer:    tok,
		Interactions: map[string]agentloop.Interaction{"guess": &guessingUser{episodes: map[string]*episode{}}},
	}
	m, err := agentloop.NewManager(nil, env, agentloop.Options{DefaultAgent: agentloop.ToolAgentName,
		Sampling:       server.SamplingParams{Logprobs: true},
		RewardFromLoop: true}) // the simulated user's final score is the reward
	if err != nil {
		return err
	}
	var samples []agentloop.Sample
	for i, secret := range []int{50, 37, 99, 1} {
		samples = append(samples, agentloop.Sample{
			Index:             i,
			Messages:          []chat.Message{{Role: chat.RoleUser, Content: "Guess my number between 1 and 100. Answer with the number only."}},
			InteractionKwargs: map[string]any{"name": "guess", "secret": secret},
		})
	}
	out, err := m.Generate(ctx, samples)
	if err != nil {
		return err
	}
	for _, res := range out.Results {
		if err := res.Err(); err != nil {
			return err
		}
		t := res.Trajectories[0]
		fmt.Fprintf(stdout, "secret %v: %s after %d guesses, turn rewards %v, reward %.3f\n",
			res.Sample.InteractionKwargs["secret"], t.StopReason, len(t.TurnRewards), t.TurnRewards, *t.Reward)
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "usersim:", err)
		os.Exit(1)
	}
}
