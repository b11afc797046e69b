package capture_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/server"
)

// gated is an engine whose call number at (0-based) waits, once it has
// been entered, until release is closed: the test changes the world
// (stops Redis) while the call is in the engine.
type gated struct {
	inner   server.LLMServer
	at      int32
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	if g.calls.Add(1)-1 == g.at {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return server.TokenOutput{}, ctx.Err()
		}
	}
	return g.inner.Generate(ctx, req)
}

// Redis unavailable fails closed: a call gets a 503 in its dialect's
// shape naming the store, and nothing is answered that is not recorded;
// a Redis that dies while a call is in the engine makes that call fail
// (its answer is not sent) and marks the rollout incomplete. After Redis
// restarts (its fsync'd append-only file kept), the rollout carries on
// from what was recorded.
func TestRedisUnavailableFailsClosed(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	g := &gated{at: 1, entered: make(chan struct{}), release: make(chan struct{})}
	r := newReplica(t, tok, newScript(t, tok, lsCall, lsCall2, "Two files.").Rule, rs.url(), func(cfg *capture.Config) {
		g.inner = cfg.Engine
		cfg.Engine = g
	})
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	a0 := turnVia(t, r, ro.OpenAIBaseURL, ro.Key, list(sysMsg, taskMsg))
	m1 := list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt"))

	// Redis dies while the second call is in the engine: the answer
	// cannot be recorded, so it is not sent.
	type result struct {
		code int
		body string
	}
	res := make(chan result, 1)
	go func() {
		code, body := post(t, r.model.Client(), ro.OpenAIBaseURL, ro.Key, m1)
		res <- result{code, body}
	}()
	<-g.entered
	rs.stop()
	close(g.release)
	got := <-res
	require.Equal(t, 503, got.code, got.body)
	require.NotContains(t, got.body, "tool_call")
	requireOpenAIError(t, got.body, "redis store")

	// While it is down: every dialect gets a 503 in its own shape, the
	// control API too; an unknown key cannot be checked, so it is not
	// refused as unknown but as unavailable.
	code, body := post(t, r.model.Client(), ro.OpenAIBaseURL, ro.Key, m1)
	require.Equal(t, 503, code, body)
	requireOpenAIError(t, body, "redis store")
	code, body = do(t, r.model.Client(), "POST", ro.AnthropicBaseURL+"/v1/messages",
		`{"model":"agentrl","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "x-api-key", ro.Key)
	require.Equal(t, 503, code, body)
	var ae struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ae), body)
	require.Equal(t, "error", ae.Type)
	require.NotEmpty(t, ae.Error.Type)
	require.Contains(t, ae.Error.Message, "redis store")
	code, body = post(t, r.model.Client(), r.model.URL+"/v1", "ark_unknown", m1)
	require.Equal(t, 503, code, body)
	requireOpenAIError(t, body, "redis store")
	code, body = do(t, r.control.Client(), "POST", r.control.URL+"/rollouts/"+ro.ID+"/reward", `{"reward":1}`, "Authorization", "Bearer "+controlToken)
	require.Equal(t, 503, code, body)
	require.ErrorIs(t, r.c.SetReward(ctx, ro.ID, 1), server.ErrUnavailable)

	// Back up: the record of the first call survived the restart, the
	// retried call continues it, and the call that died with Redis marks
	// the rollout incomplete (begun, never recorded).
	rs.start()
	waitFor(t, func() bool { _, err := r.c.Records(ctx, ro.ID); return err == nil })
	turnVia(t, r, ro.OpenAIBaseURL, ro.Key, m1)
	cs := calls(t, r, ro.ID)
	require.Len(t, cs, 2)
	require.Equal(t, "c0", cs[1].Parent, cs[1].Segment)
	require.NoError(t, r.c.Finish(ctx, ro.ID))
	_, rep, err := r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.True(t, rep.Incomplete)
	require.Equal(t, "calls begun and never recorded (lost): [c1]", rep.IncompleteReason)
}

func requireOpenAIError(t *testing.T, body, contains string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Contains(t, e.Error.Message, contains)
	require.NotEmpty(t, e.Error.Type)
}

// dropProxy forwards TCP to a unix socket; armed with a marker, it lets
// the next command containing it reach Redis, swallows Redis's reply and
// cuts the connection: the client cannot know the command was applied,
// and sends it again.
type dropProxy struct {
	ln      net.Listener
	target  string
	marker  atomic.Pointer[[]byte]
	dropped atomic.Int32
	// hold, when set, is a marker whose command waits for held to close
	// before it goes to Redis.
	hold    atomic.Pointer[[]byte]
	holding chan struct{}
	held    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newDropProxy(t *testing.T, sock string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{ln: ln, target: sock}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *dropProxy) url() string { return "redis://" + p.ln.Addr().String() }

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("unix", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		var drop atomic.Bool
		p.wg.Add(2)
		go func() { // Redis → client
			defer p.wg.Done()
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && drop.Load() {
					p.dropped.Add(1)
					s.Close()
					return
				}
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // client → Redis
			defer p.wg.Done()
			defer s.Close()
			buf := make([]byte, 1<<20)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if m := p.marker.Load(); m != nil && bytes.Contains(buf[:n], *m) && p.marker.CompareAndSwap(m, nil) {
						drop.Store(true)
					}
					if m := p.hold.Load(); m != nil && bytes.Contains(buf[:n], *m) && p.hold.CompareAndSwap(m, nil) {
						close(p.holding)
						<-p.held
					}
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (p *dropProxy) arm(marker string) {
	m := []byte(marker)
	p.marker.Store(&m)
}

// A duplicated delivery is recorded once: Redis applies an append and
// its reply is lost, go-redis sends it again on a new connection, and the
// append's token makes the second delivery a no-op. The harness gets its
// answer, the log has each record once.
func TestRedisDuplicatedDeliveryIsRecordedOnce(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	px := newDropProxy(t, rs.sock)
	r := newReplica(t, tok, newScript(t, tok, lsCall, "Done.").Rule, px.url(), nil)
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)

	px.arm(`"kind":"call"`)
	a0 := turnVia(t, r, ro.OpenAIBaseURL, ro.Key, list(sysMsg, taskMsg))
	require.Equal(t, int32(1), px.dropped.Load(), "the call record's reply was swallowed once")
	px.arm(`"kind":"reward"`)
	require.NoError(t, r.c.SetReward(ctx, ro.ID, 1))
	require.Equal(t, int32(2), px.dropped.Load())
	turnVia(t, r, ro.OpenAIBaseURL, ro.Key, list(sysMsg, taskMsg, a0, toolMsg(callID(t, a0), "a.txt")))

	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, rec := range recs {
		kinds[rec.Kind]++
	}
	require.Equal(t, map[string]int{capture.KindRollout: 1, capture.KindBegin: 2, capture.KindCall: 2, capture.KindReward: 1}, kinds)
	trajs, rep, err := r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 2, trajs[0].NumTurns)
}

// One rollout can neither read nor write another's records through
// Redis: a key reaches only its own rollout on every replica, even when
// the key index in Redis is made to point elsewhere (the rollout's own
// digest is checked again); refused calls write nothing to Redis; and no
// key is stored in Redis, only digests.
func TestRedisKeysCannotReachOtherRollouts(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	sc := newScript(t, tok, "hello")
	a := newReplica(t, tok, sc.Rule, rs.url(), nil)
	b := newReplica(t, tok, sc.Rule, rs.url(), nil)
	ctx := context.Background()
	x, err := a.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	y, err := a.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: rs.sock, DisableIdentity: true})
	defer rdb.Close()
	snapshot := func() map[string]string {
		out := map[string]string{}
		keys, err := rdb.Keys(ctx, "*").Result()
		require.NoError(t, err)
		for _, k := range keys {
			typ, err := rdb.Type(ctx, k).Result()
			require.NoError(t, err)
			var v any
			switch typ {
			case "string":
				v, err = rdb.Get(ctx, k).Result()
			case "list":
				v, err = rdb.LRange(ctx, k, 0, -1).Result()
			case "hash":
				v, err = rdb.HGetAll(ctx, k).Result()
			case "set":
				v, err = rdb.SMembers(ctx, k).Result()
			case "zset":
				v, err = rdb.ZRange(ctx, k, 0, -1).Result()
			}
			require.NoError(t, err)
			b, err := json.Marshal(v)
			require.NoError(t, err)
			out[k] = string(b)
		}
		return out
	}
	before := snapshot()

	// On B, which has neither cached: X's key on Y's URL, a made-up key,
	// and ids that are not rollout ids are all refused.
	for _, c := range []struct{ url, key string }{
		{b.model.URL + "/rollouts/" + y.ID + "/v1", x.Key},
		{b.model.URL + "/v1", "ark_" + strings.Repeat("0", 64)},
		{b.model.URL + "/rollouts/" + y.ID + ":log/v1", y.Key},
		{b.model.URL + "/rollouts/*/v1", y.Key},
	} {
		code, body := do(t, b.model.Client(), "POST", c.url+"/chat/completions", helloBody, "Authorization", "Bearer "+c.key)
		require.Equal(t, 401, code, "%s: %s", c.url, body)
	}
	for _, id := range []string{y.ID + ":log", "*", "ro_*"} {
		_, err := b.c.Records(ctx, id)
		require.ErrorIs(t, err, capture.ErrNotFound, id)
	}
	require.Equal(t, before, snapshot(), "refused calls wrote nothing to Redis")

	// X's key index entry pointed at Y (someone who can write to Redis):
	// a fresh replica loads Y, finds that its digest is not the key's,
	// and refuses.
	dx := sha256.Sum256([]byte(x.Key))
	require.NoError(t, rdb.Set(ctx, "agentrl:capture:key:"+hex.EncodeToString(dx[:]), y.ID, 0).Err())
	c3 := newReplica(t, tok, sc.Rule, rs.url(), nil)
	code, body := do(t, c3.model.Client(), "POST", c3.model.URL+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+x.Key)
	require.Equal(t, 401, code, body)
	require.Equal(t, 0, callCount(t, c3, y.ID))

	// Y's own key works on B, and what is stored is digests, never keys.
	code, body = do(t, b.model.Client(), "POST", b.model.URL+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+y.Key)
	require.Equal(t, 200, code, body)
	require.Equal(t, 0, callCount(t, b, x.ID))
	for k, v := range snapshot() {
		for _, key := range []string{x.Key, y.Key, strings.TrimPrefix(x.Key, "ark_"), strings.TrimPrefix(y.Key, "ark_")} {
			require.NotContains(t, k, key)
			require.NotContains(t, v, key)
		}
	}
}

// Idle expiry works across replicas: a rollout used on B is not idle for
// A; one no replica used for IdleTimeout is expired by the sweep of
// whichever replica creates next (so one whose replica died is expired
// too), and then refuses calls on every replica.
func TestRedisIdleExpiryAcrossReplicas(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	var now atomic.Int64
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	now.Store(t0.UnixNano())
	clock := func(cfg *capture.Config) {
		cfg.Now = func() time.Time { return time.Unix(0, now.Load()) }
		cfg.IdleTimeout = time.Minute
	}
	at := func(d time.Duration) { now.Store(t0.Add(d).UnixNano()) }
	sc := newScript(t, tok, "hello")
	a := newReplica(t, tok, sc.Rule, rs.url(), clock)
	b := newReplica(t, tok, sc.Rule, rs.url(), clock)
	ctx := context.Background()
	x, err := a.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)

	at(50 * time.Second)
	require.NoError(t, b.c.SetReward(ctx, x.ID, 1)) // used on B
	at(100 * time.Second)                           // 100 s after A last saw it, 50 s after B
	code, body := do(t, a.model.Client(), "POST", a.model.URL+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+x.Key)
	require.Equal(t, 200, code, body)

	at(100*time.Second + 61*time.Second)
	_, err = b.c.Create(ctx, capture.CreateOptions{}) // B's sweep
	require.NoError(t, err)
	recs, err := b.c.Records(ctx, x.ID)
	require.NoError(t, err)
	last := recs[len(recs)-1]
	require.Equal(t, capture.KindFinish, last.Kind)
	require.Equal(t, "expired", last.Reason)
	n := callCount(t, b, x.ID)
	for _, r := range []*rig{a, b} {
		code, body := do(t, r.model.Client(), "POST", r.model.URL+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+x.Key)
		require.Contains(t, []int{401, 409}, code, body)
	}
	require.Equal(t, n, callCount(t, a, x.ID))
	_, rep, err := a.c.Rebuild(ctx, x.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.True(t, rep.Incomplete)
	require.Equal(t, "the rollout expired while idle", rep.IncompleteReason)

	// Expired at its next call on another replica even without a sweep.
	y, err := a.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	at(100*time.Second + 61*time.Second + 2*time.Minute)
	code, body = do(t, b.model.Client(), "POST", b.model.URL+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+y.Key)
	require.Equal(t, 409, code, body)
	require.Equal(t, 0, callCount(t, a, y.ID))
}

// The store on its own: what replicas race on is settled in Redis, and
// a Redis that does not fsync each write is refused unless allowed.
func TestRedisStore(t *testing.T) {
	rs := startRedis(t)
	ctx := context.Background()
	s, err := capture.OpenRedis(ctx, rs.url(), capture.RedisOptions{})
	require.NoError(t, err)
	defer s.Close()
	other, err := capture.OpenRedis(ctx, rs.url(), capture.RedisOptions{Prefix: "other:"})
	require.NoError(t, err)
	defer other.Close()

	require.ErrorIs(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindBegin, CallID: "c0"}), capture.ErrNotFound)
	require.NoError(t, s.Append(ctx, "ro_a", true, rolloutRec("ro_a")))
	require.ErrorContains(t, s.Append(ctx, "ro_a", true, rolloutRec("ro_a")), "exists already")
	require.ErrorContains(t, s.Append(ctx, "ro_b", true, rolloutRec("ro_b")), "key digest is in use")
	require.Error(t, s.Append(ctx, "ro_c", true, rolloutRec("ro_a")), "a rollout record naming another rollout")
	require.Error(t, s.Append(ctx, "ro_a:log", true, rolloutRec("ro_a:log")))
	require.NoError(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindBegin, CallID: "c0"}, capture.Record{Kind: capture.KindAbort, CallID: "c0", Reason: "x"}))
	require.NoError(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindFinish}))
	require.NoError(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindFinish, Reason: "expired"}), "a second finish is a no-op")
	require.ErrorIs(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindBegin, CallID: "c1"}), capture.ErrFinished)
	r := 1.0
	require.NoError(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindReward, Reward: &r}))
	recs, err := s.Load(ctx, "ro_a")
	require.NoError(t, err)
	var kinds []string
	for _, rec := range recs {
		kinds = append(kinds, rec.Kind)
	}
	require.Equal(t, []string{"rollout", "begin", "abort", "finish", "reward"}, kinds)

	// Long logs are read a page at a time.
	rec2 := rolloutRec("ro_long")
	rec2.Rollout.KeySHA256 = strings.Repeat("cd", 32)
	require.NoError(t, s.Append(ctx, "ro_long", true, rec2))
	for i := range 300 {
		require.NoError(t, s.Append(ctx, "ro_long", true, capture.Record{Kind: capture.KindBegin, CallID: "c" + string(rune('a'+i%26))}))
	}
	recs, err = s.Load(ctx, "ro_long")
	require.NoError(t, err)
	require.Len(t, recs, 301)

	ids, err := s.List(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"ro_a", "ro_long"}, ids)
	ids, err = other.List(ctx)
	require.NoError(t, err)
	require.Empty(t, ids, "another prefix is another namespace")
	_, err = other.Load(ctx, "ro_a")
	require.Error(t, err)

	require.NoError(t, s.Delete(ctx, "ro_a"))
	_, err = s.Load(ctx, "ro_a")
	require.Error(t, err)
	require.ErrorIs(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindReward, Reward: &r}), capture.ErrNotFound, "a deleted rollout stays deleted")
	ids, err = s.List(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"ro_long"}, ids)

	// A Redis that fsyncs once a second could lose an acknowledged record.
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: rs.sock, DisableIdentity: true})
	defer rdb.Close()
	require.NoError(t, rdb.ConfigSet(ctx, "appendfsync", "everysec").Err())
	_, err = capture.OpenRedis(ctx, rs.url(), capture.RedisOptions{})
	require.ErrorContains(t, err, `appendfsync "everysec"`)
	s2, err := capture.OpenRedis(ctx, rs.url(), capture.RedisOptions{AllowUnsynced: true})
	require.NoError(t, err)
	require.NoError(t, s2.Close())
	_, err = capture.OpenRedis(ctx, "unix://"+rs.dir+"/nothing-here", capture.RedisOptions{})
	require.ErrorIs(t, err, server.ErrUnavailable)
}

// Hard case 10, the other side of the guarantee: the answer is not
// complete on the wire until its record is in Redis. Here the call
// record's write to Redis is held back, so the stream has no finish
// event; a harness that does not wait for it and sends
// its next call to another replica finds no recorded answer to continue,
// so that call starts a new segment, saying so — nothing is mislinked and
// nothing is lost: once the write lands, the stream ends and both calls
// are recorded.
func TestRedisAnswerIsNotCompleteBeforeItsRecord(t *testing.T) {
	tok := small(t)
	rs := startRedis(t)
	px := newDropProxy(t, rs.sock)
	px.holding, px.held = make(chan struct{}), make(chan struct{})
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(px.held) }) })
	sc := newScript(t, tok, "Two files.", "Done.")
	// No read timeout on A's connections: go-redis would otherwise give
	// up on the held write after 3 s and send it again on another one.
	a := newReplica(t, tok, sc.Rule, px.url()+"?read_timeout=-1", nil)
	b := newReplica(t, tok, sc.Rule, rs.url(), nil)
	ctx := context.Background()
	ro, err := a.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)

	m := []byte(`"kind":"call"`)
	px.hold.Store(&m)
	req, err := http.NewRequest("POST", ro.OpenAIBaseURL+"/chat/completions",
		strings.NewReader(`{"model":"agentrl","stream":true,"messages":`+list(sysMsg, taskMsg)+`}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ro.Key)
	type read struct {
		body []byte
		err  error
	}
	got := make(chan read, 1)
	go func() {
		resp, err := a.model.Client().Do(req)
		if err != nil {
			got <- read{nil, err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- read{b, err}
	}()
	<-px.holding // the answer is computed; its record is on its way to Redis

	// An impatient harness (it knows the text from the deltas) continues
	// on B at once.
	next := list(sysMsg, taskMsg, `{"role":"assistant","content":"Two files."}`, `{"role":"user","content":"Thanks."}`)
	code, body := post(t, b.model.Client(), b.model.URL+"/v1", ro.Key, next)
	require.Equal(t, 200, code, body)
	select {
	case r := <-got:
		t.Fatalf("the stream ended before its record was written: %s", r.body)
	default: // it cannot end: its finish event waits for the held write
	}

	release.Do(func() { close(px.held) })
	r := <-got
	require.NoError(t, r.err)
	require.Contains(t, string(r.body), `"finish_reason":"stop"`)
	require.Contains(t, string(r.body), "Two files.")
	require.Contains(t, string(r.body), "[DONE]")

	cs := calls(t, a, ro.ID)
	require.Len(t, cs, 2)
	byID := map[string]*capture.CallRecord{cs[0].ID: cs[0], cs[1].ID: cs[1]}
	require.Contains(t, byID, "c0")
	require.Contains(t, byID, "c1")
	require.Equal(t, "", byID["c1"].Parent, "c0 was not recorded when c1 arrived")
	require.Equal(t, "first call of the rollout", byID["c1"].Segment)
	_, rep, err := b.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Calls)
	require.Len(t, rep.Roots, 2, "%+v", rep)
	require.False(t, rep.Incomplete)
}
