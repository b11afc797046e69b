package arith_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trainer/arith"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestGenerate(t *testing.T) {
	a, err := arith.Generate(3, 200, arith.TrainSplit)
	require.NoError(t, err)
	b, err := arith.Generate(3, 200, arith.TrainSplit)
	require.NoError(t, err)
	require.Equal(t, a, b, "same seed, same tasks")
	c, err := arith.Generate(4, 200, arith.TrainSplit)
	require.NoError(t, err)
	require.NotEqual(t, a, c)
	held, err := arith.Generate(3, 200, arith.HeldOut)
	require.NoError(t, err)
	train := map[string]bool{}
	for _, s := range []uint64{1, 2, 3, 4, 5} {
		ts, err := arith.Generate(s, 2000, arith.TrainSplit)
		require.NoError(t, err)
		for _, t := range ts {
			train[t.Expression] = true
		}
	}
	for _, task := range append(a, held...) {
		got, err := tool.Calculate(task.Expression)
		require.NoError(t, err)
		require.Equal(t, task.Answer, got, task.Expression)
		require.Contains(t, task.Question, "?")
	}
	for _, task := range held {
		require.False(t, train[task.Expression], "held-out %q is in the training split", task.Expression)
	}
	for _, bad := range []struct {
		n     int
		split arith.Split
	}{{-1, arith.TrainSplit}, {1, arith.Split(7)}} {
		_, err := arith.Generate(1, bad.n, bad.split)
		require.ErrorIs(t, err, arith.ErrTask)
	}
}

func TestScore(t *testing.T) {
	for _, c := range []struct {
		text, answer string
		want         float64
	}{
		{"#### 1275", "1275", 1},
		{"<tool_call>\n{\"expression\": \"85 * 15\"}\n</tool_call>#### 1275", "1275", 1},
		{"#### 1,275", "1275", 1},
		{"#### 1274", "1275", 0},
		{"1275", "1275", 0}, // no "#### ": the answer format is part of the task
		{"#### 12 #### 1275", "1275", 1},
		{"#### 1275 #### 12", "1275", 0},
		{"", "1275", 0},
	} {
		require.Equal(t, c.want, arith.Score(c.text, c.answer), "%q", c.text)
	}
	s := arith.Task{Question: "q?", Expression: "1 + 1", Answer: "2"}.Sample(3)
	r, err := arith.Reward(context.Background(), agentloop.RewardInput{Sample: s, ModelText: "#### 2"})
	require.NoError(t, err)
	require.Equal(t, 1.0, r)
	s.GroundTruth = 2
	_, err = arith.Reward(context.Background(), agentloop.RewardInput{Sample: s, ModelText: "#### 2"})
	require.ErrorIs(t, err, arith.ErrTask)
}

func TestConversationChecksTheAnswer(t *testing.T) {
	_, err := arith.Task{Question: "q?", Expression: "2 * 3", Answer: "7"}.Conversation()
	require.ErrorIs(t, err, arith.ErrTask)
	_, err = arith.Task{Question: "q?", Expression: "2 *", Answer: "7"}.Conversation()
	require.ErrorIs(t, err, arith.ErrTask)
}
