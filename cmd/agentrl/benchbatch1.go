package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/server"
)

func init() {
	benchSubcommands = append(benchSubcommands, subcommand{"batch1",
		"batch-1 decode measurements on request, for a driver that interleaves them with a peer's", runBenchBatch1})
}

// runBenchBatch1 loads a model once and then answers each line of its input
// with one batch-1 decode measurement. It exists for side-by-side runs: on a shared
// machine the bandwidth on offer moves from minute to minute, so a peer's
// batch-1 decode is compared fairly only with ours measured in the same
// seconds, and the peer harness's driver (cuda/testdata/peer/interleave.mjs)
// alternates the two processes' measurements a few seconds apart.
//
// A measurement streams one greedy sequence from a fresh random prompt of
// --context tokens (16 by default) and times its tokens from the first to the last, as
// llamacpp_batch1.mjs times llama.cpp's and bench engine times its decode
// rows: the prompt's prefill is left out within one run.
//
// Protocol, one line each way: it prints "ready" once loaded, then reads
// lines; "decode" (or an empty line) answers "batch1 RATE tok/s", "quit"
// or the end of the input ends it, anything else is an error.
func runBenchBatch1(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench batch1", stderr, "usage: agentrl bench batch1 --model DIR [flags] < commands",
		"Loads the model, prints \"ready\", then answers each input line \"decode\" (or an empty line) with one",
		"batch-1 decode measurement, \"batch1 RATE tok/s\", until \"quit\" or the end of the input.")
	mf := addModelFlags(fs)
	decodeN := fs.Int("decode-tokens", 32, "tokens generated per measurement")
	ctxN := fs.Int("context", 16, "prompt tokens before each measurement's tokens (a fresh random prompt each time)")
	reuse := fs.Bool("reuse-prompt", false, "one random prompt for every measurement, computed by the first and then found in the prefix cache: a long --context is prefilled once (the measurement times the decode alone either way)")
	opts, err := mf.parse(fs, args)
	if err != nil {
		return err
	}
	if *decodeN < 2 || *ctxN < 1 {
		return errors.New("--decode-tokens must be at least 2 and --context at least 1")
	}
	e, err := openBenchEngine(ctx, *mf.dir, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	b := &engineBench{e: e, context: *ctxN, r: rand.New(rand.NewPCG(1, 2))}
	var prompt []int32
	if *reuse {
		prompt = b.prompt(b.context)
	}
	if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
		return err
	}
	// The input is read on a goroutine of its own, so that a cancelled
	// context (SIGTERM from a driver giving up) ends the command while it
	// waits for a line: a blocked read cannot be interrupted. The reader
	// ends at the end of the input, or at its next line once this returns;
	// a reader still blocked then ends with the process.
	lines, errc, done := make(chan string), make(chan error, 1), make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		in := bufio.NewScanner(stdin)
		for in.Scan() {
			select {
			case lines <- in.Text():
			case <-done:
				return
			}
		}
		errc <- in.Err()
	}()
	for line := 1; ; line++ {
		var text string
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l, ok := <-lines:
			if !ok { // the end of the input
				return <-errc
			}
			text = l
		}
		switch cmd := strings.TrimSpace(text); cmd {
		case "quit":
			return nil
		case "", "decode":
			p := prompt
			if p == nil {
				p = b.prompt(b.context)
			}
			rate, err := streamedDecodeRate(ctx, e, p, *decodeN)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(stdout, "batch1 %.3f tok/s\n", rate); err != nil {
				return err
			}
		default:
			return fmt.Errorf("input line %d: unknown command %q (want decode or quit)", line, cmd)
		}
	}
}

// streamedDecodeRate generates n tokens greedily from prompt and returns the
// tokens after the first chunk over the time from that chunk to the last.
// When the steps outpace this reader so much that every token comes in the
// first chunk (a model too small to stream apart), it is all n tokens over
// the time from the request to the last, the prompt's prefill included
// (streamedRate).
func streamedDecodeRate(ctx context.Context, e *cuda.Engine, prompt []int32, n int) (float64, error) {
	s, err := stream(ctx, e, prompt, server.SamplingParams{MaxNewTokens: n})
	if err != nil {
		return 0, err
	}
	rate, _, err := streamedRate([]streamed{s})
	return rate, err
}
