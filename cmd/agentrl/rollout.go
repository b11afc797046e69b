package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/agentprom"
	"github.com/agentrl/agentrl/capture/captureprom"
	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/dataset"
	"github.com/agentrl/agentrl/router"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/sglang"
	"github.com/agentrl/agentrl/server/vllm"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

func init() {
	register("rollout", "run agent loops over a dataset against SGLang/vLLM servers or the in-process engine; write trajectories", runRollout)
}

func runRollout(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rollout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML config: verl's keys (data.*, actor_rollout_ref.rollout.*) and agentrl.*; optional")
	strictConfig := fs.Bool("strict-config", false, "unknown config keys are errors instead of warnings")
	dataPath := fs.String("data", "", "dataset: .jsonl or verl-format .parquet, comma-separated for several (default data.train_files, or data.val_files with --validate)")
	tokDir := fs.String("tokenizer", "", "directory with tokenizer.json and tokenizer_config.json (default actor_rollout_ref.model.path)")
	ctFamily := fs.String("continuous-family", "auto", "verl's continuous-token family checked at every observation: auto (from the tokenizer directory's config.json model_type, as verl picks it), a family name (qwen3, glm47, gemma4, ...), or off")
	servers := fs.String("servers", "", "comma-separated server URLs (overrides agentrl.servers)")
	localModel := fs.String("model", "", "run the in-process engine on this HF model directory instead of servers (overrides agentrl.local_model)")
	backend := fs.String("backend", "", "sglang or vllm (overrides agentrl.backend; default actor_rollout_ref.rollout.name, else sglang)")
	device := fs.String("device", "", "with --model: where the engine runs, cpu or cuda (needs a binary built with -tags cuda; overrides agentrl.device; default cpu)")
	outPath := fs.String("out", "trajectories.jsonl", "trajectories JSONL output")
	batchPath := fs.String("batch", "", "safetensors batch output in verl's DataProto layout; optional")
	n := fs.Int("n", 0, "rollouts per prompt (overrides actor_rollout_ref.rollout.n)")
	limit := fs.Int("limit", 0, "use only the first N dataset rows (0 = all; default data.train_max_samples / val_max_samples)")
	validate := fs.Bool("validate", false, "sample with val_kwargs")
	progress := fs.String("progress", "auto", "progress bar: auto (on a terminal), always, never")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics (agent loop, router or engine, capture with --harness) at http://ADDR/metrics while the rollout runs; empty: none")
	var metricsHosts listFlag
	fs.Var(&metricsHosts, "metrics-allow-host", "host name scrapers may address --metrics-addr by besides IPs and localhost (repeatable; DNS-rebinding defence)")
	logFormat := fs.String("log-format", "text", "format of log records on stderr: text or json")
	logInterval := fs.Duration("log-interval", 10*time.Second, "without a progress bar: log rollout progress (done/total, rate, stop reasons) this often")
	var hf harnessFlags
	hf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentrl rollout --data FILE --tokenizer DIR (--servers URL[,URL...] | --model DIR) [--config FILE] [--out FILE] [--batch FILE] [--harness CMD] [key.path=value ...]")
		fmt.Fprintln(stderr, "\nWith --harness, each rollout runs CMD (sh -c; {prompt} is the sample's prompt, shell-quoted) in a working directory of its own,")
		fmt.Fprintln(stderr, "with OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY and AGENTRL_PROMPT set to a capture rollout on loopback;")
		fmt.Fprintln(stderr, "its model calls are recorded token-exact and rebuilt into the trajectories written.")
		fmt.Fprintln(stderr, "\nkey.path=value arguments override the config as verl's (hydra's) command-line overrides do, e.g. data.train_files=train.parquet actor_rollout_ref.rollout.n=8")
		fs.PrintDefaults()
	}
	// Flags and key.path=value overrides may come in any order.
	var overrides []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		overrides = append(overrides, fs.Arg(0))
		args = fs.Args()[1:]
	}
	// Everything below up to the engine's first request is validation:
	// a mistake in the config or the dataset is reported before any
	// generation time is spent.
	cfg, err := loadRolloutConfig(*cfgPath, overrides, stderr, *strictConfig)
	if err != nil {
		return err
	}
	if *servers != "" {
		cfg.AgentRL.Servers = strings.Split(*servers, ",")
	}
	if *backend != "" {
		cfg.AgentRL.Backend = *backend
	}
	if cfg.AgentRL.Backend == "" {
		switch name := cfg.ActorRolloutRef.Rollout.Name; name {
		case "sglang", "vllm":
			cfg.AgentRL.Backend = name
		}
	}
	if *localModel != "" {
		cfg.AgentRL.LocalModel = *localModel
	}
	if *device != "" {
		cfg.AgentRL.Device = *device
	}
	if *n > 0 {
		cfg.ActorRolloutRef.Rollout.N = *n
	}
	var dataPaths []string
	switch {
	case *dataPath != "":
		dataPaths = strings.Split(*dataPath, ",")
	case *validate:
		dataPaths = cfg.Data.ValFiles
	default:
		dataPaths = cfg.Data.TrainFiles
	}
	if *tokDir == "" {
		*tokDir = cfg.ActorRolloutRef.Model.Path
	}
	if len(dataPaths) == 0 || *tokDir == "" || (len(cfg.AgentRL.Servers) == 0) == (cfg.AgentRL.LocalModel == "") {
		fs.Usage()
		return errors.New("--data, --tokenizer and either servers or --model (not both) are required")
	}
	switch *progress {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("--progress must be auto, always or never, got %q", *progress)
	}
	if *limit == 0 {
		if m := cfg.Data.TrainMaxSamples; !*validate && m > 0 {
			*limit = m
		} else if m := cfg.Data.ValMaxSamples; *validate && m > 0 {
			*limit = m
		}
	}
	logger, err := newLogger(*logFormat, stderr)
	if err != nil {
		return err
	}
	if *logInterval <= 0 {
		return fmt.Errorf("--log-interval must be positive, got %v", *logInterval)
	}
	reg, opts, err := managerSettings(cfg, *validate, logger)
	if err != nil {
		return err
	}
	env := &agentloop.Env{}
	if env.Tools, err = loadTools(ctx, cfg, stderr); err != nil {
		return err
	}
	if env.Tools != nil {
		defer env.Tools.Close(context.WithoutCancel(ctx))
	}
	if p := cfg.ActorRolloutRef.Rollout.MultiTurn.InteractionConfigPath; p != "" {
		if env.Interactions, err = agentloop.LoadInteractionsFile(p); err != nil {
			return err
		}
	}
	dsOpts := dataset.Options{PromptKey: cfg.Data.PromptKey, ImageKey: cfg.Data.ImageKey, Limit: *limit}
	rows, agents, err := checkDataset(ctx, dsOpts, dataPaths, env, opts.DefaultAgent)
	if err != nil {
		return err
	}
	tok, err := tokenizer.Load(*tokDir)
	if err != nil {
		return err
	}
	env.Tokenizer = tok
	opts.Collate.PadTokenID = verlPadTokenID(tok)
	if env.Boundary, err = continuousBoundary(*tokDir, *ctFamily, tok, logger); err != nil {
		return err
	}
	if hf.command == "" { // with --harness every row runs the harness
		if err := checkLoops(reg, env, agents); err != nil {
			return err
		}
	}

	if env.Vision, err = rolloutVision(*tokDir, tok, cfg); err != nil {
		return err
	}
	var moe moeShape
	if cfg.ActorRolloutRef.Rollout.EnableRolloutRoutingReplay {
		if moe, err = readMoEShape(*tokDir); err != nil {
			return fmt.Errorf("actor_rollout_ref.rollout.enable_rollout_routing_replay: %w", err)
		}
	}
	engine, closeEngine, err := buildEngine(cfg, moe, logger)
	if err != nil {
		return err
	}
	defer closeEngine()
	env.Server = engine
	var hr *harnessRun
	if hf.command != "" {
		if hr, err = hf.start(ctx, cfg, engine, tok, env.Vision, reg, &opts, logger); err != nil {
			return err
		}
		defer hr.close()
	}
	if *metricsAddr != "" {
		loopMetrics := agentprom.New(agentprom.Options{})
		env.Trace = loopMetrics.Trace
		cs := append(engineCollectors(engine), loopMetrics)
		if hr != nil {
			cs = append(cs, captureprom.New(hr.c, captureprom.Options{}))
		}
		ms, err := startMetrics(*metricsAddr, logger, httpapi.Config{AllowedHosts: metricsHosts}, cs...)
		if err != nil {
			return err
		}
		defer ms.stop()
	}
	m, err := agentloop.NewManager(reg, env, opts)
	if err != nil {
		return err
	}
	if *validate {
		m = m.ForValidation()
	}

	out, err := os.Create(*outPath)
	if err != nil {
		return err
	}
	defer out.Close()
	jw := trajectory.NewJSONLWriter(out)

	total := rows * max(opts.N, 1)
	if *validate {
		total = rows * max(opts.Validation.N, 1)
	}
	bar := newProgress(*progress, stderr, total)
	var plog *progressLog
	if bar == nil {
		plog = newProgressLog(logger, total, *logInterval)
	}
	logger.Info("rollout started", "trajectories", total, "rows", rows, "out", *outPath)
	in := make(chan agentloop.Sample)
	feedErr := make(chan error, 1)
	go func() {
		defer close(in)
		feedErr <- dataset.Each(ctx, dsOpts, func(s agentloop.Sample) error {
			if hr != nil {
				s.AgentName = harnessAgent // every row runs the harness
			}
			select {
			case in <- s:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, dataPaths...)
	}()
	acc := agentloop.NewAccumulator()
	var writeErr error
	for r := range m.Stream(ctx, in) {
		acc.Add(r)
		for _, t := range r.All() { // a multi-output rollout writes each of its trajectories
			if t != nil && writeErr == nil {
				writeErr = jw.Write(t)
			}
			if t != nil && *batchPath != "" && !r.Filtered {
				setRawPrompt(t, r.Sample) // verl's non_tensor_batch["raw_prompt"]
			}
		}
		if bar != nil {
			_ = bar.Add(len(r.Trajectories))
		}
		plog.add(r.Trajectories)
	}
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(stderr)
	}
	if err := <-feedErr; err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the dataset: %w", err)
	}
	if writeErr != nil {
		return fmt.Errorf("writing %s: %w", *outPath, writeErr)
	}
	if err := jw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", *outPath, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	metrics := acc.Metrics()
	printSummary(stdout, metrics)
	hr.summary(stdout)
	logger.Info("rollout finished", "trajectories", metrics.Trajectories, "total", total, "groups", metrics.Groups,
		"filtered_groups", metrics.FilteredGroups, "failed", metrics.Failed, "wall_s", metrics.Wall.Seconds(),
		"trajectories_per_s", metrics.TrajectoriesPerSecond, stopCounts(metrics.StopReasons))

	var failures []error
	for _, r := range acc.Results() {
		if err := r.Err(); err != nil {
			failures = append(failures, err)
		}
	}
	if *batchPath != "" && len(acc.Trajectories()) > 0 {
		if opts.Collate.PromptLen <= 0 || opts.Collate.ResponseLen <= 0 {
			return errors.New("--batch needs actor_rollout_ref.rollout.prompt_length and response_length (or data.max_prompt_length / max_response_length)")
		}
		b, err := acc.Collate(opts.Collate)
		if err != nil {
			return fmt.Errorf("collating the batch: %w", err)
		}
		if err := writeBatch(*batchPath, b); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %d of %d trajectories finished before it, the rest are partial (stop reason aborted): %w",
			metrics.Trajectories-metrics.StopReasons[trajectory.StopAborted], total, ctx.Err())
	}
	if len(failures) > 0 {
		for i, err := range failures {
			if i == 5 {
				fmt.Fprintf(stderr, "... and %d more\n", len(failures)-5)
				break
			}
			fmt.Fprintln(stderr, "error:", err)
		}
		return fmt.Errorf("%d of %d groups had errors", len(failures), len(acc.Results()))
	}
	return nil
}

func writeBatch(path string, b *trajectory.Batch) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := b.WriteSafetensors(w); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// managerSettings turns the config into the registry and Manager options.
func managerSettings(cfg rolloutConfig, validate bool, logger *slog.Logger) (*agentloop.Registry, agentloop.Options, error) {
	ro := cfg.ActorRolloutRef.Rollout
	mt := ro.MultiTurn
	promptLen, respLen := ro.PromptLength, ro.ResponseLength
	if promptLen == 0 {
		promptLen = cfg.Data.MaxPromptLength
	}
	if respLen == 0 {
		respLen = cfg.Data.MaxResponseLength
	}
	if promptLen == 0 {
		promptLen = defaultPromptLength
	}
	if respLen == 0 {
		respLen = defaultResponseLength
	}
	if promptLen < 0 || respLen < 0 {
		return nil, agentloop.Options{}, fmt.Errorf("prompt_length %d and response_length %d must be positive", promptLen, respLen)
	}
	// data.apply_chat_template_kwargs (verl's, e.g. enable_thinking) and
	// multi_turn.chat_template_kwargs (agentrl's) both reach the template;
	// the latter wins on a shared key.
	tmplKwargs := map[string]any{}
	for k, v := range cfg.Data.ApplyChatTemplateKwargs {
		tmplKwargs[k] = v
	}
	for k, v := range mt.ChatTemplateKwargs {
		tmplKwargs[k] = v
	}
	if len(tmplKwargs) == 0 {
		tmplKwargs = nil
	}
	loopCfg := agentloop.Config{
		MaxAssistantTurns:              mt.MaxAssistantTurns,
		MaxUserTurns:                   mt.MaxUserTurns,
		MaxParallelCalls:               mt.MaxParallelCalls,
		MaxToolResponseLength:          mt.MaxToolResponseLength,
		ToolResponseTruncateSide:       mt.ToolResponseTruncateSide,
		MaxConsecutiveInvalidToolCalls: mt.MaxConsecutiveInvalidToolCalls,
		Format:                         mt.Format,
		ThinkAware:                     mt.ThinkAware,
		PromptLength:                   promptLen,
		ResponseLength:                 respLen,
		ChatTemplateKwargs:             tmplKwargs,
	}
	reg := agentloop.NewRegistry()
	for _, name := range []string{agentloop.SingleTurnAgent, agentloop.ToolAgentName} {
		if err := reg.SetConfig(name, loopCfg); err != nil {
			return nil, agentloop.Options{}, fmt.Errorf("multi_turn: %w", err)
		}
	}
	if p := ro.Agent.AgentLoopConfigPath; p != "" {
		f, err := os.Open(p)
		if err != nil {
			return nil, agentloop.Options{}, err
		}
		reps, err := reg.LoadConfigs(f)
		f.Close()
		if err != nil {
			return nil, agentloop.Options{}, fmt.Errorf("%s: %w", p, err)
		}
		// verl's config file overwrites registry names; say so, as a
		// redeclared tool_agent changes what every tool row runs.
		for _, rep := range reps {
			logger.Info("agent loop replaced", "name", rep.Name, "old", rep.Old, "new", rep.New, "file", p)
		}
	}
	def := ro.Agent.DefaultAgentLoop
	if def == "" && mt.Enable {
		def = agentloop.ToolAgentName
	}
	sp := server.SamplingParams{Temperature: 1, TopP: 1, MinP: ro.MinP, RepetitionPenalty: ro.RepetitionPenalty, Logprobs: true}
	if ro.Temperature != nil {
		sp.Temperature = *ro.Temperature
	}
	if ro.TopP != nil {
		sp.TopP = *ro.TopP
	}
	if ro.TopK != nil {
		sp.TopK = *ro.TopK
	}
	if ro.CalculateLogProbs != nil {
		sp.Logprobs = *ro.CalculateLogProbs
	}
	sp.RoutedExperts = ro.EnableRolloutRoutingReplay
	if ro.DoSample != nil && !*ro.DoSample {
		sp.Temperature = 0 // verl: do_sample False is greedy
	}
	// verl's val_kwargs default to greedy decoding.
	vk := ro.ValKwargs
	val := sp
	val.Temperature, val.TopP, val.TopK = 0, 1, -1
	if vk.Temperature != nil {
		val.Temperature = *vk.Temperature
	}
	if vk.TopP != nil {
		val.TopP = *vk.TopP
	}
	if vk.TopK != nil {
		val.TopK = *vk.TopK
	}
	if vk.DoSample != nil && !*vk.DoSample {
		val.Temperature = 0
	}
	if err := checkSampling("actor_rollout_ref.rollout", sp, ro.N); err != nil {
		return nil, agentloop.Options{}, err
	}
	if err := checkSampling("actor_rollout_ref.rollout.val_kwargs", val, vk.N); err != nil {
		return nil, agentloop.Options{}, err
	}
	if def != "" {
		if _, err := reg.Config(def); err != nil {
			return nil, agentloop.Options{}, fmt.Errorf("agent.default_agent_loop: %w", err)
		}
	}
	if cfg.AgentRL.Concurrency < 0 || cfg.AgentRL.Timeout < 0 {
		return nil, agentloop.Options{}, fmt.Errorf("agentrl.concurrency %d and agentrl.timeout %v must not be negative", cfg.AgentRL.Concurrency, cfg.AgentRL.Timeout)
	}
	opts := agentloop.Options{
		DefaultAgent: def,
		Concurrency:  cfg.AgentRL.Concurrency,
		N:            max(ro.N, 1),
		Sampling:     sp,
		NoLogprobs:   !sp.Logprobs, // calculate_log_probs: false
		Validation:   agentloop.ValidationOptions{Sampling: val, N: max(vk.N, 1)},
		Timeout:      cfg.AgentRL.Timeout,
		Collate:      trajectory.CollateOptions{PromptLen: promptLen, ResponseLen: respLen},
	}
	switch cfg.AgentRL.Reward {
	case "":
		opts.RewardFromLoop = true // interactions score, or nothing does
	case "gsm8k":
		opts.Reward = agentloop.GSM8KReward(true)
	case "gsm8k_flexible":
		opts.Reward = agentloop.GSM8KReward(false)
	default:
		return nil, agentloop.Options{}, fmt.Errorf("agentrl.reward: unknown reward %q (known: gsm8k, gsm8k_flexible)", cfg.AgentRL.Reward)
	}
	return reg, opts, nil
}

// buildEngine opens the in-process engine on a local model, or makes one
// client per server URL behind a router, which logs its ejections and
// retries to logger.
// moeShape is a mixture-of-experts model's routing shape: the layers and
// the experts per token SGLang's flat routed_experts array holds.
type moeShape struct{ layers, topk int }

// readMoEShape reads it from dir/config.json: num_hidden_layers and
// num_experts_per_tok, at the top or in text_config (vision-language MoE
// models nest them there).
func readMoEShape(dir string) (moeShape, error) {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return moeShape{}, fmt.Errorf("routing replay needs the model's config.json for its MoE shape: %w", err)
	}
	type shape struct {
		Layers int `json:"num_hidden_layers"`
		TopK   int `json:"num_experts_per_tok"`
	}
	var c struct {
		shape
		TextConfig *shape `json:"text_config"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return moeShape{}, fmt.Errorf("%s: %w", path, err)
	}
	sh := c.shape
	if (sh.Layers <= 0 || sh.TopK <= 0) && c.TextConfig != nil {
		sh = *c.TextConfig
	}
	if sh.Layers <= 0 || sh.TopK <= 0 {
		return moeShape{}, fmt.Errorf("%s: no num_hidden_layers and num_experts_per_tok (got %d and %d): routing replay is for mixture-of-experts models", path, sh.Layers, sh.TopK)
	}
	return moeShape{layers: sh.Layers, topk: sh.TopK}, nil
}

func buildEngine(cfg rolloutConfig, moe moeShape, logger *slog.Logger) (server.LLMServer, func(), error) {
	if dir := cfg.AgentRL.LocalModel; dir != "" {
		dev, err := model.ParseDevice(cfg.AgentRL.Device)
		if err != nil {
			return nil, nil, fmt.Errorf("agentrl.device: %w", err)
		}
		eng, err := cuda.Open(dir, cuda.Options{Device: dev})
		if err != nil {
			return nil, nil, err
		}
		return eng, func() { _ = eng.Close() }, nil
	}
	var backends []router.Backend
	for _, u := range cfg.AgentRL.Servers {
		u = strings.TrimSpace(u)
		var (
			srv server.LLMServer
			err error
		)
		switch cfg.AgentRL.Backend {
		case "", "sglang":
			srv, err = sglang.New(sglang.Config{BaseURL: u, RoutingLayers: moe.layers, RoutingTopK: moe.topk})
		case "vllm":
			srv, err = vllm.New(vllm.Config{BaseURL: u, Model: cfg.AgentRL.Model})
		default:
			return nil, nil, fmt.Errorf("backend must be sglang or vllm, got %q", cfg.AgentRL.Backend)
		}
		if err != nil {
			return nil, nil, err
		}
		backends = append(backends, router.Backend{Name: u, Server: srv})
	}
	r, err := router.New(router.Config{Logger: logger}, backends...)
	if err != nil {
		return nil, nil, err
	}
	return r, func() { r.Close() }, nil
}

func newProgress(mode string, w io.Writer, total int) *progressbar.ProgressBar {
	if mode == "never" {
		return nil
	}
	if mode == "auto" {
		f, ok := w.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return nil
		}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("rollout"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("traj"),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
	// Start both of the bar's clocks now (the total and the rolling rate):
	// otherwise they start at the first Add, a whole group arriving at once,
	// and the group is divided by the microseconds since (300,000 traj/s
	// shown for 1.6).
	bar.StartWithoutRender()
	_ = bar.RenderBlank()
	return bar
}

func printSummary(w io.Writer, m agentloop.Metrics) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, f string, a ...any) { fmt.Fprintf(tw, "%s\t"+f+"\n", append([]any{k}, a...)...) }
	row("trajectories", "%d (%d groups, %d filtered, %d failed)", m.Trajectories, m.Groups, m.FilteredGroups, m.Failed)
	row("wall time", "%.2fs", m.Wall.Seconds())
	row("trajectories/s", "%.2f", m.TrajectoriesPerSecond)
	row("turns", "mean %.2f  min %.0f  max %.0f", m.Turns.Mean, m.Turns.Min, m.Turns.Max)
	row("response length", "mean %.1f  min %.0f  max %.0f", m.ResponseLength.Mean, m.ResponseLength.Min, m.ResponseLength.Max)
	row("mask-ones ratio", "%.3f", m.MaskOnesRatio)
	if m.ToolCalls == 0 {
		row("tool calls", "none")
	} else {
		row("tool calls", "%d (success rate %.3f)", m.ToolCalls, m.ToolSuccessRate())
	}
	if m.Reward.Count() > 0 {
		row("reward", "mean %.4f  min %.4f  max %.4f", m.Reward.Mean, m.Reward.Min, m.Reward.Max)
	} else {
		row("reward", "not scored")
	}
	row("generate time", "mean %.3fs  max %.3fs", m.GenerateTime.Mean, m.GenerateTime.Max)
	row("tool time", "mean %.3fs  max %.3fs", m.ToolTime.Mean, m.ToolTime.Max)
	reasons := make([]string, 0, len(m.StopReasons))
	for r := range m.StopReasons {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	var parts []string
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s=%d", r, m.StopReasons[trajectory.StopReason(r)]))
	}
	row("stop reasons", "%s", strings.Join(parts, " "))
	if m.Slowest.ID != "" {
		row("slowest", "%s: %.3fs, %d turns, %d response tokens, %s", m.Slowest.ID, m.Slowest.Total.Seconds(), m.Slowest.Turns, m.Slowest.ResponseLen, m.Slowest.Stop)
	}
	tw.Flush()
}

// progressLog logs rollout progress at intervals when no progress bar is
// shown (output not a terminal, or --progress never): a log collector
// then still sees how far a long rollout is.
type progressLog struct {
	log      *slog.Logger
	total    int
	every    time.Duration
	start    time.Time
	last     time.Time
	done     int
	reasons  map[trajectory.StopReason]int
	lastDone int
}

func newProgressLog(log *slog.Logger, total int, every time.Duration) *progressLog {
	now := time.Now()
	return &progressLog{log: log, total: total, every: every, start: now, last: now, reasons: map[trajectory.StopReason]int{}}
}

// add counts a group's trajectories and logs a record when the interval
// has passed since the last one. A nil progressLog does nothing.
func (p *progressLog) add(ts []*trajectory.Trajectory) {
	if p == nil {
		return
	}
	for _, t := range ts {
		if t != nil {
			p.done++
			p.reasons[t.StopReason]++
		}
	}
	now := time.Now()
	if now.Sub(p.last) < p.every {
		return
	}
	rate := float64(p.done-p.lastDone) / now.Sub(p.last).Seconds()
	p.last, p.lastDone = now, p.done
	p.log.Info("rollout progress", "done", p.done, "total", p.total, "trajectories_per_s", rate,
		"elapsed_s", now.Sub(p.start).Seconds(), stopCounts(p.reasons))
}

// stopCounts renders stop-reason counts as one group attribute, in a
// fixed order so records compare across runs.
func stopCounts(m map[trajectory.StopReason]int) slog.Attr {
	keys := make([]string, 0, len(m))
	for r := range m {
		keys = append(keys, string(r))
	}
	sort.Strings(keys)
	attrs := make([]any, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Int(k, m[trajectory.StopReason(k)]))
	}
	return slog.Group("stop_reasons", attrs...)
}

// verlPadTokenID is the id verl pads batches with: its tokenizer.pad
// fills with tokenizer.pad_token_id, which verl's hf_tokenizer
// (verl/utils/tokenizer/tokenizer.py, set_pad_token_id) sets to the EOS id
// when the tokenizer has no pad token; 0 when it has neither.
func verlPadTokenID(tok *tokenizer.Tokenizer) int32 {
	for _, name := range []string{"pad_token", "eos_token"} {
		if s, ok := tok.SpecialToken(name); ok {
			if id, ok := tok.TokenID(s); ok {
				return id
			}
		}
	}
	return 0
}

// continuousBoundary is verl's continuous-token rule for the model in dir,
// as verl's AgentLoopWorker picks it (create_continuous_token_builder in
// verl/utils/tokenizer/continuous_token_wiring.py): "auto" looks the root
// config.json model_type up exactly; an unknown or missing one falls back
// to verl's default family (plain concatenation), which is logged, as verl
// warns. "off" checks nothing.
func continuousBoundary(dir, family string, tok *tokenizer.Tokenizer, logger *slog.Logger) (*tokenizer.Boundary, error) {
	var f tokenizer.ContinuousFamily
	switch family {
	case "off":
		return nil, nil
	case "auto":
		mt, err := tokenizer.ReadModelType(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--continuous-family auto: %w", err)
		}
		var known bool
		f, known = tokenizer.ContinuousFamilyForModelType(mt)
		if known {
			logger.Info("continuous-token family from config.json", "model_type", mt, "family", f)
		} else {
			logger.Warn("no continuous-token family for this model_type; using verl's default (plain concatenation)", "model_type", mt, "dir", dir)
		}
	default:
		var err error
		if f, err = tokenizer.ParseContinuousFamily(family); err != nil {
			return nil, fmt.Errorf("--continuous-family: %w", err)
		}
	}
	b, err := tokenizer.NewBoundary(f, tok)
	if err != nil {
		return nil, fmt.Errorf("--continuous-family %s: %w", family, err)
	}
	return b, nil
}
