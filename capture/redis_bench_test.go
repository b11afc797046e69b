package capture_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// BenchmarkRedisCall compares, in one run, the same harness calls (each
// a turn of an 8-turn tool conversation, as in BenchmarkCall) served by
// httpapi alone ("direct"), by capture on the embedded group-commit log
// (OpenLog, fsync per batch) and by capture on Redis (a redis-server of
// the benchmark's own on a unix socket, appendfsync always). The paths
// alternate in rounds (the order rotating each round), so that load on
// the machine falls on all of them alike; each metric is the median over
// the rounds of that path's p50, p99 and calls/s. -benchtime Nx runs N
// calls per path per round.
func BenchmarkRedisCall(b *testing.B) {
	tok := small(b)
	end, _ := tok.TokenID("<|im_end|>")
	rule := servertest.Constant(append(tok.Encode(lsCall), end)...)
	rs := startRedis(b)
	const rounds = 5
	paths := []string{"direct", "log", "redis"}
	for _, mode := range []string{"serial", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			type target struct {
				srv  *httptest.Server
				next func() (string, string)
			}
			targets := map[string]target{}
			for _, path := range paths {
				eng := servertest.New(servertest.Config{Rule: rule})
				if path == "direct" {
					h, err := httpapi.New(eng, httpapi.Config{Chat: chatOf(tok)})
					if err != nil {
						b.Fatal(err)
					}
					srv := httptest.NewServer(h)
					defer srv.Close()
					targets[path] = target{srv, func() (string, string) { return srv.URL + "/v1", "unused" }}
					continue
				}
				var store capture.Store
				if path == "log" {
					l, err := capture.OpenLog(filepath.Join(b.TempDir(), "capture.log"))
					if err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					store = l
				} else {
					r, err := capture.OpenRedis(context.Background(), rs.url(), capture.RedisOptions{Prefix: "bench-" + mode + ":"})
					if err != nil {
						b.Fatal(err)
					}
					defer r.Close()
					store = r
				}
				srv := httptest.NewUnstartedServer(nil)
				c, err := capture.New(context.Background(), capture.Config{Engine: eng, Chat: chatOf(tok), Store: store,
					BaseURL: "http://" + srv.Listener.Addr().String()})
				if err != nil {
					b.Fatal(err)
				}
				srv.Config.Handler = c.Handler()
				srv.Start()
				defer srv.Close()
				targets[path] = target{srv, func() (string, string) {
					ro, err := c.Create(context.Background(), capture.CreateOptions{})
					if err != nil {
						panic(err)
					}
					return ro.OpenAIBaseURL, ro.Key
				}}
			}
			workers := 1
			if mode == "parallel" {
				workers = 8
			}
			// run makes n calls on tg from workers goroutines and returns
			// their latencies and the calls per second.
			run := func(tg target, n int) ([]time.Duration, float64) {
				var left atomic.Int64
				left.Store(int64(n))
				var mu sync.Mutex
				var lat []time.Duration
				var wg sync.WaitGroup
				start := time.Now()
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						client := tg.srv.Client()
						var mine []time.Duration
						for left.Load() > 0 {
							base, key := tg.next()
							msgs := []string{sysMsg, taskMsg}
							for i := 0; i < benchTurns && left.Add(-1) >= 0; i++ {
								t0 := time.Now()
								answer := benchPost(client, base, key, msgs)
								mine = append(mine, time.Since(t0))
								msgs = append(msgs, answer, toolMsg(benchCallID(answer), "a.txt"))
							}
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					}()
				}
				wg.Wait()
				return lat, float64(len(lat)) / time.Since(start).Seconds()
			}
			stats := map[string][3][]float64{}
			b.ResetTimer()
			for round := range rounds {
				for k := range paths {
					path := paths[(k+round)%len(paths)]
					lat, rate := run(targets[path], b.N)
					slices.Sort(lat)
					s := stats[path]
					s[0] = append(s[0], float64(lat[len(lat)/2].Nanoseconds()))
					s[1] = append(s[1], float64(lat[len(lat)*99/100].Nanoseconds()))
					s[2] = append(s[2], rate)
					stats[path] = s
				}
			}
			b.StopTimer()
			median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
			for _, path := range paths {
				s := stats[path]
				b.ReportMetric(median(s[0]), path+"-p50-ns")
				b.ReportMetric(median(s[1]), path+"-p99-ns")
				b.ReportMetric(median(s[2]), path+"-calls/s")
			}
		})
	}
}
