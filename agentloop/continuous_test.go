package agentloop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// newlineVocab is the Qwen3 tokenizer with "\n" encoding to another id: a
// boundary built over it expects a different inserted token than the
// template's glue, so Env.Boundary must reject the delta.
type newlineVocab struct{ *tokenizer.Tokenizer }

func (v newlineVocab) Encode(text string) []int32 {
	if text == "\n" {
		return []int32{0}
	}
	return v.Tokenizer.Encode(text)
}

// TestEnvBoundaryChecksObservations: with Env.Boundary set to verl's Qwen3
// rule the episode runs as without it (the delta's leading "\n" is the
// token verl inserts after <|im_end|>); a rule the delta does not satisfy
// ends the episode with StopError naming the family.
func TestEnvBoundaryChecksObservations(t *testing.T) {
	tok := qwen3(t)
	imEnd := tokenID(t, tok, "<|im_end|>")
	good, err := tokenizer.NewBoundary(tokenizer.FamilyQwen3, tok)
	require.NoError(t, err)
	bad, err := tokenizer.NewBoundary(tokenizer.FamilyQwen3, newlineVocab{tok})
	require.NoError(t, err)
	run := func(b *tokenizer.Boundary) (*Episode, []int32) {
		engine := servertest.New(servertest.Config{Rule: servertest.Constant(append(tok.Encode("41"), imEnd)...)})
		env := &Env{Server: engine, Tokenizer: tok, Boundary: b}
		e := NewEpisode(env, Config{ResponseLength: 256}, Sample{ID: "q", Messages: []chat.Message{{Role: chat.RoleUser, Content: "6*7?"}}}, server.SamplingParams{}, nil)
		require.True(t, e.Start())
		ids, ok := e.Generate(context.Background())
		require.True(t, ok)
		e.AddMessage(chat.Message{Role: chat.RoleAssistant, Content: "41"})
		e.Observe(chat.Message{Role: chat.RoleUser, Content: "again"})
		return e, ids
	}
	e, _ := run(nil)
	stop, err := e.Stopped()
	require.NoError(t, err)
	want := e.b.Sequence()

	e, _ = run(good)
	stop2, err := e.Stopped()
	require.NoError(t, err)
	require.Equal(t, stop, stop2)
	require.Equal(t, want, e.b.Sequence())

	e, _ = run(bad)
	stop, err = e.Stopped()
	require.Equal(t, trajectory.StopError, stop)
	require.ErrorIs(t, err, tokenizer.ErrContinuous)
	require.ErrorContains(t, err, "qwen3")
}
