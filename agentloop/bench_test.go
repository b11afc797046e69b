package agentloop

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/internal/cputime"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
)

// zeroEngine answers instantly from a script indexed by how many assistant
// turns the prompt already holds, so it needs no per-request state.
type zeroEngine struct {
	imStart int32
	base    int // <|im_start|> count of the first prompt
	replies [][]int32
	lps     [][]float32
}

func (z *zeroEngine) Generate(_ context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	n := 0
	for _, id := range req.PromptIDs {
		if id == z.imStart {
			n++
		}
	}
	k := min((n-z.base)/2, len(z.replies)-1)
	return server.TokenOutput{TokenIDs: z.replies[k], Logprobs: z.lps[k], StopReason: server.StopEOS}, nil
}

type echoArgs struct {
	Text string `json:"text"`
}

func benchEnv(b *testing.B, turns int) (*Env, Sample) {
	tok := qwen3(b)
	echo, err := tool.NewFunc("echo", "Echoes text.", func(_ context.Context, a echoArgs) (string, error) { return a.Text, nil })
	if err != nil {
		b.Fatal(err)
	}
	set, err := tool.NewSet(echo)
	if err != nil {
		b.Fatal(err)
	}
	imStart := tokenID(b, tok, "<|im_start|>")
	z := &zeroEngine{imStart: imStart, base: 3}
	for i := 0; i < turns; i++ {
		text := fmt.Sprintf("<think>\nStep %d: I need the echo tool again.\n</think>\n\n<tool_call>\n{\"name\": \"echo\", \"arguments\": {\"text\": \"result %d\"}}\n</tool_call>", i, i)
		if i == turns-1 {
			text = "All done: the results are in."
		}
		ids := turn(b, tok, text)
		lp := make([]float32, len(ids))
		for j := range lp {
			lp[j] = -0.5
		}
		z.replies, z.lps = append(z.replies, ids), append(z.lps, lp)
	}
	s := Sample{ID: "bench", Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a helpful assistant."},
		{Role: chat.RoleUser, Content: "Call the echo tool until you are done."},
	}}
	return &Env{Server: z, Tokenizer: tok, Tools: set}, s
}

// BenchmarkToolAgentTurn measures the orchestration overhead of one turn
// with a zero-latency engine: generate call, decode and parse, tool call,
// observation delta from the tokenizer (template render + encode), token
// assembly. ns/turn is the number to read.
func BenchmarkToolAgentTurn(b *testing.B) {
	const turns = 8
	env, s := benchEnv(b, turns)
	loop, err := NewToolAgent(env, Config{MaxAssistantTurns: turns + 1})
	if err != nil {
		b.Fatal(err)
	}
	runTurns(b, loop, s, turns)
}

// BenchmarkToolAgentTurnCancellable is BenchmarkToolAgentTurn with a
// context that can be cancelled, as the Manager's trajectories have when
// the caller cancels or sets a timeout: tool calls then run on a goroutine
// that can be abandoned instead of in place.
func BenchmarkToolAgentTurnCancellable(b *testing.B) {
	const turns = 8
	env, s := benchEnv(b, turns)
	loop, err := NewToolAgent(env, Config{MaxAssistantTurns: turns + 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runTurnsCtx(ctx, b, loop, s, turns)
}

// copies returns n copies of s with indexes 0..n-1 and no IDs (the
// Manager assigns them).
func copies(s Sample, n int) []Sample {
	out := make([]Sample, n)
	for j := range out {
		out[j] = s
		out[j].ID, out[j].Index = "", j
	}
	return out
}

// BenchmarkManagerTurns runs ToolAgent trajectories through the Manager,
// 64 in flight, under a cancellable context (as a trainer runs them): the
// per-turn CPU cost when the process is busy with many trajectories,
// where handing a tool call to a goroutine no longer wakes an idle core.
func BenchmarkManagerTurns(b *testing.B) {
	const turns, n = 8, 256
	env, s := benchEnv(b, turns)
	m, err := NewManager(nil, env, Options{RewardFromLoop: true, DefaultAgent: ToolAgentName, Concurrency: 64})
	if err != nil {
		b.Fatal(err)
	}
	samples := copies(s, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		out, err := m.Generate(ctx, samples)
		if err != nil || len(out.Trajectories) != n {
			b.Fatalf("generate: %v", err)
		}
		for _, t := range out.Trajectories {
			if t.StopReason != "completed" || t.NumTurns != 2*turns {
				b.Fatalf("trajectory: %s %d", t.StopReason, t.NumTurns)
			}
		}
	}
	cpu := cputime.Process() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n*turns), "ns/turn")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n*turns), "cpu-ns/turn")
}

// runTurns runs the benchmark loop of the per-turn benchmarks. Besides
// wall time per turn it reports the process CPU time per turn (GC included),
// which the other jobs on a shared machine disturb much less.
func runTurns(b *testing.B, loop AgentLoop, s Sample, turns int) {
	runTurnsCtx(context.Background(), b, loop, s, turns)
}

func runTurnsCtx(ctx context.Context, b *testing.B, loop AgentLoop, s Sample, turns int) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for i := 0; i < b.N; i++ {
		t, err := loop.Run(ctx, s, server.SamplingParams{Logprobs: true})
		if err != nil || t.StopReason != "completed" || t.NumTurns != 2*turns {
			b.Fatalf("run: %v %s %d", err, t.StopReason, t.NumTurns)
		}
	}
	cpu := cputime.Process() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/turn")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*turns), "cpu-ns/turn")
}

// fixedDelta is the real tokenizer except that EncodeDelta returns one
// precomputed delta: it isolates agentloop's own share of a turn.
type fixedDelta struct {
	Tokenizer
	delta []int32
}

func (f fixedDelta) EncodeDelta(tokenizer.ChatContext, []chat.Message) ([]int32, error) {
	return f.delta, nil
}

// BenchmarkToolAgentTurnOwn is BenchmarkToolAgentTurn with the tokenizer's
// delta precomputed: the orchestration cost agentloop itself adds.
func BenchmarkToolAgentTurnOwn(b *testing.B) {
	const turns = 8
	env, s := benchEnv(b, turns)
	delta, err := env.Tokenizer.EncodeDelta(tokenizer.ChatContext{Messages: append(append([]chat.Message{}, s.Messages...),
		chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Function: chat.FunctionCall{Name: "echo", Arguments: "{}"}}}}),
		Tools: env.Tools.Schemas(), AddGenerationPrompt: true},
		[]chat.Message{{Role: chat.RoleTool, Content: "result 0"}})
	if err != nil {
		b.Fatal(err)
	}
	env.Tokenizer = fixedDelta{Tokenizer: env.Tokenizer, delta: delta}
	loop, err := NewToolAgent(env, Config{MaxAssistantTurns: turns + 1})
	if err != nil {
		b.Fatal(err)
	}
	runTurns(b, loop, s, turns)
}

// BenchmarkEncodeDelta isolates the tokenizer's share of a turn.
func BenchmarkEncodeDelta(b *testing.B) {
	env, s := benchEnv(b, 2)
	r := NewEpisode(env, Config{}, s, server.SamplingParams{}, env.Tools.Schemas())
	r.AddMessage(chat.Message{Role: chat.RoleAssistant, Content: "",
		ToolCalls: []chat.ToolCall{{ID: "c", Type: "function", Function: chat.FunctionCall{Name: "echo", Arguments: `{"text": "x"}`}}}})
	added := []chat.Message{{Role: chat.RoleTool, Content: "result 1", ToolCallID: "c", Name: "echo"}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := env.Tokenizer.EncodeDelta(r.cc, added); err != nil {
			b.Fatal(err)
		}
	}
}

// heldEngine keeps every call until release is closed, to hold many
// trajectories in flight at once.
type heldEngine struct {
	reply   []int32
	release chan struct{}
	waiting atomic.Int64
}

func (h *heldEngine) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	h.waiting.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
		return server.TokenOutput{}, ctx.Err()
	}
	return server.TokenOutput{TokenIDs: h.reply, StopReason: server.StopEOS}, nil
}

// BenchmarkInFlightMemory holds 2000 trajectories in flight (each waiting
// on the engine after its prompt was encoded) and reports the heap and
// stack bytes per trajectory beyond its prompt tokens.
func BenchmarkInFlightMemory(b *testing.B) {
	const n = 2000
	env, s := benchEnv(b, 1)
	for i := 0; i < b.N; i++ {
		h := &heldEngine{reply: turn(b, qwen3(b), "ok"), release: make(chan struct{})}
		env2 := *env
		env2.Server = h
		m, err := NewManager(nil, &env2, Options{RewardFromLoop: true, DefaultAgent: ToolAgentName, Concurrency: n})
		if err != nil {
			b.Fatal(err)
		}
		samples := copies(s, n)
		prompt, err := env.Tokenizer.EncodeChat(tokenizerContextTools(s, env.Tools.Schemas()))
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before, during runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan *Output)
		go func() {
			out, _ := m.Generate(context.Background(), samples)
			done <- out
		}()
		for h.waiting.Load() < n {
			time.Sleep(time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&during)
		close(h.release)
		out := <-done
		if len(out.Trajectories) != n {
			b.Fatalf("%d trajectories", len(out.Trajectories))
		}
		used := float64(during.HeapAlloc+during.StackInuse) - float64(before.HeapAlloc+before.StackInuse)
		per := used / n
		b.ReportMetric(per, "B/traj")
		// The prompt is held twice: in the Builder and in the request the
		// engine is reading.
		b.ReportMetric(per-float64(2*4*len(prompt)), "B/traj-beyond-tokens")
		b.ReportMetric(float64(len(prompt)), "prompt-tokens")
	}
}

// fleet simulates an inference engine with continuous batching: one engine
// loop runs decode steps of fleetStep wall time; each step advances every
// running sequence (at most fleetSlots) by fleetTokensPerStep tokens, and
// queued requests join at step boundaries. Utilization is the mean batch
// occupancy (running sequences / slots over all steps), which timer
// overshoot on a loaded machine cannot distort: a late step delays every
// sequence alike.
type fleet struct {
	queue    chan *seqReq
	reply    []int32
	steps    atomic.Int64
	occupied atomic.Int64
	stepWall atomic.Int64 // wall time spent in steps (not idle)
	wg       sync.WaitGroup
	stop     context.CancelFunc
}

type seqReq struct {
	reply     []int32
	remaining int
	done      chan struct{}
}

func newFleet(reply []int32) *fleet {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{queue: make(chan *seqReq), reply: reply, stop: cancel}
	f.wg.Add(1)
	go f.loop(ctx)
	return f
}

func (f *fleet) close() { f.stop(); f.wg.Wait() }

func (f *fleet) loop(ctx context.Context) {
	defer f.wg.Done()
	var running []*seqReq
	for {
		if len(running) == 0 { // idle: wait for work without counting steps
			select {
			case r := <-f.queue:
				running = append(running, r)
			case <-ctx.Done():
				return
			}
		}
	admit:
		for len(running) < fleetSlots {
			select {
			case r := <-f.queue:
				running = append(running, r)
			default:
				break admit
			}
		}
		t0 := time.Now()
		time.Sleep(fleetStep)
		f.stepWall.Add(int64(time.Since(t0)))
		f.steps.Add(1)
		f.occupied.Add(int64(len(running)))
		kept := running[:0]
		for _, r := range running {
			r.remaining -= fleetTokensPerStep
			if r.remaining <= 0 {
				close(r.done)
				continue
			}
			kept = append(kept, r)
		}
		running = kept
	}
}

// utilization is the mean batch occupancy of the steps, times the share of
// wall time the engine was stepping at all (idle time has no sequence).
func (f *fleet) utilization(wall time.Duration) float64 {
	steps := f.steps.Load()
	if steps == 0 {
		return 0
	}
	occupancy := float64(f.occupied.Load()) / float64(steps*fleetSlots)
	return occupancy * float64(f.stepWall.Load()) / float64(wall)
}

func (f *fleet) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	return f.generate(ctx, f.reply)
}

func (f *fleet) generate(ctx context.Context, reply []int32) (server.TokenOutput, error) {
	r := &seqReq{reply: reply, remaining: len(reply), done: make(chan struct{})}
	select {
	case f.queue <- r:
	case <-ctx.Done():
		return server.TokenOutput{}, ctx.Err()
	}
	<-r.done // requests are never dropped once queued
	return server.TokenOutput{TokenIDs: reply, StopReason: server.StopEOS}, nil
}

// lognormalTool sleeps a lognormal time per call (long-tailed tools such as
// sandboxes and search).
type lognormalTool struct {
	median time.Duration
	sigma  float64
	mu     sync.Mutex
	rng    *rand.Rand
}

func (l *lognormalTool) delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(float64(l.median) * math.Exp(l.sigma*l.rng.NormFloat64()))
}

// The fleet workload: every trajectory makes fleetToolTurns tool calls,
// then answers. fleetInFlight trajectories run at once (the Manager's
// concurrency, and the batch size of the synchronous baseline), out of
// fleetTrajs in all.
const (
	fleetSlots         = 32
	fleetTrajs         = 1024
	fleetInFlight      = 256
	fleetToolTurns     = 3
	fleetStep          = time.Millisecond
	fleetTokensPerStep = 4
	fleetToolMedian    = 30 * time.Millisecond
	fleetToolSigma     = 1.0
)

// BenchmarkFleet compares the Manager streaming samples (each trajectory
// moves on as soon as its own tool returns, and a new sample starts as soon
// as one finishes) with a batch-synchronous multi-turn baseline (batches of
// the same size; each turn generates for the whole batch, then runs every
// tool call, waiting for the slowest of each phase) on the same simulated
// fleet and workload. It reports trajectories/s and engine utilization:
// the decode time the fleet delivered over slots × wall time.
func BenchmarkFleet(b *testing.B) {
	tok := qwen3(b)
	callText := "<tool_call>\n{\"name\": \"slow\", \"arguments\": {\"text\": \"" + strings.Repeat("data ", 40) + "\"}}\n</tool_call>"
	reply := turn(b, tok, callText)
	answer := turn(b, tok, strings.Repeat("The answer follows from the results. ", 6))
	work := time.Duration(fleetTrajs*(fleetToolTurns*len(reply)+len(answer))/fleetTokensPerStep) * fleetStep
	b.Logf("reply %d tokens, answer %d tokens; minimum wall time at full utilization %v", len(reply), len(answer), work/fleetSlots)

	b.Run("async", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			lt := &lognormalTool{median: fleetToolMedian, sigma: fleetToolSigma, rng: rand.New(rand.NewPCG(1, uint64(i)))}
			slow, _ := tool.NewFunc("slow", "A slow tool.", func(ctx context.Context, a echoArgs) (string, error) {
				select {
				case <-time.After(lt.delay()):
				case <-ctx.Done():
					return "", ctx.Err()
				}
				return "ok", nil
			})
			set, _ := tool.NewSet(slow)
			f := newFleet(reply)
			eng := &scriptedFleet{fleet: f, answer: answer, turns: fleetToolTurns, imStart: tokenID(b, tok, "<|im_start|>")}
			m, err := NewManager(nil, &Env{Server: eng, Tokenizer: tok, Tools: set},
				Options{RewardFromLoop: true, DefaultAgent: ToolAgentName, Concurrency: fleetInFlight})
			if err != nil {
				b.Fatal(err)
			}
			in := make(chan Sample)
			cpu0 := cputime.Process()
			start := time.Now()
			go func() {
				defer close(in)
				for j := 0; j < fleetTrajs; j++ {
					in <- Sample{Index: j, Messages: []chat.Message{{Role: chat.RoleUser, Content: fmt.Sprintf("Task %d", j)}}}
				}
			}()
			done := 0
			for r := range m.Stream(context.Background(), in) {
				if r.Err() != nil || r.Trajectories[0].StopReason != "completed" {
					b.Fatalf("%v %s", r.Err(), r.Trajectories[0].StopReason)
				}
				done++
			}
			wall := time.Since(start)
			if done != fleetTrajs {
				b.Fatalf("%d trajectories", done)
			}
			f.close()
			b.ReportMetric((cputime.Process() - cpu0).Seconds(), "cpu-s")
			b.ReportMetric(float64(fleetTrajs)/wall.Seconds(), "traj/s")
			b.ReportMetric(f.utilization(wall), "util")
		}
	})
	b.Run("batch-sync", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			lt := &lognormalTool{median: fleetToolMedian, sigma: fleetToolSigma, rng: rand.New(rand.NewPCG(1, uint64(i)))}
			f := newFleet(reply)
			ctx := context.Background()
			start := time.Now()
			for batch := 0; batch < fleetTrajs/fleetInFlight; batch++ {
				for t := 0; t <= fleetToolTurns; t++ {
					r := reply
					if t == fleetToolTurns {
						r = answer
					}
					var g errgroup.Group
					for j := 0; j < fleetInFlight; j++ {
						g.Go(func() error {
							_, err := f.generate(ctx, r)
							return err
						})
					}
					if err := g.Wait(); err != nil {
						b.Fatal(err)
					}
					if t == fleetToolTurns {
						break
					}
					for j := 0; j < fleetInFlight; j++ {
						d := lt.delay()
						g.Go(func() error { time.Sleep(d); return nil })
					}
					_ = g.Wait()
				}
			}
			wall := time.Since(start)
			f.close()
			b.ReportMetric(float64(fleetTrajs)/wall.Seconds(), "traj/s")
			b.ReportMetric(f.utilization(wall), "util")
		}
	})
}

// scriptedFleet answers with a tool call until the trajectory made its
// tool turns, then with the answer, timing each call on the fleet.
type scriptedFleet struct {
	*fleet
	answer  []int32
	turns   int
	imStart int32
}

func (s *scriptedFleet) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	n := 0
	for _, id := range req.PromptIDs {
		if id == s.imStart {
			n++
		}
	}
	// system (tools) + user + assistant = 3; each tool turn adds 2.
	if (n-3)/2 >= s.turns {
		return s.fleet.generate(ctx, s.answer)
	}
	return s.fleet.generate(ctx, s.reply)
}
