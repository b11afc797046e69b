package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
)

func init() {
	benchSubcommands = append(benchSubcommands, subcommand{"stream",
		"time to the first streamed token: the engine's own against agentrl serve's endpoints over loopback", runBenchStream})
}

// streamEndpoints are the streamed endpoints the stream benchmark times:
// each takes a token-id prompt, so no tokenizer is needed.
var streamEndpoints = []struct {
	name, path string
	body       func(prompt string, maxNew int) string
}{
	{"vLLM /inference/v1/generate", "/inference/v1/generate", func(p string, n int) string {
		return fmt.Sprintf(`{"token_ids":%s,"sampling_params":{"max_tokens":%d},"stream":true}`, p, n)
	}},
	{"SGLang /generate", "/generate", func(p string, n int) string {
		return fmt.Sprintf(`{"input_ids":%s,"sampling_params":{"max_new_tokens":%d},"stream":true}`, p, n)
	}},
	{"OpenAI /v1/completions", "/v1/completions", func(p string, n int) string {
		return fmt.Sprintf(`{"prompt":%s,"max_tokens":%d,"stream":true,"return_token_ids":true}`, p, n)
	}},
}

func runBenchStream(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench stream", stderr, "usage: agentrl bench stream --model DIR [flags]",
		"Times the first streamed token: the in-process engine's own (GenerateStream's first chunk)",
		"and, alternating with it, each streamed endpoint of the server agentrl serve runs, on",
		"loopback (request sent to first token event read). Prints medians and their ratio.")
	dir := fs.String("model", "", "model directory (required)")
	threads := fs.Int("threads", 0, "kernel threads (default: all cores)")
	reps := fs.Int("reps", 21, "repetitions of each measurement (the median is reported)")
	promptN := fs.Int("prompt-tokens", 128, "prompt length (a fresh random prompt each time: no prefix-cache hits)")
	maxNew := fs.Int("max-tokens", 8, "tokens generated per request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--model is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *reps < 1 || *promptN < 1 || *maxNew < 1 {
		return errors.New("--reps, --prompt-tokens and --max-tokens must be positive")
	}
	e, err := cuda.Open(*dir, cuda.Options{Threads: *threads, Device: model.CPU})
	if err != nil {
		return err
	}
	defer e.Close()
	for !e.Stats().KVPopulated { // the steady state, as bench engine measures
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	srv, err := httpapi.Start(e, httpapi.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer srv.Close()
	client := &http.Client{}
	vocab := e.Model().Config().VocabSize
	r := rand.New(rand.NewPCG(3, 4))
	prompt := func() []int32 {
		p := make([]int32, *promptN)
		for i := range p {
			p[i] = int32(r.IntN(vocab))
		}
		return p
	}
	engineTTFT := func() (time.Duration, error) {
		start := time.Now()
		var first time.Duration
		_, err := e.GenerateStream(ctx, server.GenerateRequest{PromptIDs: prompt(), Params: server.SamplingParams{MaxNewTokens: *maxNew}},
			func(c server.Chunk) error {
				if first == 0 && len(c.TokenIDs) > 0 {
					first = time.Since(start)
				}
				return nil
			})
		if err == nil && first == 0 {
			err = errors.New("the engine streamed no token")
		}
		return first, err
	}
	httpTTFT := func(path, body string) (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+path, strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			return 0, fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, b)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
		var first time.Duration
		for sc.Scan() {
			line := sc.Bytes()
			// The first event that carries a token id.
			if first == 0 && bytes.HasPrefix(line, []byte("data: {")) &&
				(bytes.Contains(line, []byte(`"token_ids":[`)) || bytes.Contains(line, []byte(`"output_ids":[`))) &&
				!bytes.Contains(line, []byte(`"token_ids":[]`)) && !bytes.Contains(line, []byte(`"output_ids":[]`)) {
				first = time.Since(start)
			}
		}
		if err := sc.Err(); err != nil {
			return 0, fmt.Errorf("%s: reading the stream: %w", path, err)
		}
		if first == 0 {
			return 0, fmt.Errorf("%s: no token event in the stream", path)
		}
		return first, nil
	}
	idsJSON := func(p []int32) string {
		var b strings.Builder
		b.WriteByte('[')
		for i, id := range p {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, id)
		}
		b.WriteByte(']')
		return b.String()
	}
	// Warm up both paths (first allocations, the connection).
	for range 2 {
		if _, err := engineTTFT(); err != nil {
			return err
		}
		for _, ep := range streamEndpoints {
			if _, err := httpTTFT(ep.path, ep.body(idsJSON(prompt()), *maxNew)); err != nil {
				return err
			}
		}
	}
	// Alternate: an engine measurement before each endpoint's, so load
	// that comes and goes falls on both alike.
	eng := make([][]float64, len(streamEndpoints))
	web := make([][]float64, len(streamEndpoints))
	for range *reps {
		for i, ep := range streamEndpoints {
			d, err := engineTTFT()
			if err != nil {
				return err
			}
			eng[i] = append(eng[i], d.Seconds())
			if d, err = httpTTFT(ep.path, ep.body(idsJSON(prompt()), *maxNew)); err != nil {
				return err
			}
			web[i] = append(web[i], d.Seconds())
		}
	}
	cfg := e.Model().Config()
	fmt.Fprintf(stdout, "model %s: %s, %.1fM parameters; %d-token prompts, %d tokens generated, %d repetitions; load average %s\n\n",
		*dir, cfg.ModelType, float64(cfg.NumParams())/1e6, *promptN, *maxNew, *reps, loadAverage())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "endpoint\tengine first token (median)\tHTTP first token (median)\tratio of medians\tmedian of paired ratios")
	for i, ep := range streamEndpoints {
		a, b := medianOf(eng[i]), medianOf(web[i])
		paired := make([]float64, len(eng[i]))
		for j := range paired {
			paired[j] = web[i][j] / eng[i][j]
		}
		fmt.Fprintf(tw, "%s\t%.2f ms\t%.2f ms\t%.3f×\t%.3f×\n", ep.name, a*1e3, b*1e3, b/a, medianOf(paired))
	}
	return tw.Flush()
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, where
// the system reports them.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
