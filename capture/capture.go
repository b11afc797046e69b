package capture

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
)

// DeltaTokenizer encodes the messages added after a model turn without
// re-tokenizing the history; *tokenizer.Tokenizer implements it.
type DeltaTokenizer interface {
	EncodeDelta(c tokenizer.ChatContext, added []chat.Message) ([]int32, error)
}

// DefaultIdleTimeout is Config.IdleTimeout's default.
const DefaultIdleTimeout = 30 * time.Minute

// DefaultMaxCalls is Config.MaxCalls's default.
const DefaultMaxCalls = 4096

// Config configures a Capture.
type Config struct {
	// Engine serves the calls, token in and token out (a router, the
	// in-process engine, a remote client).
	Engine server.LLMServer
	// Chat is the model's tokenizer, template and parser, as for
	// httpapi.Config.Chat (required). With Chat.Images (a vision-language
	// model) calls may carry image parts: a continuation's new blocks are
	// expanded on its delta, and Rebuild needs Vision.
	Chat *httpapi.Chat
	// Vision rebuilds the images of trajectories (pixel values, grids,
	// M-RoPE position ids; see agentloop.Vision.MultiModal). Its
	// processor must be the one behind Chat.Images, which gave the
	// engine the token counts. nil for a text model: a rollout whose
	// calls had images then fails to rebuild, naming why.
	Vision *agentloop.Vision
	// Delta encodes continuations; nil uses Chat.Tokenizer, which must
	// then implement DeltaTokenizer.
	Delta DeltaTokenizer
	// HTTP holds the other serving settings (MaxModelLen, ClampMaxTokens,
	// limits); its Chat, Recorder and AuthToken are set by Capture, which
	// does its own authentication.
	HTTP httpapi.Config
	// Store keeps the records (required); OpenDir is the embedded one.
	Store Store
	// BaseURL is where harnesses reach Handler ("http://10.0.0.5:8080"),
	// used in the base URLs a created rollout is given.
	BaseURL string
	// IdleTimeout: a rollout that is not finished and has had no model
	// call or control request for this long expires (see Capture).
	// Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxCalls bounds the calls one rollout may record (so its memory is
	// bounded); further calls get 429. Default DefaultMaxCalls.
	MaxCalls int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Capture records every model call of its rollouts token-exact and
// rebuilds their trajectories. Calls reach it through Handler, control
// requests through ControlHandler or the Go methods.
//
// Expiry: a rollout idle (no call, no control request) for IdleTimeout is
// finished with reason "expired" and marked incomplete; it refuses
// further calls, and its in-memory index is released (Rebuild and Export
// read its log again); its log stays in the store until Delete. Expiry
// is checked on each Create and each access, so no goroutine runs.
type Capture struct {
	cfg   Config
	srv   *httpapi.Server
	delta DeltaTokenizer
	eos   []int32

	// shared is cfg.Store when replicas share it (RedisStore), else nil.
	shared sharedStore

	mu       sync.Mutex
	rollouts map[string]*rollout
	byKey    map[[32]byte]*rollout
	// lastSweep is when expireIdle last scanned.
	lastSweep time.Time

	stats struct {
		recorded, aborted, refused, created atomic.Int64
		recordNanos                         atomic.Int64
	}
	// m are the counters by dialect, latency and rebuild (metrics.go).
	m metrics
}

// Stats are a Capture's counters, for metrics.
type Stats struct {
	// RolloutsOpen are the rollouts created and not finished, expired or
	// deleted; RolloutsCreated counts every Create.
	RolloutsOpen, RolloutsCreated int64
	// CallsRecorded counts answers recorded, CallsAborted calls that
	// ended without one, CallsRefused calls refused before reaching a
	// rollout (unknown key or id, an endpoint not served).
	CallsRecorded, CallsAborted, CallsRefused int64
	// RecordTime is the time spent making answers durable (the store's
	// Append with sync), summed over CallsRecorded.
	RecordTime time.Duration
	// Calls counts the calls by dialect (Dialects) and outcome
	// (Outcomes): Calls["chat"]["recorded"].
	Calls map[string]map[string]int64
	// Latency is the capture latency of the recorded calls: what Begin
	// and Record took, the engine's time excluded.
	Latency Latency
	// Rebuild counts what the Rebuild calls made.
	Rebuild Rebuilds
}

// Stats returns the counters so far.
func (c *Capture) Stats() Stats {
	c.mu.Lock()
	open := int64(len(c.byKey))
	c.mu.Unlock()
	st := Stats{RolloutsOpen: open, RolloutsCreated: c.stats.created.Load(),
		CallsRecorded: c.stats.recorded.Load(), CallsAborted: c.stats.aborted.Load(), CallsRefused: c.stats.refused.Load(),
		RecordTime: time.Duration(c.stats.recordNanos.Load())}
	c.m.stats(&st)
	return st
}

// Rollout is a created rollout: what a harness needs to reach it.
type Rollout struct {
	ID    string `json:"id"`
	Key   string `json:"key"`
	Group string `json:"group"`
	// OpenAIBaseURL is for OPENAI_BASE_URL (it ends in /v1), and
	// AnthropicBaseURL for ANTHROPIC_BASE_URL (the SDK adds /v1).
	OpenAIBaseURL    string `json:"openai_base_url"`
	AnthropicBaseURL string `json:"anthropic_base_url"`
}

// New returns a Capture over cfg.Engine, recovering the rollouts already
// in cfg.Store: calls that were begun and never recorded nor aborted (the
// process died mid-call) mark their rollout incomplete.
func New(ctx context.Context, cfg Config) (*Capture, error) {
	if cfg.Store == nil {
		return nil, errors.New("capture: Config.Store is required (OpenDir is the embedded store)")
	}
	if cfg.Chat == nil || cfg.Chat.Tokenizer == nil {
		return nil, errors.New("capture: Config.Chat with a Tokenizer is required")
	}
	c := &Capture{cfg: cfg, delta: cfg.Delta, rollouts: map[string]*rollout{}, byKey: map[[32]byte]*rollout{}}
	if c.delta == nil {
		d, ok := cfg.Chat.Tokenizer.(DeltaTokenizer)
		if !ok {
			return nil, errors.New("capture: Config.Chat.Tokenizer has no EncodeDelta: set Config.Delta")
		}
		c.delta = d
	}
	if c.cfg.IdleTimeout <= 0 {
		c.cfg.IdleTimeout = DefaultIdleTimeout
	}
	if c.cfg.MaxCalls <= 0 {
		c.cfg.MaxCalls = DefaultMaxCalls
	}
	if c.cfg.Now == nil {
		c.cfg.Now = time.Now
	}
	c.cfg.BaseURL = strings.TrimSuffix(c.cfg.BaseURL, "/")
	c.eos = cfg.Chat.Tokenizer.EOSTokenIDs()
	hc := cfg.HTTP
	hc.Chat, hc.Recorder, hc.AuthToken = cfg.Chat, c, ""
	srv, err := httpapi.New(cfg.Engine, hc)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	c.srv = srv
	if sh, ok := cfg.Store.(sharedStore); ok {
		// Replicas share the store: rollouts are read from it when first
		// used, not all at start.
		c.shared = sh
		return c, nil
	}
	ids, err := cfg.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		recs, err := cfg.Store.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		ro, err := replay(id, recs)
		if err != nil {
			return nil, err
		}
		ro.lastUsed.Store(c.cfg.Now().UnixNano())
		c.rollouts[id] = ro
		if !ro.finished {
			c.byKey[ro.keyHash] = ro
		}
	}
	return c, nil
}

// Shutdown stops serving: in-flight calls finish until ctx ends, then are
// cancelled (see httpapi.Server.Shutdown).
func (c *Capture) Shutdown(ctx context.Context) error { return c.srv.Shutdown(ctx) }

// newToken is n random bytes from crypto/rand, hex.
func newToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("capture: crypto/rand: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func keyDigest(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// CreateOptions are what a rollout is created with.
type CreateOptions struct {
	// Group is the GRPO group (the sample) the rollout belongs to: its
	// trajectories get it as GroupID. Default: the rollout's id.
	Group    string            `json:"group,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Create makes a rollout with a fresh id and key (128 and 256 random bits).
// The key is returned once and never stored: the store keeps its SHA-256.
func (c *Capture) Create(ctx context.Context, opts CreateOptions) (Rollout, error) {
	c.expireIdle(ctx)
	id, err := newToken(16)
	if err != nil {
		return Rollout{}, err
	}
	id = "ro_" + id
	key, err := newToken(32)
	if err != nil {
		return Rollout{}, err
	}
	key = "ark_" + key
	if opts.Group == "" {
		opts.Group = id
	}
	digest := keyDigest(key)
	info := RolloutInfo{ID: id, KeySHA256: hex.EncodeToString(digest[:]), Group: opts.Group, Metadata: opts.Metadata, Created: c.cfg.Now().UTC()}
	c.mu.Lock()
	if _, dup := c.rollouts[id]; dup {
		c.mu.Unlock()
		return Rollout{}, fmt.Errorf("capture: rollout id %s already exists", id)
	}
	ro := newRollout(info, digest)
	ro.seen = 1 // with a shared store: its rollout record
	ro.lastUsed.Store(c.cfg.Now().UnixNano())
	c.rollouts[id], c.byKey[digest] = ro, ro
	c.mu.Unlock()
	if err := c.cfg.Store.Append(ctx, id, true, Record{Kind: KindRollout, Time: info.Created, Rollout: &info}); err != nil {
		c.mu.Lock()
		delete(c.rollouts, id)
		delete(c.byKey, digest)
		c.mu.Unlock()
		return Rollout{}, err
	}
	c.stats.created.Add(1)
	return Rollout{ID: id, Key: key, Group: opts.Group,
		OpenAIBaseURL: c.cfg.BaseURL + "/rollouts/" + id + "/v1", AnthropicBaseURL: c.cfg.BaseURL + "/rollouts/" + id}, nil
}

// ErrNotFound is returned for a rollout id that is not known.
var ErrNotFound = errors.New("capture: no such rollout")

// ErrFinished is returned for a call to, or a change of, a finished rollout.
var ErrFinished = errors.New("capture: rollout is finished")

// touch expires ro when it has been idle too long, else marks it used.
func (c *Capture) touch(ro *rollout) {
	now := c.cfg.Now().UnixNano()
	if c.shared != nil {
		// Another replica may have used it since: lookup and Begin ask
		// the store.
		ro.lastUsed.Store(now)
		return
	}
	if now-ro.lastUsed.Swap(now) > int64(c.cfg.IdleTimeout) {
		_ = c.finish(context.Background(), ro, "expired") // a no-op when finished
	}
}

// expireIdle expires the idle rollouts, at a Create, at most every
// IdleTimeout/16: a scan without locking any rollout, then finish (which
// does nothing to one already finished).
func (c *Capture) expireIdle(ctx context.Context) {
	now := c.cfg.Now()
	c.mu.Lock()
	if now.Sub(c.lastSweep) < c.cfg.IdleTimeout/16 {
		c.mu.Unlock()
		return
	}
	c.lastSweep = now
	if c.shared != nil {
		c.mu.Unlock()
		c.sweepShared(ctx, now)
		return
	}
	var idle []*rollout
	for _, ro := range c.rollouts {
		if now.UnixNano()-ro.lastUsed.Load() > int64(c.cfg.IdleTimeout) {
			idle = append(idle, ro)
		}
	}
	c.mu.Unlock()
	for _, ro := range idle {
		_ = c.finish(ctx, ro, "expired")
	}
}

// byRolloutKey returns the open rollout whose key is key (nil when none).
// The map is indexed by the key's SHA-256, and the digest is compared
// again in constant time, so the lookup's timing says nothing about the
// key. With a shared store, a key not cached is looked up by its digest
// there (a rollout another replica created); the error is the store's.
func (c *Capture) byRolloutKey(ctx context.Context, key string) (*rollout, error) {
	d := keyDigest(key)
	c.mu.Lock()
	ro := c.byKey[d]
	c.mu.Unlock()
	if ro == nil && c.shared != nil {
		var err error
		if ro, err = c.sharedByKey(ctx, d); err != nil {
			return nil, err
		}
	}
	if ro == nil || subtle.ConstantTimeCompare(d[:], ro.keyHash[:]) != 1 {
		return nil, nil
	}
	c.touch(ro)
	return ro, nil
}

// SetReward sets the rollout's reward; its trajectories get it when
// rebuilt.
func (c *Capture) SetReward(ctx context.Context, id string, reward float64) error {
	ro, err := c.lookup(ctx, id)
	if err != nil {
		return err
	}
	if err := checkFinite("reward", reward); err != nil {
		return err
	}
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if err := c.appendTo(ctx, ro, true, Record{Kind: KindReward, Time: c.cfg.Now().UTC(), Reward: &reward}); err != nil {
		return err
	}
	ro.reward = &reward
	return nil
}

// Finish freezes the rollout: later calls with its key or id are refused
// and recorded nowhere.
func (c *Capture) Finish(ctx context.Context, id string) error {
	ro, err := c.lookup(ctx, id)
	if err != nil {
		return err
	}
	return c.finish(ctx, ro, "")
}

func (c *Capture) finish(ctx context.Context, ro *rollout, reason string) error {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	return c.finishLocked(ctx, ro, reason)
}

// finishLocked is finish with ro.mu held.
func (c *Capture) finishLocked(ctx context.Context, ro *rollout, reason string) error {
	if ro.finished {
		return nil
	}
	// A call still in flight can no longer be recorded (Record refuses
	// it): it is aborted here, in the finish's own write, rather than
	// when its handler ends, so every Rebuild after Finish reads the
	// same log. With a shared store only this process's calls are: a
	// call another replica began is that replica's to record, and stays
	// lost if the replica died.
	inFlight := ro.begun
	if c.shared != nil {
		inFlight = ro.here
	}
	now := c.cfg.Now().UTC()
	recs := make([]Record, 0, len(inFlight)+1)
	for _, id := range sortedCalls(inFlight) {
		recs = append(recs, Record{Kind: KindAbort, Time: now, CallID: id, Reason: inFlightAtFinish})
	}
	recs = append(recs, Record{Kind: KindFinish, Time: now, Reason: reason})
	if err := c.appendTo(ctx, ro, true, recs...); err != nil {
		return err
	}
	for _, r := range recs[:len(recs)-1] {
		ro.aborted = append(ro.aborted, dropped{Call: r.CallID, Reason: "aborted: " + inFlightAtFinish})
		delete(ro.begun, r.CallID)
		delete(ro.here, r.CallID)
		ro.ended[r.CallID] = true
		c.stats.aborted.Add(1)
	}
	ro.finish(reason)
	c.mu.Lock()
	delete(c.byKey, ro.keyHash)
	c.mu.Unlock()
	return nil
}

// inFlightAtFinish is the abort reason of a call in flight at Finish.
const inFlightAtFinish = "the rollout was finished while the call was in flight"

// sortedCalls are begun's call ids in dispatch order (c2 before c10).
func sortedCalls(begun map[string]bool) []string {
	ids := make([]string, 0, len(begun))
	for id := range begun {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if len(ids[i]) != len(ids[j]) {
			return len(ids[i]) < len(ids[j])
		}
		return ids[i] < ids[j]
	})
	return ids
}

// Delete removes the rollout and its log.
func (c *Capture) Delete(ctx context.Context, id string) error {
	if c.shared != nil {
		if _, err := c.lookup(ctx, id); err != nil {
			return err
		}
	}
	c.mu.Lock()
	ro := c.rollouts[id]
	if ro != nil {
		delete(c.rollouts, id)
		delete(c.byKey, ro.keyHash)
	}
	c.mu.Unlock()
	if ro == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	ro.mu.Lock()
	ro.deleted = true
	ro.mu.Unlock()
	return c.cfg.Store.Delete(ctx, id)
}

// Records returns the rollout's log as stored.
func (c *Capture) Records(ctx context.Context, id string) ([]Record, error) {
	if _, err := c.lookup(ctx, id); err != nil {
		return nil, err
	}
	return c.cfg.Store.Load(ctx, id)
}

// ---- the Recorder: httpapi calls these -------------------------------------

type rolloutKey struct{}

func withRollout(ctx context.Context, ro *rollout) context.Context {
	return context.WithValue(ctx, rolloutKey{}, ro)
}

// Begin implements httpapi.Recorder: it finds the call the request
// continues, gives the engine that call's exact prompt and sampled ids
// followed by only the new messages as a tokenizer delta, and logs the
// intent.
func (c *Capture) Begin(ctx context.Context, hc *httpapi.Call) (httpapi.Recording, error) {
	t0 := time.Now()
	p, err := c.begin(ctx, hc)
	if err != nil {
		c.m.call(hc.Dialect, outRefused)
		return nil, err
	}
	p.beginTime = time.Since(t0)
	return p, nil
}

func (c *Capture) begin(ctx context.Context, hc *httpapi.Call) (*pendingCall, error) {
	ro, _ := ctx.Value(rolloutKey{}).(*rollout)
	if ro == nil {
		return nil, &server.Error{Op: "capture", Status: http.StatusUnauthorized, Err: errors.New("a call reached the capture server without a rollout")}
	}
	if hc.Samples != 1 {
		return nil, fmt.Errorf(`%w: field "n": capture records one sample per call, got n=%d`, server.ErrBadRequest, hc.Samples)
	}
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if c.shared != nil {
		if err := c.catchUp(ctx, ro); err != nil {
			return nil, err
		}
	}
	switch {
	case ro.deleted:
		return nil, &server.Error{Op: "capture", Status: http.StatusNotFound, Err: ErrNotFound}
	case ro.finished:
		return nil, &server.Error{Op: "capture", Status: http.StatusConflict, Err: fmt.Errorf("%w: calls after finish are not recorded", ErrFinished)}
	case len(ro.calls)+len(ro.begun) >= c.cfg.MaxCalls:
		return nil, &server.Error{Op: "capture", Status: http.StatusTooManyRequests, Err: fmt.Errorf("capture: rollout %s has %d calls, the limit", ro.info.ID, c.cfg.MaxCalls)}
	}
	p := &pendingCall{c: c, ro: ro, hc: hc, id: fmt.Sprintf("c%d", ro.nextCall), received: hc.Received, header: recordedHeader(hc.Header),
		body: hc.Body, dialect: hc.Dialect, msgs: hc.Messages, tools: hc.Tools, kwargs: hc.TemplateKwargs}
	ro.nextCall++
	link := ro.link(hc.Messages, hc.Tools, hc.TemplateKwargs, c.eos)
	if link.parent != nil {
		delta, err := c.delta.EncodeDelta(tokenizer.ChatContext{Messages: hc.Messages[:link.answerAt+1], Tools: hc.Tools,
			AddGenerationPrompt: true, Extra: hc.TemplateKwargs}, hc.Messages[link.answerAt+1:])
		if err != nil {
			link = chainLink{why: fmt.Sprintf("continues %s, but the new messages have no delta: %v", link.parent.rec.ID, err)}
		} else {
			prompt := make([]int32, 0, len(link.parent.full)+len(delta))
			prompt = append(append(prompt, link.parent.full...), delta...)
			if hc.Vision != nil {
				// The delta's image blocks come collapsed from the
				// template; the parent's are expanded already.
				prompt, err = hc.Vision.Expand(prompt)
			}
			if err != nil {
				link = chainLink{why: fmt.Sprintf("continues %s, but its images do not fit the blocks of the parent's tokens and the delta: %v", link.parent.rec.ID, err)}
			} else {
				p.parent, p.delta = link.parent, prompt[len(link.parent.full):]
				hc.PromptIDs = prompt
			}
		}
	}
	if p.parent != nil {
		shareImages(p.parent.rec.Messages, hc.Messages)
	}
	p.why, p.ambiguous, p.prompt = link.why, link.ambiguous, hc.PromptIDs
	p.dispatched = c.cfg.Now()
	if c.shared != nil {
		// Replicas share the numbering: the store gives the id.
		id, end, err := c.shared.begin(ctx, ro.info.ID, p.dispatched.UTC())
		if err != nil {
			return nil, err
		}
		p.id = id
		ro.advance(end, 1)
	} else if err := c.cfg.Store.Append(ctx, ro.info.ID, false, Record{Kind: KindBegin, Time: p.dispatched.UTC(), CallID: p.id}); err != nil {
		// The intent is not synced: a crash before the answer is recorded
		// loses the answer too, and the sync of the call record covers it.
		return nil, err
	}
	ro.begun[p.id], ro.here[p.id] = true, true
	return p, nil
}

// shareImages points the images of msgs' history (the parent's messages,
// verified the same, each image the same source) at the parent's, so a
// rollout's index holds each image once however many calls resend it.
func shareImages(parent, msgs []chat.Message) {
	for i := range parent {
		for j := range parent[i].Parts {
			if im := parent[i].Parts[j].Image; im != nil && j < len(msgs[i].Parts) && msgs[i].Parts[j].Image != nil {
				msgs[i].Parts[j].Image = im
			}
		}
	}
}

// recordedHeader is h without the credentials.
func recordedHeader(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Authorization", "X-Api-Key", "Cookie", "Proxy-Authorization":
			continue
		}
		out[k] = v
	}
	return out
}

// pendingCall is a call between Begin and its record.
type pendingCall struct {
	c  *Capture
	ro *rollout
	// hc is httpapi's call, whose Params are final by Record.
	hc         *httpapi.Call
	id         string
	dialect    string
	header     map[string][]string
	body       []byte
	msgs       []chat.Message
	tools      []chat.ToolSchema
	kwargs     map[string]any
	parent     *callState
	delta      []int32
	prompt     []int32
	why        string
	ambiguous  []string
	received   time.Time
	dispatched time.Time
	// beginTime is what Begin took, for the capture latency.
	beginTime time.Duration
}

// Record implements httpapi.Recording: the call's answer is synced to the
// store before it returns.
func (p *pendingCall) Record(ctx context.Context, _ int, out server.TokenOutput, answer chat.Message) error {
	t0 := time.Now()
	ro := p.ro
	rec := &CallRecord{ID: p.id, Dialect: p.dialect, Request: append([]byte(nil), p.body...), Header: p.header,
		Messages: p.msgs, Tools: p.tools, TemplateKwargs: p.kwargs, Segment: p.why,
		SampledIDs: out.TokenIDs, Logprobs: out.Logprobs, StopReason: string(out.StopReason), WeightVersion: out.WeightVersion,
		Sampling: samplingOf(p.hc.Params), Answer: answer, Received: p.received.UTC(), Dispatched: p.dispatched.UTC(), Recorded: p.c.cfg.Now().UTC()}
	if p.parent != nil {
		rec.Parent, rec.DeltaIDs = p.parent.rec.ID, p.delta
		if rec.DeltaIDs == nil {
			rec.DeltaIDs = []int32{}
		}
	} else {
		rec.PromptIDs = p.prompt
	}
	if len(p.ambiguous) > 0 {
		rec.Segment = "ambiguous parent: also matches " + strings.Join(p.ambiguous, ", ")
	}
	if err := (Record{Kind: KindCall, Call: rec}).check(); err != nil {
		return err
	}
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.finished || ro.deleted {
		return fmt.Errorf("%w: the answer arrived after the rollout was finished, so it is not sent", ErrFinished)
	}
	t1 := time.Now()
	if err := p.c.appendTo(ctx, ro, true, Record{Kind: KindCall, Time: rec.Recorded, Call: rec}); err != nil {
		return err
	}
	p.c.stats.recordNanos.Add(int64(time.Since(t1)))
	p.c.stats.recorded.Add(1)
	delete(ro.begun, p.id)
	delete(ro.here, p.id)
	ro.add(rec, p.prompt)
	p.c.m.call(p.dialect, outRecorded)
	p.c.m.observe(p.beginTime + time.Since(t0))
	return nil
}

// indexed is rec as the in-memory index keeps it: what continuing it
// needs, without the request as received or the sampling (Rebuild reads
// the store).
func indexed(rec *CallRecord) *CallRecord {
	r := *rec
	r.Request, r.Header, r.Sampling = nil, nil, nil
	return &r
}

// Abort implements httpapi.Recording.
func (p *pendingCall) Abort(reason error) {
	// httpapi calls Abort once per call not recorded, also when Finish
	// already logged its abort.
	p.c.m.call(p.dialect, outAborted)
	ro := p.ro
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if !ro.begun[p.id] {
		return
	}
	delete(ro.begun, p.id)
	delete(ro.here, p.id)
	ro.ended[p.id] = true
	p.c.stats.aborted.Add(1)
	ro.aborted = append(ro.aborted, dropped{Call: p.id, Reason: "aborted: " + reason.Error()})
	if !ro.deleted {
		_ = p.c.appendTo(context.Background(), ro, false, Record{Kind: KindAbort, Time: p.c.cfg.Now().UTC(), CallID: p.id, Reason: reason.Error()})
	}
}

func checkFinite(field string, v float64) error {
	if v != v || v > 1e308 || v < -1e308 {
		return fmt.Errorf("capture: %s must be finite, got %v", field, v)
	}
	return nil
}
