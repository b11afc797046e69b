package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/agentrl/agentrl/internal/arith"
	"github.com/agentrl/agentrl/trajectory"
)

func init() {
	register("demo", "run held-out arithmetic tasks through ToolAgent on the embedded tiny model", runDemo)
}

func runDemo(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr, "usage: agentrl demo [--n N] [--out FILE] [--model DIR] [--threads T]",
		"Runs held-out arithmetic tasks through the ToolAgent loop on the in-process engine with the tiny",
		"tool-using model embedded in the binary, and prints a table of tasks, tool calls, answers and rewards.")
	n := fs.Int("n", 64, "number of held-out tasks")
	out := fs.String("out", "", "write the trajectories as JSONL to this file")
	model := fs.String("model", "", "checkpoint directory to use instead of the embedded model (e.g. one written by agentrl train)")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "kernel threads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Errors carry no "demo:" of their own: runMain prefixes "agentrl demo: ".
	if *n < 1 {
		return fmt.Errorf("-n must be ≥ 1, got %d", *n)
	}
	if *threads < 1 {
		return fmt.Errorf("-threads must be ≥ 1, got %d", *threads)
	}
	dir := *model
	if dir == "" {
		d, err := arith.MaterializeEmbedded()
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	res, err := arith.RunDemo(ctx, dir, *n, *threads)
	if err != nil {
		return err
	}
	if err := arith.PrintDemo(stdout, res); err != nil {
		return err
	}
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		err = trajectory.WriteJSONL(f, res.Trajectories)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", *out, err)
		}
		fmt.Fprintf(stdout, "wrote %d trajectories to %s\n", len(res.Trajectories), *out)
	}
	return nil
}
