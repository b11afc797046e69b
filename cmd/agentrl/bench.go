package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
)

func init() {
	register("bench", "measure the in-process engine (bench engine --model DIR)", runBench)
}

var benchSubcommands = []subcommand{
	{"engine", "measure the in-process engine against the machine's bounds", runBenchEngine},
	{"bandwidth", "measure the memory read bandwidth bench engine's decode bound uses", runBenchBandwidth},
}

// runBenchBandwidth prints the read bandwidth bench engine measures for its
// batch-1 decode bound, alone, so that another runtime's decode can be set
// against the same probe measured right before it (the peer harness does):
// on a shared machine the bandwidth on offer moves from minute to minute.
func runBenchBandwidth(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench bandwidth", stderr, "usage: agentrl bench bandwidth [--bytes N] [--reps N] [--threads N]",
		"Measures the memory read bandwidth of all threads (the best of several read patterns, median",
		"over reps), as bench engine does for its batch-1 decode bound.")
	bytes := fs.Int("bytes", 1<<30, "buffer size to stream")
	reps := fs.Int("reps", 3, "repetitions (the median is reported)")
	threads := fs.Int("threads", 0, "threads (default: all cores)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *bytes < 1<<20 || *reps < 1 || *threads < 0 {
		return errors.New("--bytes must be at least 1 MiB, --reps positive and --threads not negative")
	}
	cpu := kernels.NewCPU(*threads)
	bw := cpu.MeasureBandwidth(*bytes, *reps)
	// The line bench engine prints, so that one parser reads both.
	_, err := fmt.Fprintf(stdout, "memory bandwidth (read, all threads)\t%.1f GB/s\t%d threads, %d MB, median of %d\n",
		bw/1e9, cpu.Threads(), *bytes>>20, *reps)
	return err
}

func runBench(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runSubcommands(ctx, "bench", benchSubcommands, args, stdin, stdout, stderr)
}

func runBenchEngine(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench engine", stderr, "usage: agentrl bench engine --model DIR [flags]",
		"Measures memory bandwidth, FMA and GEMM peaks, batch-1 and aggregate decode, prefill and",
		"multi-turn prefix caching on the model in DIR, and prints each next to its bound.")
	mf := addModelFlags(fs)
	reps := fs.Int("reps", 5, "repetitions per measurement (the median is reported)")
	decodeN := fs.Int("decode-tokens", 64, "tokens generated per decode measurement")
	prefillN := fs.Int("prefill-tokens", 512, "prompt length for the prefill measurement")
	conc := fs.Int("concurrency", 32, "sequences in the aggregate decode measurement")
	shared := fs.Bool("shared-context", false, "the aggregate decode's sequences are samples of one prompt of --context tokens (a GRPO group: computed once, then read from the prefix cache by all), at temperature 1")
	ctxN := fs.Int("context", 16, "prompt tokens before each decode measurement's tokens (decode over a long context reads the KV cache as well as the weights; size --kv-memory to hold concurrency × context)")
	bwBytes := fs.Int("bandwidth-bytes", 1<<30, "buffer size for the memory bandwidth measurement")
	device := fs.String("device", "cpu", "where the engine runs: cpu, or cuda (needs a binary built with -tags cuda; the CPU bounds are then not measured)")
	opts, err := mf.parse(fs, args)
	if err != nil {
		return err
	}
	if *reps < 1 || *decodeN < 2 || *prefillN < 2 || *conc < 1 || *ctxN < 1 {
		return errors.New("--reps, --decode-tokens, --prefill-tokens, --concurrency and --context must be positive (tokens ≥ 2)")
	}
	dev, err := model.ParseDevice(*device)
	if err != nil {
		return fmt.Errorf("--device: %w", err)
	}
	opts.Device, opts.MaxSeqs, opts.MaxBatchTokens = dev, max(64, *conc), max(512, *prefillN)
	loadStart := time.Now()
	e, err := openBenchEngine(ctx, *mf.dir, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	loadTime := time.Since(loadStart)
	b := &engineBench{e: e, reps: *reps, context: *ctxN, r: rand.New(rand.NewPCG(1, 2))}
	cfg := e.Model().Config()
	cpu := e.Model().CPU()
	// Peak RSS before any measurement allocates buffers of its own: the
	// weights, the (populated) KV cache and whatever loading left behind.
	loadRSS := maxRSS()
	st := e.Stats()
	kvBytes := float64(int64(st.KVBlocks) * cfg.BytesPerBlock(opts.KVCache, benchBlockSize))
	wtype := e.Model().Weights()
	elem := 4.0
	switch wtype {
	case model.WeightsBF16:
		elem = 2
	case model.WeightsInt8:
		elem = 34.0 / 32 // an int8 per weight and an fp16 scale per 32
	case model.WeightsBF16Z:
		elem = 1.5 // 12 bits a weight (and escapes: a few in 10,000 weights)
	}
	// Memory the weights take: a tied head is the embedding table itself
	// in every weight type (an fp32 model keeps the table packed once for
	// the head and gathers embedding rows from its panels).
	storedBytes := elem * float64(cfg.NumParams())
	// Bytes a decode step must read: every weight except the embedding
	// table (one row is gathered), plus the output projection.
	weightBytes := elem * float64(cfg.NumParams()-int64(cfg.VocabSize*cfg.HiddenSize))
	if cfg.TieWordEmbeddings {
		weightBytes += elem * float64(cfg.VocabSize*cfg.HiddenSize)
	}
	// On the CPU, the bytes as the model holds them: an fp32 model's
	// matrices of bf16 values take 2 bytes a weight, bf16z's escapes and
	// panel padding count.
	if s, d, ok := e.Model().WeightBytes(); ok {
		storedBytes, weightBytes = float64(s), float64(d)
	}

	// The CPU's bounds say nothing about a GPU run.
	var bw, peak, fma float64
	if dev == model.CPU {
		bw = cpu.MeasureBandwidth(*bwBytes, *reps)
		switch wtype {
		case model.WeightsBF16, model.WeightsBF16Z:
			peak = cpu.MeasureGEMMBF16(*prefillN, 2*cfg.IntermediateSize, cfg.HiddenSize, *reps)
		case model.WeightsInt8:
			peak = cpu.MeasureGEMMQ8(*prefillN, 2*cfg.IntermediateSize, cfg.HiddenSize, *reps)
		default:
			peak = cpu.MeasureGEMM(*prefillN, 2*cfg.IntermediateSize, cfg.HiddenSize, *reps)
		}
		fma = cpu.MeasureFMAPeak(*reps)
	}
	bound := bw / weightBytes

	// Batch-1 decode is memory bound: on a shared machine the bandwidth
	// available moves from minute to minute, so each repetition measures
	// its own bound right before it, and the efficiency reported is the
	// median of the per-repetition ratios.
	var ratios []float64
	b.before = nil
	if dev == model.CPU {
		b.before = func() { b.lastBW = cpu.MeasureBandwidth(*bwBytes, 1) }
	}
	b.after = func(rate float64) {
		if b.lastBW > 0 {
			ratios = append(ratios, rate/(b.lastBW/weightBytes))
		}
	}
	dec1, dec1Pre, err := b.decodeRate(ctx, 1, *decodeN)
	b.before, b.after = nil, nil
	if err != nil {
		return err
	}
	pre, err := b.prefill(ctx, *prefillN)
	if err != nil {
		return err
	}
	// The prefill measurement generates one token: logits for the last
	// prompt position only.
	prefillFLOP := prefillFLOPs(cfg, *prefillN, 1)
	b.shared = *shared // the aggregate decode only: batch-1 above took fresh prompts
	decN, decNPre, err := b.decodeRate(ctx, *conc, *decodeN)
	aggWhat := fmt.Sprintf(" after %d tokens", b.context)
	if b.shared {
		aggWhat = fmt.Sprintf(", samples of one %d-token prompt", b.context)
	}
	if err != nil {
		return err
	}
	hit, computed, err := b.multiTurn(ctx, 8, 4)
	if err != nil {
		return err
	}

	// A rate that had to include the prefill says so (streamedRate).
	dec1Note, decNNote := prefillNote(dec1Pre), prefillNote(decNPre)

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	if dev == model.CUDA {
		fmt.Fprintf(stdout, "model %s: %s, %.1fM parameters (%.0f MB read per token, fp32), on the CUDA device, loaded in %.2f s\n\n",
			*mf.dir, cfg.ModelType, float64(cfg.NumParams())/1e6, weightBytes/1e6, loadTime.Seconds())
		fmt.Fprintln(tw, "measurement\tvalue\treference\tratio")
		fmt.Fprintf(tw, "batch-1 decode\t%.1f tok/s%s\t\t\n", dec1, dec1Note)
		fmt.Fprintf(tw, "prefill %d tokens\t%.1f tok/s = %.1f GFLOP/s\t\t\n", *prefillN, pre, pre/float64(*prefillN)*prefillFLOP/1e9)
		fmt.Fprintf(tw, "aggregate decode, %d sequences%s\t%.1f tok/s%s\tbatch-1 %.1f tok/s\t%.2f×\n", *conc, aggWhat, decN, decNNote, dec1, decN/dec1)
		fmt.Fprintf(tw, "multi-turn prefix cache (group of 8 × 4 turns)\t%.1f%% computed\tprompt tokens\t%.1f%% cached\n", 100*computed, 100*hit)
		return tw.Flush()
	}
	stored := string(wtype) + " weights"
	if e.Model().Mapped() {
		stored += " mapped from the checkpoint"
	}
	fmt.Fprintf(stdout, "model %s: %s, %.1fM parameters (%.0f MB read per token, %s), kernels %v × %d threads\n\n",
		*mf.dir, cfg.ModelType, float64(cfg.NumParams())/1e6, weightBytes/1e6, stored, cpu.Level(), cpu.Threads())
	fmt.Fprintln(tw, "measurement\tvalue\treference\tratio")
	fmt.Fprintf(tw, "model load (open to ready)\t%.2f s\t\t\n", loadTime.Seconds())
	fmt.Fprintf(tw, "peak RSS after load\t%.0f MB\tweights %.0f MB + KV cache %.0f MB\t%.2f\n",
		loadRSS/1e6, storedBytes/1e6, kvBytes/1e6, loadRSS/(storedBytes+kvBytes))
	fmt.Fprintf(tw, "memory bandwidth (read, all threads)\t%.1f GB/s\t\t\n", bw/1e9)
	fmt.Fprintf(tw, "FMA peak (registers only, all threads)\t%.1f GFLOP/s\t\t\n", fma/1e9)
	fmt.Fprintf(tw, "GEMM kernel (%d×%d×%d)\t%.1f GFLOP/s\tFMA peak\t%.2f\n", *prefillN, 2*cfg.IntermediateSize, cfg.HiddenSize, peak/1e9, peak/fma)
	fmt.Fprintf(tw, "batch-1 decode\t%.1f tok/s%s\tbandwidth bound %.1f tok/s\t%.2f (%.2f measured rep by rep)\n", dec1, dec1Note, bound, dec1/bound, medianOf(ratios))
	preFLOPS := pre / float64(*prefillN) * prefillFLOP // prompts/s × FLOP per prompt
	fmt.Fprintf(tw, "prefill %d tokens\t%.1f tok/s = %.1f GFLOP/s\tGEMM kernel %.1f GFLOP/s\t%.2f (%.2f of FMA peak)\n",
		*prefillN, pre, preFLOPS/1e9, peak/1e9, preFLOPS/peak, preFLOPS/fma)
	fmt.Fprintf(tw, "aggregate decode, %d sequences%s\t%.1f tok/s%s\tbatch-1 %.1f tok/s\t%.2f×\n", *conc, aggWhat, decN, decNNote, dec1, decN/dec1)
	fmt.Fprintf(tw, "multi-turn prefix cache (group of 8 × 4 turns)\t%.1f%% computed\tprompt tokens\t%.1f%% cached\n", 100*computed, 100*hit)
	return tw.Flush()
}

// prefillNote marks a decode rate that includes the prefill.
func prefillNote(withPrefill bool) string {
	if withPrefill {
		return " (prefill included)"
	}
	return ""
}

// modelFlags are the flags that say which model a benchmark loads and how.
type modelFlags struct {
	dir, weights *string
	threads      *int
	kvMem        *int64
	kvType       *string
	copyW        *bool
}

func addModelFlags(fs *flag.FlagSet) modelFlags {
	return modelFlags{
		dir:     fs.String("model", "", "model directory (required)"),
		threads: fs.Int("threads", 0, "kernel threads (default: all cores)"),
		weights: fs.String("weights", "auto", "how the CPU model stores its matrices: bf16, bf16z (bf16 values compressed losslessly to ~12 bits: bf16's results, fewer bytes per token), fp32, int8 (llama.cpp's Q8_0 values, quantized at load), or auto (the checkpoint's: bf16 for a bf16 checkpoint)"),
		kvMem:   fs.Int64("kv-memory", 0, "KV cache bytes (default: the engine's default, 1 GiB)"),
		kvType:  fs.String("kv-cache", "fp32", "how the KV cache stores keys and values: fp32 or bf16 (half the bytes)"),
		copyW:   fs.Bool("copy", false, "copy every matrix into the engine's memory instead of computing from a read-only mapping of the checkpoint where its layout allows (bf16, or packed by agentrl model pack: the default, as llama.cpp maps its GGUF)"),
	}
}

// parse parses args (flags only) into fs, which holds f, and returns the
// engine options f sets.
func (f modelFlags) parse(fs *flag.FlagSet, args []string) (cuda.Options, error) {
	if err := fs.Parse(args); err != nil {
		return cuda.Options{}, err
	}
	if fs.NArg() > 0 {
		return cuda.Options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *f.dir == "" {
		return cuda.Options{}, errors.New("--model is required")
	}
	wt, err := model.ParseWeightType(*f.weights)
	if err != nil {
		return cuda.Options{}, fmt.Errorf("--weights: %w", err)
	}
	kvt, err := model.ParseKVType(*f.kvType)
	if err != nil {
		return cuda.Options{}, fmt.Errorf("--kv-cache: %w", err)
	}
	return cuda.Options{Threads: *f.threads, Weights: wt, CopyWeights: *f.copyW, KVMemory: *f.kvMem, KVCache: kvt,
		BlockSize: benchBlockSize}, nil
}

// openBenchEngine opens the engine a benchmark measures and waits until it
// is in its steady state: the engine maps its KV cache's memory while idle
// after start (until then first uses of cache blocks pay page faults inside
// steps), and that would also disturb the bounds measured beside it.
func openBenchEngine(ctx context.Context, dir string, opts cuda.Options) (*cuda.Engine, error) {
	e, err := cuda.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	for !e.Stats().KVPopulated {
		select {
		case <-ctx.Done():
			e.Close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return e, nil
}

// prefillFLOPs is the floating-point work of a prefill of n prompt tokens
// that computes logits for logitRows of them (1 when the request generates:
// the engine runs the final norm and the output projection only for the
// positions whose logits are asked for). It counts multiply-adds as 2 FLOPs:
// every layer's projections and MLP for each token, the causal attention
// scores and weighted sums (token p attends to p+1 positions), and the
// vocab×hidden output projection per logits row. The embedding lookup is a
// gather and norms, activations and the softmax are O(hidden) per token;
// they are left out. Counting the output projection for every prompt token
// (as an earlier version did) overstates an untied model's prefill work by
// up to vocab/(layer params) and reported rates above the FMA peak.
func prefillFLOPs(cfg *model.Config, n, logitRows int) float64 {
	h := float64(cfg.HiddenSize)
	qd := float64(cfg.NumAttentionHeads * cfg.HeadDim)
	kvd := float64(cfg.NumKeyValueHeads * cfg.HeadDim)
	layerWeights := h*qd + 2*h*kvd + qd*h + 3*h*float64(cfg.IntermediateSize)
	N := float64(n)
	perLayer := 2*layerWeights*N + // projections and MLP
		2*2*qd*N*(N+1)/2 // QKᵀ and attention-weighted V over the causal prefix
	return float64(cfg.NumHiddenLayers)*perLayer + 2*float64(cfg.VocabSize)*h*float64(logitRows)
}

type engineBench struct {
	e       *cuda.Engine
	reps    int
	context int  // prompt tokens before a decode measurement
	shared  bool // the aggregate decode's sequences sample one prompt (decodeRate)
	r       *rand.Rand
	// before and after, when set, run around each timed decode
	// repetition (after gets its rate): the per-repetition bound.
	before func()
	after  func(rate float64)
	lastBW float64
}

func (b *engineBench) prompt(n int) []int32 {
	v := b.e.Model().Config().VocabSize
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(b.r.IntN(v))
	}
	return p
}

// decodeRate returns the aggregate decode rate of conc concurrent greedy
// sequences generating n tokens each, median over reps, and whether any
// repetition's rate had to include the prefill (streamedRate). Each
// sequence is streamed and timed within its own run, so the prompts'
// prefill is left out without subtracting the times of two runs: that
// difference, time(n tokens) − time(1 token), came out negative for a
// model whose decode steps take less than the runs' noise. With b.shared
// the conc sequences are samples of one prompt (a GRPO group): the prompt
// is computed once before the timed run, every sequence then finds its
// full blocks in the prefix cache, and each samples at temperature 1 with
// a seed of its own.
func (b *engineBench) decodeRate(ctx context.Context, conc, n int) (float64, bool, error) {
	run := func(prompts [][]int32) ([]streamed, error) {
		var wg sync.WaitGroup
		seqs := make([]streamed, len(prompts))
		errs := make([]error, len(prompts))
		for i, p := range prompts {
			params := server.SamplingParams{MaxNewTokens: n}
			if b.shared {
				seed := uint64(i)
				params.Temperature, params.Seed = 1, &seed
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				seqs[i], errs[i] = stream(ctx, b.e, p, params)
			}()
		}
		wg.Wait()
		return seqs, errors.Join(errs...)
	}
	// prompts returns conc prompts: fresh random ones (no prefix-cache
	// advantage), or one shared prompt, already computed.
	prompts := func() ([][]int32, error) {
		ps := make([][]int32, conc)
		if !b.shared {
			for i := range ps {
				ps[i] = b.prompt(b.context)
			}
			return ps, nil
		}
		p := b.prompt(b.context)
		for i := range ps {
			ps[i] = p
		}
		_, err := b.e.Generate(ctx, server.GenerateRequest{PromptIDs: p, Params: server.SamplingParams{MaxNewTokens: 1}})
		return ps, err
	}
	var rates []float64
	withPrefill := false
	for r := 0; r < b.reps; r++ {
		ps, err := prompts()
		if err != nil {
			return 0, false, err
		}
		if b.before != nil {
			b.before()
		}
		seqs, err := run(ps)
		if err != nil {
			return 0, false, err
		}
		rate, pre, err := streamedRate(seqs)
		if err != nil {
			return 0, false, err
		}
		withPrefill = withPrefill || pre
		rates = append(rates, rate)
		if b.after != nil {
			b.after(rate)
		}
	}
	return medianOf(rates), withPrefill, nil
}

// streamed is one streamed sequence's timing: when its request was sent,
// and when each run of tokens reached the caller with how many it held.
type streamed struct {
	start  time.Time
	at     []time.Time
	tokens []int
}

// stream generates params.MaxNewTokens tokens from prompt on e, recording
// when each run of them arrives.
func stream(ctx context.Context, e *cuda.Engine, prompt []int32, params server.SamplingParams) (streamed, error) {
	s := streamed{start: time.Now()}
	got := 0
	_, err := e.GenerateStream(ctx, server.GenerateRequest{PromptIDs: prompt, Params: params}, func(c server.Chunk) error {
		s.at = append(s.at, time.Now())
		s.tokens = append(s.tokens, len(c.TokenIDs))
		got += len(c.TokenIDs)
		return nil
	})
	if err != nil {
		return s, err
	}
	if got != params.MaxNewTokens {
		return s, fmt.Errorf("decode: generated %d tokens, want %d", got, params.MaxNewTokens)
	}
	return s, nil
}

// streamedRate is the decode rate of sequences streamed side by side: the
// tokens that reached their callers while every sequence was past its
// first run of tokens (its prompt's prefill done) and none had received
// its last, over that window. For one sequence that is the tokens after
// the first run over the time from it to the last. When there is no such
// window (the steps outpaced a reader so much that all its tokens came in
// one run, or a sequence finished before another had started decoding),
// it is all the tokens over the time from the first request to the last
// token, the prefill included, and withPrefill is true.
func streamedRate(seqs []streamed) (rate float64, withPrefill bool, err error) {
	if len(seqs) == 0 {
		return 0, false, errors.New("decode: no sequences")
	}
	var from, to, first, last time.Time // the window; the whole run
	total := 0
	for i, s := range seqs {
		if len(s.at) == 0 {
			return 0, false, fmt.Errorf("decode: sequence %d received no tokens", i)
		}
		t0, t1 := s.at[0], s.at[len(s.at)-1]
		if i == 0 || t0.After(from) {
			from = t0
		}
		if i == 0 || t1.Before(to) {
			to = t1
		}
		if i == 0 || s.start.Before(first) {
			first = s.start
		}
		if i == 0 || t1.After(last) {
			last = t1
		}
		for _, k := range s.tokens {
			total += k
		}
	}
	in := 0
	for _, s := range seqs {
		for j, t := range s.at {
			if t.After(from) && !t.After(to) {
				in += s.tokens[j]
			}
		}
	}
	if in > 0 {
		return float64(in) / to.Sub(from).Seconds(), false, nil
	}
	if d := last.Sub(first); d > 0 {
		return float64(total) / d.Seconds(), true, nil
	}
	return 0, false, errors.New("decode: the clock did not advance over the run")
}

// prefill returns prompt tokens per second for one n-token prompt.
func (b *engineBench) prefill(ctx context.Context, n int) (float64, error) {
	var rates []float64
	for r := 0; r < b.reps; r++ {
		p := b.prompt(n)
		start := time.Now()
		if _, err := b.e.Generate(ctx, server.GenerateRequest{PromptIDs: p, Params: server.SamplingParams{MaxNewTokens: 1}}); err != nil {
			return 0, err
		}
		rates = append(rates, float64(n)/time.Since(start).Seconds())
	}
	return medianOf(rates), nil
}

// multiTurn runs a GRPO-style group of conv conversations that start from
// one shared 512-token prompt (system prompt, tools, task) and run turns
// turns each: a turn generates 32 sampled tokens, and the next turn's
// prompt is the previous prompt and output plus 24 new tokens (a tool
// result). It returns the fraction of prompt tokens served from the prefix
// cache and the fraction computed by prefill.
func (b *engineBench) multiTurn(ctx context.Context, conv, turns int) (hit, computed float64, err error) {
	before := b.e.Stats()
	var wg sync.WaitGroup
	errs := make([]error, conv)
	shared := b.prompt(min(512, b.e.MaxContext()/2))
	for i := 0; i < conv; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq := shared
			r := rand.New(rand.NewPCG(uint64(i), 9))
			for t := 0; t < turns; t++ {
				out, err := b.e.Generate(ctx, server.GenerateRequest{RequestID: fmt.Sprint("conv", i), PromptIDs: seq,
					Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 32}})
				if err != nil {
					errs[i] = err
					return
				}
				seq = append(append(slices.Clone(seq), out.TokenIDs...), randTokens(r, 24, b.e.Model().Config().VocabSize)...)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	after := b.e.Stats()
	prompt := float64(after.PromptTokens - before.PromptTokens)
	return float64(after.CachedTokens-before.CachedTokens) / prompt, float64(after.PrefillTokens-before.PrefillTokens) / prompt, nil
}

func randTokens(r *rand.Rand, n, vocab int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(r.IntN(vocab))
	}
	return p
}

// benchBlockSize is the KV block size the benchmark's engine uses (the
// engine's default).
const benchBlockSize = 16

// maxRSS is the process's peak resident set size in bytes (getrusage).
func maxRSS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) * 1024 // kilobytes on Linux
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
