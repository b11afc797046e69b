package capture_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// quietRedis drops go-redis's log lines (dial failures while a test has
// stopped Redis on purpose); the errors reach the tests anyway.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietRedis{}) }

// redisSkipOrFail skips, or under CI=1 fails: a CI machine must run the
// Redis tests (.ci/deps.sh installs redis-server).
func redisSkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI=1: "+format, args...)
	}
	t.Skipf(format, args...)
}

// redisServer is a redis-server of the test's own, on a unix socket in
// its temporary directory, fsyncing every write (appendfsync always), so
// that a restart keeps everything it acknowledged.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	sock string
	cmd  *exec.Cmd
	done chan error
}

func startRedis(t testing.TB) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		redisSkipOrFail(t, "redis-server is not installed (Debian package redis-server): %v", err)
	}
	// A short directory: a unix socket path has a length limit.
	dir, err := os.MkdirTemp("", "rds")
	require.NoError(t, err)
	rs := &redisServer{t: t, bin: bin, dir: dir, sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		rs.stop()
		os.RemoveAll(dir)
	})
	rs.start()
	return rs
}

func (rs *redisServer) url() string { return "unix://" + rs.sock }

// start starts the server on rs.dir, where a previous run's append-only
// file is, and returns once it answers PING.
func (rs *redisServer) start() {
	rs.t.Helper()
	cmd := exec.Command(rs.bin, "--port", "0", "--unixsocket", rs.sock, "--unixsocketperm", "700", "--dir", rs.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--logfile", filepath.Join(rs.dir, "log"))
	require.NoError(rs.t, cmd.Start())
	rs.cmd, rs.done = cmd, make(chan error, 1)
	go func() { rs.done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if pong(rs.sock) {
			return
		}
		select {
		case err := <-rs.done:
			rs.cmd = nil
			log, _ := os.ReadFile(filepath.Join(rs.dir, "log"))
			rs.t.Fatalf("redis-server exited: %v\n%s", err, log)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			rs.t.Fatal("redis-server did not answer PING")
		}
	}
}

func pong(sock string) bool {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return false
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// stop kills the server (SIGKILL: what Redis acknowledged is in its
// fsync'd append-only file).
func (rs *redisServer) stop() {
	if rs.cmd == nil {
		return
	}
	_ = rs.cmd.Process.Kill()
	<-rs.done
	rs.cmd = nil
}

// newReplica is a Capture on the Redis at url, serving over HTTP.
func newReplica(t *testing.T, tok *tokenizer.Tokenizer, rule servertest.Rule, url string, change func(*capture.Config)) *rig {
	t.Helper()
	st, err := capture.OpenRedis(context.Background(), url, capture.RedisOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return newRigWith(t, tok, rule, func(cfg *capture.Config) {
		cfg.Store = st
		if change != nil {
			change(cfg)
		}
	})
}

// turnVia is turn through replica r at the OpenAI base URL base.
func turnVia(t *testing.T, r *rig, base, key, msgs string) string {
	t.Helper()
	return turnWith(t, r.model.Client(), base, key, msgs)
}

func turnWith(t *testing.T, hc *http.Client, base, key, msgs string) string {
	t.Helper()
	code, resp := post(t, hc, base, key, msgs)
	require.Equal(t, 200, code, resp)
	var out struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &out))
	require.Len(t, out.Choices, 1, resp)
	return string(out.Choices[0].Message)
}

func post(t *testing.T, c *http.Client, base, key, msgs string) (int, string) {
	t.Helper()
	body := `{"model":"agentrl","tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}],"messages":` + msgs + `}`
	return do(t, c, "POST", base+"/chat/completions", body, "Authorization", "Bearer "+key)
}

// calls are the rollout's call records as stored.
func calls(t *testing.T, r *rig, id string) []*capture.CallRecord {
	t.Helper()
	recs, err := r.c.Records(context.Background(), id)
	require.NoError(t, err)
	var out []*capture.CallRecord
	for _, rec := range recs {
		if rec.Kind == capture.KindCall {
			out = append(out, rec.Call)
		}
	}
	return out
}

// Two replicas on one Redis serve one rollout: created on A, its calls
// on B, A, B (by key alone and by URL prefix), the reward set on B,
// finished on A, rebuilt on either: one exact trajectory, as from one
// process.
func TestRedisReplicasServeOneRollout(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	sc := newScript(t, tok, lsCall, lsCall2, "Two files.")
	a := newReplica(t, tok, sc.Rule, rs.url(), nil)
	b := newReplica(t, tok, sc.Rule, rs.url(), nil)
	ctx := context.Background()
	ro, err := a.c.Create(ctx, capture.CreateOptions{Group: "g"})
	require.NoError(t, err)

	a0 := turnVia(t, b, b.model.URL+"/v1", ro.Key, list(sysMsg, taskMsg))
	m1 := list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt src"))
	a1 := turnVia(t, a, ro.OpenAIBaseURL, ro.Key, m1)
	m2 := strings.TrimSuffix(m1, "]") + "," + a1 + "," + toolMsg(callID(t, a1), "main.go") + "]"
	turnVia(t, b, b.model.URL+"/rollouts/"+ro.ID+"/v1", ro.Key, m2)
	require.NoError(t, b.c.SetReward(ctx, ro.ID, 0.5))
	require.NoError(t, a.c.Finish(ctx, ro.ID))

	// B learns of the finish from Redis: the call is refused, recorded
	// nowhere.
	n := callCount(t, a, ro.ID)
	code, body := do(t, b.model.Client(), "POST", b.model.URL+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+ro.Key)
	require.Contains(t, []int{401, 409}, code, body)
	require.Equal(t, n, callCount(t, b, ro.ID))

	cs := calls(t, a, ro.ID)
	require.Len(t, cs, 3)
	for i, want := range []string{"", "c0", "c1"} {
		require.Equal(t, fmt.Sprintf("c%d", i), cs[i].ID)
		require.Equal(t, want, cs[i].Parent, "call %d: %s", i, cs[i].Segment)
	}

	// The engines' calls in order: B's first, A's, B's second.
	reqs := []server.GenerateRequest{b.eng.reqs[0], a.eng.reqs[0], b.eng.reqs[1]}
	outs := []server.TokenOutput{b.eng.outs[0], a.eng.outs[0], b.eng.outs[1]}
	for i := 1; i < 3; i++ {
		prev := append(append([]int32{}, reqs[i-1].PromptIDs...), outs[i-1].TokenIDs...)
		require.Equal(t, prev, reqs[i].PromptIDs[:len(prev)], "call %d continues call %d token for token", i, i-1)
	}
	var trajs [2][]*trajectory.Trajectory
	for i, r := range []*rig{a, b} {
		var rep capture.Report
		trajs[i], rep, err = r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
		require.NoError(t, err)
		require.Len(t, trajs[i], 1, "%+v", rep)
		require.Equal(t, 1.0, rep.Delivered)
		require.False(t, rep.Incomplete)
	}
	require.Equal(t, trajs[0], trajs[1])
	tr := trajs[0][0]
	require.NoError(t, tr.Validate())
	var sampled, ones []int32
	var lps, onesLp []float32
	for _, o := range outs {
		sampled, lps = append(sampled, o.TokenIDs...), append(lps, o.Logprobs...)
	}
	for i, m := range tr.ResponseMask {
		if m == 1 {
			ones, onesLp = append(ones, tr.ResponseIDs[i]), append(onesLp, tr.Logprobs[i])
		}
	}
	require.Equal(t, sampled, ones)
	require.Equal(t, lps, onesLp)
	require.Equal(t, append(append([]int32{}, reqs[2].PromptIDs...), outs[2].TokenIDs...), append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...))
	require.Equal(t, 3, tr.NumTurns)
	require.Equal(t, "g", tr.GroupID)
	require.Equal(t, 0.5, *tr.Reward)

	// Deleted through B, the rollout is gone for A too.
	require.NoError(t, b.c.Delete(ctx, ro.ID))
	_, err = a.c.Records(ctx, ro.ID)
	require.ErrorIs(t, err, capture.ErrNotFound)
	_, _, err = a.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.ErrorIs(t, err, capture.ErrNotFound)
}

// Hard case 10, a write not yet visible to the replica serving the next
// call: the guarantee is that a call a harness sends after it received
// an answer is linked to that answer, whichever replica serves it. The
// answer's record is in Redis before the answer is complete on the wire
// (a streamed answer's finish event is sent after it), and every Begin
// reads the rollout's log from Redis (one primary, no cache) before it
// links. Here each continuation goes to the other replica at once, with
// no wait, streamed and not.
func TestRedisNextCallSeesTheOtherReplicasAnswer(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	sc := newScript(t, tok, lsCall, "Two files.")
	a := newReplica(t, tok, sc.Rule, rs.url(), nil)
	b := newReplica(t, tok, sc.Rule, rs.url(), nil)
	ctx := context.Background()
	for i := range 8 {
		stream := i%2 == 1
		ro, err := b.c.Create(ctx, capture.CreateOptions{})
		require.NoError(t, err)
		first, second := a, b
		if i%4 >= 2 {
			first, second = b, a
		}
		a0 := chatTurn(t, first, first.model.URL+"/v1", ro.Key, list(sysMsg, taskMsg), stream)
		chatTurn(t, second, second.model.URL+"/v1", ro.Key, list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt")), stream)
		cs := calls(t, a, ro.ID)
		require.Len(t, cs, 2)
		require.Equal(t, "c0", cs[1].Parent, "round %d (stream %v): %s", i, stream, cs[1].Segment)
	}
}

// chatTurn is turnVia, streamed when stream: the answer is assembled from
// the chunks, as the SDKs do, once the stream has ended.
func chatTurn(t *testing.T, r *rig, base, key, msgs string, stream bool) string {
	t.Helper()
	if !stream {
		return turnVia(t, r, base, key, msgs)
	}
	body := `{"model":"agentrl","stream":true,"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}],"messages":` + msgs + `}`
	code, resp := do(t, r.model.Client(), "POST", base+"/chat/completions", body, "Authorization", "Bearer "+key)
	require.Equal(t, 200, code, resp)
	type fn struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		Index    int    `json:"-"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var content strings.Builder
	var tcs []call
	done := false
	for _, line := range strings.Split(resp, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function fn     `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &ch), data)
		for _, c := range ch.Choices {
			content.WriteString(c.Delta.Content)
			for _, d := range c.Delta.ToolCalls {
				for len(tcs) <= d.Index {
					tcs = append(tcs, call{Type: "function"})
				}
				if d.ID != "" {
					tcs[d.Index].ID = d.ID
				}
				if d.Function.Name != "" {
					tcs[d.Index].Function.Name = d.Function.Name
				}
				tcs[d.Index].Function.Arguments += d.Function.Arguments
			}
		}
	}
	require.True(t, done, "the stream ended without [DONE]: %s", resp)
	msg := map[string]any{"role": "assistant", "content": content.String()}
	if len(tcs) > 0 {
		msg["content"] = nil
		msg["tool_calls"] = tcs
	}
	b, err := json.Marshal(msg)
	require.NoError(t, err)
	return string(b)
}

// hangAfter is an engine that answers its first n calls and holds every
// later one until its context ends: a call in flight when a replica dies.
type hangAfter struct {
	inner   server.LLMServer
	n       int32
	calls   atomic.Int32
	started chan struct{}
}

func (h *hangAfter) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	if h.calls.Add(1) > h.n {
		if h.started != nil {
			h.started <- struct{}{}
		}
		<-ctx.Done()
		return server.TokenOutput{}, ctx.Err()
	}
	return h.inner.Generate(ctx, req)
}

// replicaEnv names the Redis a child replica serves from.
const replicaEnv = "AGENTRL_TEST_REDIS_REPLICA"

// TestRedisReplicaProcess is the child process of
// TestRedisReplicaKilledMidCall (it does nothing in a normal run): a
// replica on the Redis that replicaEnv names, whose engine answers one
// call and holds the next, serving until it is killed.
func TestRedisReplicaProcess(t *testing.T) {
	url := os.Getenv(replicaEnv)
	if url == "" {
		return
	}
	tok := small(t)
	r := newReplica(t, tok, newScript(t, tok, lsCall).Rule, url, func(cfg *capture.Config) {
		cfg.Engine = &hangAfter{inner: cfg.Engine, n: 1}
	})
	fmt.Printf("replica %s\n", r.model.URL)
	select {} // until killed
}

// A replica killed (SIGKILL) mid-call loses nothing that was recorded:
// the harness's retry on another replica continues the recorded call,
// and the rollout is marked incomplete (the killed call was begun and
// never recorded), so it is masked unless KeepIncomplete.
func TestRedisReplicaKilledMidCall(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	b := newReplica(t, tok, newScript(t, tok, lsCall2).Rule, rs.url(), nil)
	ctx := context.Background()
	ro, err := b.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)

	child := exec.Command(os.Args[0], "-test.run=^TestRedisReplicaProcess$")
	child.Env = append(os.Environ(), replicaEnv+"="+rs.url())
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	})
	br := bufio.NewReader(out)
	var base string
	for base == "" {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "the child replica did not start")
		base, _ = strings.CutPrefix(strings.TrimSpace(line), "replica ")
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	a0 := turnWith(t, hc, base+"/v1", ro.Key, list(sysMsg, taskMsg))

	// The next call hangs in the child's engine; once its begin is in
	// Redis, the child is killed.
	m1 := list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt"))
	res := make(chan error, 1)
	go func() {
		req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"agentrl","messages":`+m1+`}`))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+ro.Key)
			var resp *http.Response
			if resp, err = hc.Do(req); err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil {
					err = fmt.Errorf("the killed replica answered %d", resp.StatusCode)
				}
			}
		}
		res <- err
	}()
	waitFor(t, func() bool { return callCount(t, b, ro.ID) == 3 }) // begin, call, begin
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	killed = true
	require.Error(t, <-res, "the harness saw no answer")

	// Recorded before the kill, c0 is intact; the harness's retry on B
	// continues it.
	turnVia(t, b, b.model.URL+"/v1", ro.Key, m1)
	cs := calls(t, b, ro.ID)
	require.Len(t, cs, 2)
	require.Equal(t, "c0", cs[0].ID)
	require.Equal(t, "c2", cs[1].ID)
	require.Equal(t, "c0", cs[1].Parent, cs[1].Segment)
	require.NoError(t, b.c.Finish(ctx, ro.ID))
	trajs, rep, err := b.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.Empty(t, trajs)
	require.True(t, rep.Incomplete)
	require.Equal(t, "calls begun and never recorded (lost): [c1]", rep.IncompleteReason)
	trajs, rep, err = b.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{KeepIncomplete: true})
	require.NoError(t, err)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
	require.Equal(t, 1.0, rep.Delivered)
}

// waitFor polls cond until it holds (a minute at most: a bound on a hang,
// not a timing assertion).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
