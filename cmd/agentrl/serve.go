package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
)

func init() {
	register("serve", "serve the in-process engine over SGLang-, vLLM- and OpenAI-compatible HTTP APIs", runServe)
}

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("model", "", "Hugging Face model directory (config.json, *.safetensors, tokenizer.json) (required)")
	addr := fs.String("addr", "127.0.0.1:30000", "listen address; binding other than loopback must be asked for")
	name := fs.String("model-name", "", "model name reported to clients (default: the directory's base name)")
	tokenEnv := fs.String("auth-token-env", "", "name of an environment variable holding the bearer token clients must send")
	toolParser := fs.String("tool-parser", "", "tool-call format for /v1/chat/completions (e.g. hermes); empty: plain text")
	reasoning := fs.Bool("reasoning", false, "split <think>…</think> into reasoning_content")
	maxBody := fs.Int64("max-body", httpapi.DefaultMaxBodyBytes, "request body limit in bytes")
	kvMemory := fs.Int64("kv-memory", 0, "KV cache bytes (default: the engine's)")
	device := fs.String("device", "cpu", "where the engine runs: cpu, or cuda (needs a binary built with -tags cuda)")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "how long in-flight requests may finish on shutdown before they are aborted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-model is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	dev, err := model.ParseDevice(*device)
	if err != nil {
		return fmt.Errorf("-device: %w", err)
	}
	cfg := httpapi.Config{Addr: *addr, MaxBodyBytes: *maxBody, Model: *name}
	if cfg.Model == "" {
		cfg.Model = filepath.Base(filepath.Clean(*dir))
	}
	if *tokenEnv != "" {
		cfg.AuthToken = os.Getenv(*tokenEnv)
		if cfg.AuthToken == "" {
			return fmt.Errorf("-auth-token-env: environment variable %s is empty or unset", *tokenEnv)
		}
	}
	tok, err := tokenizer.Load(*dir)
	switch {
	case err == nil:
		cfg.Chat = &httpapi.Chat{Tokenizer: tok, ToolParser: *toolParser, Reasoning: *reasoning}
	case *toolParser != "" || *reasoning:
		return fmt.Errorf("-tool-parser and -reasoning need a tokenizer: %w", err)
	default:
		fmt.Fprintf(stderr, "agentrl serve: no usable tokenizer (%v): serving token ids only\n", err)
	}

	eng, err := cuda.Open(*dir, cuda.Options{Name: cfg.Model, KVMemory: *kvMemory, Device: dev})
	if err != nil {
		return err
	}
	defer eng.Close()
	srv, err := httpapi.Start(eng, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agentrl serve: %s on %s\n", cfg.Model, srv.URL())

	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	fmt.Fprintln(stdout, "agentrl serve: stopped")
	return nil
}
