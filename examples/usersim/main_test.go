package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/examples/internal/exampletest"
)

func TestUserSim(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"--tokenizer", exampletest.Qwen3Dir(t)}, &out))
	// Binary search over 1..100 from 50: 37 takes 50, 25, 37.
	require.Equal(t, ""+
		"secret 50: interaction_done after 1 guesses, turn rewards [1], reward 1.000\n"+
		"secret 37: interaction_done after 3 guesses, turn rewards [-0.1 -0.1 1], reward 0.333\n"+
		"secret 99: interaction_done after 6 guesses, turn rewards [-0.1 -0.1 -0.1 -0.1 -0.1 1], reward 0.167\n"+
		"secret 1: interaction_done after 6 guesses, turn rewards [-0.1 -0.1 -0.1 -0.1 -0.1 1], reward 0.167\n",
		out.String())
}
