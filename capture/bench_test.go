package capture_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/internal/cputime"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// benchTurns is the length of each benchmark conversation: a harness's
// calls continue each other, so most captured calls are continuations.
const benchTurns = 8

// BenchmarkCall runs one harness call at a time (serial) or from many
// goroutines (parallel) through capture with each embedded store (every
// answer fsync'd before it is sent: a file per rollout, or one log with
// group commit), and the same calls against httpapi
// alone over the same engine, side by side. Each call is one turn of an
// 8-turn tool conversation (the answer echoed back with a tool result).
// Metrics: p50-ns and p99-ns per call, calls/s, and cpu-ns/call (the
// process's CPU time per call, which the machine's load hardly changes).
func BenchmarkCall(b *testing.B) {
	tok := small(b)
	end, _ := tok.TokenID("<|im_end|>")
	rule := servertest.Constant(append(tok.Encode(lsCall), end)...)
	for _, mode := range []string{"serial", "parallel"} {
		for _, path := range []string{"direct", "captured", "captured-log"} {
			b.Run(path+"/"+mode, func(b *testing.B) {
				eng := servertest.New(servertest.Config{Rule: rule})
				var next func() (string, string)
				var srv *httptest.Server
				if path == "direct" {
					h, err := httpapi.New(eng, httpapi.Config{Chat: chatOf(tok)})
					if err != nil {
						b.Fatal(err)
					}
					srv = httptest.NewServer(h)
					next = func() (string, string) { return srv.URL + "/v1", "unused" }
				} else {
					var store capture.Store
					if path == "captured" {
						d, err := capture.OpenDir(b.TempDir())
						if err != nil {
							b.Fatal(err)
						}
						defer d.Close()
						store = d
					} else {
						l, err := capture.OpenLog(filepath.Join(b.TempDir(), "capture.log"))
						if err != nil {
							b.Fatal(err)
						}
						defer l.Close()
						store = l
					}
					srv = httptest.NewUnstartedServer(nil)
					c, err := capture.New(context.Background(), capture.Config{Engine: eng, Chat: chatOf(tok), Store: store,
						BaseURL: "http://" + srv.Listener.Addr().String()})
					if err != nil {
						b.Fatal(err)
					}
					srv.Config.Handler = c.Handler()
					srv.Start()
					next = func() (string, string) {
						ro, err := c.Create(context.Background(), capture.CreateOptions{})
						if err != nil {
							panic(err)
						}
						return ro.OpenAIBaseURL, ro.Key
					}
				}
				defer srv.Close()
				var mu sync.Mutex
				var lat []time.Duration
				run := func(n func() bool) {
					client := srv.Client()
					var mine []time.Duration
					for n() {
						base, key := next()
						msgs := []string{sysMsg, taskMsg}
						for i := 0; i < benchTurns && n(); i++ {
							t0 := time.Now()
							answer := benchPost(client, base, key, msgs)
							mine = append(mine, time.Since(t0))
							msgs = append(msgs, answer, toolMsg(benchCallID(answer), "a.txt"))
						}
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				}
				start, cpu0 := time.Now(), cputime.Process()
				b.ResetTimer()
				if mode == "serial" {
					i := 0
					run(func() bool { i++; return i <= b.N })
				} else {
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) { run(pb.Next) })
				}
				elapsed, cpu := time.Since(start), cputime.Process()-cpu0
				b.StopTimer()
				slices.Sort(lat)
				if len(lat) > 0 {
					b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
					b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
					b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "calls/s")
					// The process's CPU per call (client, server, capture;
					// not the kernel's journal thread): capture's cost
					// apart from how loaded the machine is.
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(lat)), "cpu-ns/call")
				}
			})
		}
	}
}

func benchPost(c *http.Client, base, key string, msgs []string) string {
	body := `{"model":"agentrl","tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}],"messages":[` +
		strings.Join(msgs, ",") + `]}`
	req, _ := http.NewRequest("POST", base+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		panic(string(data))
	}
	var out struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return string(out.Choices[0].Message)
}

func benchCallID(msg string) string {
	var m struct {
		ToolCalls []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	_ = json.Unmarshal([]byte(msg), &m)
	if len(m.ToolCalls) == 0 {
		panic("no tool call in " + msg)
	}
	return m.ToolCalls[0].ID
}

// BenchmarkOpenRolloutMemory measures the heap an open rollout keeps
// after the 8-turn conversation of BenchmarkCall (b.N rollouts, kept
// open): its index of calls, sequences and messages.
func BenchmarkOpenRolloutMemory(b *testing.B) {
	tok := small(b)
	end, _ := tok.TokenID("<|im_end|>")
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(append(tok.Encode(lsCall), end)...)})
	store, err := capture.OpenDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	srv := httptest.NewUnstartedServer(nil)
	c, err := capture.New(context.Background(), capture.Config{Engine: eng, Chat: chatOf(tok), Store: store,
		BaseURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		b.Fatal(err)
	}
	srv.Config.Handler = c.Handler()
	srv.Start()
	defer srv.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		ro, err := c.Create(context.Background(), capture.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		msgs := []string{sysMsg, taskMsg}
		for range benchTurns {
			answer := benchPost(srv.Client(), ro.OpenAIBaseURL, ro.Key, msgs)
			msgs = append(msgs, answer, toolMsg(benchCallID(answer), "a.txt"))
		}
	}
	b.StopTimer()
	srv.Client().CloseIdleConnections()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/rollout")
	runtime.KeepAlive(c)
}

// BenchmarkAppend is the store's part of a recorded call: a synced
// Append of a call record of the size BenchmarkCall's calls have (a
// 300-token prompt, 40 sampled tokens, the request and conversation,
// about 6 KB), one at a time, to each embedded store. Metrics: p50-ns
// and p99-ns per Append.
func BenchmarkAppend(b *testing.B) {
	ids := make([]int32, 300)
	for i := range ids {
		ids[i] = int32(1000 + i*7)
	}
	lps := make([]float32, 40)
	for i := range lps {
		lps[i] = -0.125 * float32(i%9)
	}
	body := `{"model":"agentrl","messages":[` + strings.Repeat(`{"role":"user","content":"List the files in the directory, please."},`, 30) + `{"role":"user","content":"go"}]}`
	rec := capture.Record{Kind: capture.KindCall, Time: time.Now(), Call: &capture.CallRecord{ID: "c1", Dialect: "chat",
		Request: json.RawMessage(body), PromptIDs: ids, SampledIDs: ids[:40], Logprobs: lps, StopReason: "stop"}}
	for _, name := range []string{"dir", "log"} {
		b.Run(name, func(b *testing.B) {
			var store capture.Store
			if name == "dir" {
				d, err := capture.OpenDir(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				store = d
			} else {
				l, err := capture.OpenLog(filepath.Join(b.TempDir(), "capture.log"))
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				store = l
			}
			ctx := context.Background()
			info := capture.Record{Kind: capture.KindRollout, Rollout: &capture.RolloutInfo{ID: "ro_bench", KeySHA256: strings.Repeat("ab", 32)}}
			if err := store.Append(ctx, "ro_bench", true, info); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := store.Append(ctx, "ro_bench", true, rec); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
