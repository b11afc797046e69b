package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/vision"
)

// harnessAgent is the registry name --harness runs every row with.
const harnessAgent = "harness"

// harnessFlags are rollout's --harness settings.
type harnessFlags struct {
	command     string
	timeout     time.Duration
	dir         string
	keepDirs    bool
	output      string
	captureDir  string
	redisURL    string
	toolParser  string
	reasoning   bool
	maxModelLen int
	clamp       bool
	addr        string
}

func (h *harnessFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.command, "harness", "", "run this agent harness command (sh -c) for each rollout through black-box capture instead of a Go agent loop; {prompt} is the sample's prompt, shell-quoted")
	fs.DurationVar(&h.timeout, "harness-timeout", 10*time.Minute, "with --harness: kill a harness run (its whole process group) after this long; its recorded calls are kept, marked aborted")
	fs.StringVar(&h.dir, "harness-dir", "", "with --harness: where each run's own working directory is made (default the system's temporary directory)")
	fs.BoolVar(&h.keepDirs, "harness-keep-dirs", false, "with --harness: keep each run's working directory")
	fs.StringVar(&h.output, "harness-output", "", "with --harness: append the harnesses' stdout and stderr to this file (default discarded)")
	fs.StringVar(&h.captureDir, "capture-dir", "", "with --harness: the directory of the capture store (its log, capture.log), kept after the run (default a temporary one, removed)")
	fs.StringVar(&h.redisURL, "capture-redis", "", "with --harness: keep the capture store in the Redis at this URL (redis://host:port/db, unix:///path/to/socket) instead of a directory, shared with other agentrl processes on it and kept after the run; Redis must fsync each write (appendonly yes, appendfsync always)")
	fs.StringVar(&h.toolParser, "harness-tool-parser", "hermes", "with --harness: the model's tool-call format, as agentrl serve's -tool-parser")
	fs.BoolVar(&h.reasoning, "harness-reasoning", false, "with --harness: split <think>…</think> into the dialects' reasoning fields")
	fs.IntVar(&h.maxModelLen, "harness-max-model-len", 0, "with --harness: the engine's context length, so a harness's max_tokens past it is refused (or clamped) instead of failing in the engine; 0: unknown")
	fs.BoolVar(&h.clamp, "harness-clamp-max-tokens", true, "with --harness-max-model-len: lower a harness's max_tokens to what is left of the context (harnesses ask for up to 32,000)")
	fs.StringVar(&h.addr, "harness-addr", "127.0.0.1:0", "with --harness: the loopback address the capture serves the harnesses on")
}

// closingStore is a capture store with connections or files to close.
type closingStore interface {
	capture.Store
	Close() error
}

// harnessRun is a started capture: its store, its loopback server, and
// where harness output goes.
type harnessRun struct {
	c        *capture.Capture
	srv      *http.Server
	served   chan error
	store    closingStore
	storeDir string
	tempDir  bool
	out      *os.File
}

// start opens the capture over engine, serves it on loopback, and
// registers the harness loop as every row's agent in reg and opts.
func (h *harnessFlags) start(ctx context.Context, cfg rolloutConfig, engine server.LLMServer, tok *tokenizer.Tokenizer, vis *agentloop.Vision,
	reg *agentloop.Registry, opts *agentloop.Options, logger *slog.Logger) (_ *harnessRun, err error) {
	host, _, err := net.SplitHostPort(h.addr)
	if err != nil {
		return nil, fmt.Errorf("--harness-addr %q: %w", h.addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// The rollouts' keys are their only protection; harness runs are
		// local processes.
		return nil, fmt.Errorf("--harness-addr %q: must be a loopback address", h.addr)
	}
	if h.timeout < 0 || h.maxModelLen < 0 {
		return nil, errors.New("--harness-timeout and --harness-max-model-len must not be negative")
	}
	if h.redisURL != "" && h.captureDir != "" {
		return nil, errors.New("--capture-dir and --capture-redis name two stores: give one")
	}
	hr := &harnessRun{storeDir: h.captureDir}
	defer func() {
		if err != nil {
			hr.close()
		}
	}()
	switch {
	case h.redisURL != "":
		rs, err := capture.OpenRedis(ctx, h.redisURL, capture.RedisOptions{})
		if err != nil {
			return nil, fmt.Errorf("--capture-redis: %w", err)
		}
		hr.store, hr.storeDir = rs, "redis"
	default:
		if hr.storeDir == "" {
			if hr.storeDir, err = os.MkdirTemp("", "agentrl-capture-"); err != nil {
				return nil, err
			}
			hr.tempDir = true
		}
		if err := os.MkdirAll(hr.storeDir, 0o755); err != nil {
			return nil, err
		}
		// The one-file log: the faster embedded store (a synced append in
		// preallocated space, see BENCHMARKS.md). It never shrinks, which
		// a run's own store need not.
		ls, err := capture.OpenLog(filepath.Join(hr.storeDir, "capture.log"))
		if err != nil {
			return nil, err
		}
		hr.store = ls
	}
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		return nil, fmt.Errorf("--harness-addr: %w", err)
	}
	chatCfg := &httpapi.Chat{Tokenizer: tok, ToolParser: h.toolParser, Reasoning: h.reasoning}
	var capVision *agentloop.Vision
	if vis != nil {
		// A vision-language model: harnesses' image parts (data URLs) are
		// served and rebuilt with the model's processor, as they come
		// (no fetch_image resize: the harness sent what it sent).
		chatCfg.Images = &httpapi.VisionImages{Processor: vis.Processor, Tokens: vis.Placeholders, Limits: vis.Limits}
		v := *vis
		v.FetchImage, v.Sources = false, vision.Sources{NoFiles: true}
		capVision = &v
	}
	hr.c, err = capture.New(ctx, capture.Config{Engine: engine, Store: hr.store, Chat: chatCfg, Vision: capVision,
		HTTP:    httpapi.Config{Model: cfg.AgentRL.Model, MaxModelLen: h.maxModelLen, ClampMaxTokens: h.clamp && h.maxModelLen > 0},
		BaseURL: "http://" + ln.Addr().String()})
	if err != nil {
		ln.Close()
		return nil, err
	}
	hr.srv = &http.Server{Handler: hr.c.Handler(), ReadHeaderTimeout: httpapi.DefaultReadHeaderTimeout}
	hr.served = make(chan error, 1)
	go func() { hr.served <- hr.srv.Serve(ln) }()
	harness := capture.Harness{Command: h.command, Dir: h.dir, KeepDirs: h.keepDirs, Timeout: h.timeout}
	if h.output != "" {
		if hr.out, err = os.OpenFile(h.output, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("--harness-output: %w", err)
		}
		harness.Stdout, harness.Stderr = hr.out, hr.out
	}
	loop := &capture.HarnessLoop{Capture: hr.c, Harness: harness, KeepRollouts: h.captureDir != "" || h.redisURL != ""}
	if err := reg.Register(harnessAgent, func(*agentloop.Env, agentloop.Config) (agentloop.AgentLoop, error) { return loop, nil }, agentloop.Config{}); err != nil {
		return nil, err
	}
	opts.DefaultAgent = harnessAgent
	logger.Info("capture serving harnesses", "base_url", "http://"+ln.Addr().String(), "store", hr.storeDir)
	return hr, nil
}

// summary prints the capture's counters after the rollout's metrics.
func (hr *harnessRun) summary(w io.Writer) {
	if hr == nil {
		return
	}
	st := hr.c.Stats()
	fmt.Fprintf(w, "capture  %d rollouts, %d calls recorded, %d aborted, %d refused\n", st.RolloutsCreated, st.CallsRecorded, st.CallsAborted, st.CallsRefused)
}

// close stops serving and closes the store; a temporary store is removed.
func (hr *harnessRun) close() {
	// The rollout is over: calls still running (a harness left behind)
	// get a grace period, then are cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if hr.c != nil {
		_ = hr.c.Shutdown(ctx)
	}
	if hr.srv != nil {
		_ = hr.srv.Shutdown(ctx)
		_ = hr.srv.Close()
		<-hr.served
	}
	if hr.store != nil {
		_ = hr.store.Close()
	}
	if hr.tempDir {
		_ = os.RemoveAll(hr.storeDir)
	}
	if hr.out != nil {
		_ = hr.out.Close()
	}
}
