package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUsageAndUnknownCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 2, runMain(context.Background(), nil, strings.NewReader(""), &out, &errOut))
	require.Contains(t, errOut.String(), "usage: agentrl <command>")

	errOut.Reset()
	require.Equal(t, 0, runMain(context.Background(), []string{"help"}, strings.NewReader(""), &out, &errOut))
	for name := range commands {
		require.Contains(t, errOut.String(), name, "help lists every command")
	}

	errOut.Reset()
	require.Equal(t, 2, runMain(context.Background(), []string{"frobnicate"}, strings.NewReader(""), &out, &errOut))
	require.Contains(t, errOut.String(), `unknown command "frobnicate"`)
}
