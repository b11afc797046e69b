package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/cudaprom"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
)

func init() {
	register("serve", "serve the in-process engine over SGLang-, vLLM- and OpenAI-compatible HTTP APIs", runServe)
}

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr, "usage: agentrl serve --model DIR [--addr HOST:PORT] [flags]",
		"Serves the in-process engine on the model in DIR over HTTP until interrupted; the endpoints",
		"are listed at start (SGLang native, vLLM token-in/token-out and control, OpenAI-compatible).")
	dir := fs.String("model", "", "Hugging Face model directory (config.json, *.safetensors, tokenizer.json) (required)")
	addr := fs.String("addr", "127.0.0.1:30000", "listen address; binding other than loopback must be asked for")
	name := fs.String("model-name", "", "model name reported to clients (default: the directory's base name)")
	tokenEnv := fs.String("auth-token-env", "", "name of an environment variable holding the token clients must send (Authorization: Bearer, or x-api-key)")
	toolParser := fs.String("tool-parser", "", "tool-call format for /v1/chat/completions (e.g. hermes); empty: plain text")
	reasoning := fs.Bool("reasoning", false, "split <think>…</think> into reasoning_content")
	maxBody := fs.Int64("max-body", httpapi.DefaultMaxBodyBytes, "request body limit in bytes")
	maxBodyMem := fs.Int64("max-body-memory", 0, "bytes all request bodies being read at once may hold; a read past it gets 429 (0: 4 × -max-body)")
	kvMemory := fs.Int64("kv-memory", 0, "KV cache bytes (default: the engine's)")
	kvCache := fs.String("kv-cache", "fp32", "how the KV cache stores keys and values: fp32, or bf16 (CPU engine only: half the bytes, twice the positions in -kv-memory, faster decode over long contexts)")
	device := fs.String("device", "cpu", "where the engine runs: cpu, or cuda (needs a binary built with -tags cuda)")
	weights := fs.String("weights", "auto", "how the CPU engine stores the matrices: bf16, bf16z (bf16 values compressed losslessly: bf16's results from ~3/4 of the bytes), fp32, int8 (llama.cpp's Q8_0 values, quantized at load), or auto (the checkpoint's)")
	copyWeights := fs.Bool("copy", false, "copy every matrix into the engine's memory; without it a bf16 checkpoint, or one packed by agentrl model pack, is computed from in place (a read-only mapping: replace its files by renaming new ones over them, never in place, or requests fail with an error naming the changed file)")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "how long in-flight requests may finish on shutdown before they are aborted")
	logFormat := fs.String("log-format", "text", "format of log records on stderr: text or json")
	metricsAddr := fs.String("metrics-addr", "", "serve the engine's Prometheus metrics at http://ADDR/metrics (a listener of its own); empty: none")
	clampMax := fs.Bool("clamp-max-tokens", false, "lower a request's max_tokens (max_completion_tokens, max_output_tokens) to what is left of the context instead of refusing it with 400: harnesses ask for up to 32,000")
	var sessionKeys listFlag
	fs.Var(&sessionKeys, "session-key", `where a chat, Responses or Messages request names its conversation, "header:NAME" or "body:FIELD.PATH" (repeatable; default: the harnesses' own, see httpapi.DefaultSessionKeys); the key is the routing key when the request has no request_id`)
	logRequests := fs.Bool("log-requests", true, "log every request (method, path, status, bytes, duration, client; never headers or bodies) on stderr")
	var weightDirs, hosts, origins listFlag
	fs.Var(&weightDirs, "allow-weights-dir", "directory /update_weights_from_disk may load from (repeatable; none: weight loading over HTTP is refused)")
	fs.Var(&hosts, "allow-host", "host name clients may address the server by besides IPs and localhost (repeatable; DNS-rebinding defence when there is no auth token)")
	fs.Var(&origins, "allow-origin", "browser origin allowed to call the server besides its own (repeatable)")
	maxConns := fs.Int("max-conns", httpapi.DefaultMaxConns, "open connections served at once; more wait in the listen backlog")
	maxInFlight := fs.Int("max-inflight", httpapi.DefaultMaxInFlight, "requests handled at once (GETs excepted); more get 429")
	headerTimeout := fs.Duration("read-header-timeout", httpapi.DefaultReadHeaderTimeout, "time a client has to send its request headers")
	bodyTimeout := fs.Duration("body-timeout", httpapi.DefaultBodyTimeout, "time a client has to send its request body")
	idleTimeout := fs.Duration("idle-timeout", httpapi.DefaultIdleTimeout, "time a kept-alive connection may wait for its next request")
	writeTimeout := fs.Duration("write-timeout", httpapi.DefaultWriteTimeout, "time a client has to read a response once it starts")
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
	wt, err := model.ParseWeightType(*weights)
	if err != nil {
		return fmt.Errorf("-weights: %w", err)
	}
	kvt, err := model.ParseKVType(*kvCache)
	if err != nil {
		return fmt.Errorf("-kv-cache: %w", err)
	}
	for _, c := range []struct {
		name string
		bad  bool
	}{
		{"-max-body", *maxBody < 1},
		{"-max-body-memory", *maxBodyMem < 0},
		{"-max-conns", *maxConns < 1},
		{"-max-inflight", *maxInFlight < 1},
		{"-read-header-timeout", *headerTimeout <= 0},
		{"-body-timeout", *bodyTimeout <= 0},
		{"-idle-timeout", *idleTimeout <= 0},
		{"-write-timeout", *writeTimeout <= 0},
	} {
		if c.bad {
			return fmt.Errorf("%s: must be positive", c.name)
		}
	}
	if *grace < 0 || *kvMemory < 0 {
		return errors.New("-shutdown-grace and -kv-memory must not be negative")
	}
	logger, err := newLogger(*logFormat, stderr)
	if err != nil {
		return err
	}
	cfg := httpapi.Config{Addr: *addr, MaxBodyBytes: *maxBody, MaxBodyMemory: *maxBodyMem, Model: *name,
		MaxConns: *maxConns, MaxInFlight: *maxInFlight,
		ReadHeaderTimeout: *headerTimeout, BodyTimeout: *bodyTimeout, IdleTimeout: *idleTimeout, WriteTimeout: *writeTimeout,
		AllowedWeightDirs: weightDirs, AllowedHosts: hosts, AllowedOrigins: origins,
		Logger: logger, LogRequests: *logRequests, ClampMaxTokens: *clampMax}
	if len(sessionKeys) > 0 {
		cfg.SessionKeys = sessionKeys
	}
	for i, d := range cfg.AllowedWeightDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("-allow-weights-dir %q: %w", d, err)
		}
		cfg.AllowedWeightDirs[i] = abs
	}
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

	eng, err := cuda.Open(*dir, cuda.Options{Name: cfg.Model, KVMemory: *kvMemory, KVCache: kvt, Device: dev, Weights: wt, CopyWeights: *copyWeights})
	if err != nil {
		return err
	}
	defer eng.Close()
	// Requests past the context are refused with vLLM's 400 rather than
	// clamped by the engine.
	cfg.MaxModelLen = eng.MaxContext()
	cfg.ModelPath = *dir
	// /metrics on the API port, and on --metrics-addr when given: the
	// engine's own metrics and their SGLang/vLLM-named view.
	mh, err := metricsHandler(logger, append(engineCollectors(eng), cudaprom.NewCompat(eng, cfg.Model))...)
	if err != nil {
		return err
	}
	cfg.Metrics = mh
	if *metricsAddr != "" {
		ms, err := serveMetrics(*metricsAddr, logger, mh, cfg)
		if err != nil {
			return err
		}
		defer ms.stop()
	}
	srv, err := httpapi.Start(eng, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agentrl serve: %s on %s\n", cfg.Model, srv.URL())
	printEndpoints(stdout, srv.URL(), cfg.Chat != nil)

	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	fmt.Fprintln(stdout, "agentrl serve: stopped")
	return nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*l = append(*l, v)
	return nil
}

// endpoint is one route of the HTTP API (server/httpapi's routes).
type endpoint struct{ api, method, path, what string }

// serveEndpoints lists what `serve` answers; TestServeEndpointsRouted
// checks every entry against the real handler so the list cannot claim a
// route that is gone.
var serveEndpoints = []endpoint{
	{"SGLang", "POST", "/generate", "generate from input_ids (or text with a tokenizer)"},
	{"SGLang", "POST", "/abort_request", "abort one request by rid, or all"},
	{"SGLang", "GET", "/health", "readiness"},
	{"SGLang", "GET", "/health_generate", "readiness"},
	{"SGLang", "POST", "/flush_cache", "drop the prefix cache"},
	{"SGLang", "POST", "/update_weights_from_disk", "reload weights from a directory"},
	{"SGLang", "POST", "/release_memory_occupation", "sleep: free KV cache (and weights)"},
	{"SGLang", "POST", "/resume_memory_occupation", "wake up"},
	{"SGLang", "POST", "/pause_generation", "pause scheduling"},
	{"SGLang", "POST", "/continue_generation", "resume scheduling"},
	{"SGLang", "GET", "/model_info", "model name and paths"},
	{"SGLang", "GET", "/get_model_info", "model name and paths"},
	{"vLLM", "POST", "/inference/v1/generate", "token-in/token-out generate"},
	{"vLLM", "POST", "/abort_requests", "abort requests by id"},
	{"vLLM", "POST", "/pause", "pause scheduling"},
	{"vLLM", "POST", "/resume", "resume scheduling"},
	{"vLLM", "POST", "/sleep", "free KV cache (and weights)"},
	{"vLLM", "POST", "/wake_up", "wake up"},
	{"vLLM", "GET", "/is_sleeping", "sleep state"},
	{"vLLM", "POST", "/reset_prefix_cache", "drop the prefix cache"},
	{"both", "GET", "/metrics", "Prometheus metrics, with SGLang's and vLLM's names"},
	{"OpenAI", "GET", "/v1/models", "the served model"},
	{"OpenAI", "POST", "/v1/completions", "text or token completions"},
	{"OpenAI", "POST", "/v1/chat/completions", "chat with the model's template (needs its tokenizer)"},
	{"OpenAI", "POST", "/v1/responses", "the Responses API over the same chat path (needs its tokenizer)"},
	{"Anthropic", "POST", "/v1/messages", "the Messages API over the same chat path (needs its tokenizer)"},
	{"Anthropic", "POST", "/v1/messages/count_tokens", "the prompt length /v1/messages would send (needs its tokenizer)"},
}

func printEndpoints(w io.Writer, base string, chat bool) {
	fmt.Fprintln(w, "endpoints:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range serveEndpoints {
		note := ""
		if !chat && (e.path == "/v1/chat/completions" || e.path == "/v1/responses" || strings.HasPrefix(e.path, "/v1/messages")) {
			note = " (off: no tokenizer)"
		}
		fmt.Fprintf(tw, "  %s\t%s %s%s\t%s%s\n", e.api, e.method, base, e.path, e.what, note)
	}
	tw.Flush()
}
