package capture

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/agentrl/agentrl/server"
)

// DefaultRedisPrefix is RedisOptions.Prefix's default.
const DefaultRedisPrefix = "agentrl:capture:"

// RedisOptions configure OpenRedis.
type RedisOptions struct {
	// Prefix starts every key the store uses (default
	// DefaultRedisPrefix): captures that must not share rollouts use
	// different prefixes on one Redis.
	Prefix string
	// AllowUnsynced accepts a Redis that does not fsync each write
	// (appendonly yes, appendfsync always). Without it OpenRedis refuses
	// such a server, because a crash of Redis could then lose a record
	// whose answer a harness already saw.
	AllowUnsynced bool
}

// RedisStore keeps the rollouts in Redis, so that several Captures —
// proxy replicas behind a load balancer — share them: any replica serves
// any call of any rollout (see "Replicas" in the package documentation). It needs one Redis
// primary (not Redis Cluster, whose multi-key scripts would need every
// key of a rollout in one slot, and not a read replica, which may lag).
//
// Each rollout is a list of records (the same JSON as DirStore's lines),
// appended by a Lua script that runs atomically in Redis and checks what
// replicas could race on: a rollout is created once, records go only to
// a rollout that exists (so a deleted rollout stays deleted), and no call
// is begun or recorded after its rollout was finished, whichever replica
// finished it. Every Append carries a random token that the script
// remembers, so an append that go-redis sends again after a lost reply
// (a duplicated delivery) is stored once. The key index maps a key's
// SHA-256 to its rollout: keys are never stored.
//
// Durability is Redis's: an Append returns once Redis applied it, and
// with appendfsync always that is after its fsync. OpenRedis checks the
// server's configuration (CONFIG GET) and refuses one that does not fsync
// each write unless RedisOptions.AllowUnsynced. Errors reaching Redis
// wrap server.ErrUnavailable, so harnesses get a 503 in their dialect's
// shape and no answer is sent unrecorded.
type RedisStore struct {
	rdb    *redis.Client
	prefix string
	addr   string
}

// OpenRedis connects to the Redis at url (redis://host:port/db,
// rediss://…, or unix:///path/to/socket?db=N, as go-redis parses them)
// and checks that it can keep records durably.
func OpenRedis(ctx context.Context, url string, opts RedisOptions) (*RedisStore, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("capture: redis URL: %w", err)
	}
	// No background goroutines: the maintenance notifications of managed
	// Redis services are not needed for a single primary.
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	o.DisableIdentity = true
	// Fail closed fast when Redis is down: a harness waits for the 503,
	// and the next call tries again. (Once every connection failed to
	// dial, go-redis probes once a second, so calls succeed again within
	// about a second of Redis coming back.)
	if o.DialerRetries == 0 {
		o.DialerRetries, o.DialerRetryTimeout = 2, 20*time.Millisecond
	}
	s := &RedisStore{rdb: redis.NewClient(o), prefix: opts.Prefix, addr: o.Addr}
	if s.prefix == "" {
		s.prefix = DefaultRedisPrefix
	}
	if err := s.check(ctx, opts.AllowUnsynced); err != nil {
		s.rdb.Close()
		return nil, err
	}
	return s, nil
}

// check pings the server and reads its persistence settings.
func (s *RedisStore) check(ctx context.Context, allowUnsynced bool) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return s.unavailable("connecting", err)
	}
	if allowUnsynced {
		return nil
	}
	cfg, err := s.rdb.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return fmt.Errorf("capture: redis at %s: reading its persistence settings (CONFIG GET): %w; set RedisOptions.AllowUnsynced to use it without the check", s.addr, err)
	}
	if cfg["appendonly"] != "yes" || cfg["appendfsync"] != "always" {
		return fmt.Errorf("capture: redis at %s does not fsync each write (appendonly %q, appendfsync %q; want yes and always): a crash of Redis could lose a record a harness saw; set RedisOptions.AllowUnsynced to use it anyway",
			s.addr, cfg["appendonly"], cfg["appendfsync"])
	}
	return nil
}

// Close closes the connections.
func (s *RedisStore) Close() error { return s.rdb.Close() }

// unavailable wraps an error reaching Redis: the harness gets a 503, the
// control API a 503, and the message names the server.
func (s *RedisStore) unavailable(op string, err error) error {
	return fmt.Errorf("%w: capture: redis store at %s: %s: %v", server.ErrUnavailable, s.addr, op, err)
}

// The keys of rollout id: its log (a list of records), its state (a hash:
// "state" open or finished, "key" the key index entry, "calls" the call
// counter), the tokens of the appends applied (a set).
func (s *RedisStore) keys(id string) []string {
	p := s.prefix + "ro:" + id + ":"
	return []string{p + "log", p + "meta", p + "tok", s.prefix + "ids", s.prefix + "open"}
}

func (s *RedisStore) keyIndex(digestHex string) string { return s.prefix + "key:" + digestHex }

// appendScript appends records atomically, refusing what replicas could
// race on. KEYS: log, meta, tok, ids, open[, key index]. ARGV: token, id,
// time (ms), then kind and JSON of each record. It returns the log's
// length after it and how many records it added there, or {0, -1} when
// this token's append was applied before (a duplicate); refusals are error
// replies starting with AGENTRL_EXISTS, AGENTRL_NOTFOUND or
// AGENTRL_FINISHED. It checks every record before it writes one, so a
// refused append writes nothing.
var appendScript = redis.NewScript(`
local log, meta, tok, ids, open = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local token, id, now = ARGV[1], ARGV[2], ARGV[3]
if redis.call('SISMEMBER', tok, token) == 1 then return {0, -1} end
local exists = redis.call('EXISTS', meta) == 1
local finished = exists and redis.call('HGET', meta, 'state') == 'finished'
local creating = false
local push = {}
for i = 4, #ARGV, 2 do
  local kind = ARGV[i]
  if kind == 'rollout' then
    if exists or creating or #KEYS < 6 then return redis.error_reply('AGENTRL_EXISTS rollout ' .. id .. ' exists already') end
    if redis.call('EXISTS', KEYS[6]) == 1 then return redis.error_reply('AGENTRL_EXISTS the key digest is in use') end
    creating = true
  elseif not exists and not creating then
    return redis.error_reply('AGENTRL_NOTFOUND rollout ' .. id .. ' has no log (never created, or deleted)')
  elseif finished and (kind == 'begin' or kind == 'call') then
    return redis.error_reply('AGENTRL_FINISHED rollout ' .. id .. ' is finished: no ' .. kind .. ' after it')
  end
  if not (finished and kind == 'finish') then push[#push + 1] = ARGV[i + 1] end
  if kind == 'finish' then finished = true end
end
if creating then
  redis.call('SET', KEYS[6], id)
  redis.call('SADD', ids, id)
  redis.call('HSET', meta, 'state', 'open', 'key', KEYS[6], 'calls', 0)
end
redis.call('SADD', tok, token)
if #push > 0 then redis.call('RPUSH', log, unpack(push)) end
if finished then
  redis.call('HSET', meta, 'state', 'finished')
  redis.call('ZREM', open, id)
else
  redis.call('ZADD', open, 'GT', now, id)
end
return {redis.call('LLEN', log), #push}
`)

// beginScript appends the begin record of a new call, numbering it
// from the rollout's counter (so replicas never give the same call id),
// and returns the call id and the log's length after it. A token names the begin, so one delivered
// twice (a lost reply) numbers and appends one call. KEYS: log, meta,
// open. ARGV: token, id, time (RFC 3339, as Go writes it), time (ms).
var beginScript = redis.NewScript(`
local log, meta, open = KEYS[1], KEYS[2], KEYS[3]
local token, id = ARGV[1], ARGV[2]
local prev = redis.call('HGET', meta, 'b:' .. token)
if prev then return {prev, 0} end
if redis.call('EXISTS', meta) == 0 then return redis.error_reply('AGENTRL_NOTFOUND rollout ' .. id .. ' has no log (never created, or deleted)') end
if redis.call('HGET', meta, 'state') == 'finished' then return redis.error_reply('AGENTRL_FINISHED rollout ' .. id .. ' is finished: no begin after it') end
local call = 'c' .. (redis.call('HINCRBY', meta, 'calls', 1) - 1)
redis.call('RPUSH', log, '{"kind":"begin","time":"' .. ARGV[3] .. '","call_id":"' .. call .. '"}')
redis.call('HSET', meta, 'b:' .. token, call)
redis.call('ZADD', open, 'GT', ARGV[4], id)
return {call, redis.call('LLEN', log)}
`)

// touchScript marks an open rollout used and says whether it had been
// idle too long first (1), or has no log (-1). KEYS: open, meta. ARGV:
// id, time (ms), idle timeout (ms).
var touchScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local prev = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not prev then return 0 end
if tonumber(ARGV[2]) - tonumber(prev) > tonumber(ARGV[3]) then return 1 end
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
return 0
`)

// deleteScript removes a rollout: its log, state, tokens, key index entry
// and listings. KEYS: log, meta, tok, ids, open. ARGV: id.
var deleteScript = redis.NewScript(`
local k = redis.call('HGET', KEYS[2], 'key')
if k then redis.call('DEL', k) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
return 'ok'
`)

// refusal maps the scripts' error replies to the package's errors, with
// the status a harness gets; other errors are Redis being unreachable.
func (s *RedisStore) refusal(op string, err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "AGENTRL_NOTFOUND "):
		return &server.Error{Op: "capture", Status: http.StatusNotFound, Err: fmt.Errorf("%w: %s", ErrNotFound, strings.TrimPrefix(msg, "AGENTRL_NOTFOUND "))}
	case strings.HasPrefix(msg, "AGENTRL_FINISHED "):
		return &server.Error{Op: "capture", Status: http.StatusConflict, Err: fmt.Errorf("%w: %s", ErrFinished, strings.TrimPrefix(msg, "AGENTRL_FINISHED "))}
	case strings.HasPrefix(msg, "AGENTRL_EXISTS "):
		return fmt.Errorf("capture: %s", strings.TrimPrefix(msg, "AGENTRL_EXISTS "))
	}
	return s.unavailable(op, err)
}

// Append implements Store. Every Append is durable when it returns (see
// RedisStore), so sync changes nothing.
func (s *RedisStore) Append(ctx context.Context, id string, _ bool, recs ...Record) error {
	_, _, err := s.appendAt(ctx, id, recs...)
	return err
}

// appendAt implements sharedStore.
func (s *RedisStore) appendAt(ctx context.Context, id string, recs ...Record) (end, added int, err error) {
	if !validID(id) {
		return 0, -1, fmt.Errorf("capture: invalid rollout id %q", id)
	}
	if len(recs) == 0 {
		return 0, -1, nil
	}
	token, err := newToken(16)
	if err != nil {
		return 0, -1, err
	}
	keys := s.keys(id)
	args := make([]any, 0, 3+2*len(recs))
	var last time.Time
	args = append(args, token, id, nil)
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return 0, -1, fmt.Errorf("capture: encoding a %s record: %w", r.Kind, err)
		}
		if len(b) > maxRecordBytes {
			return 0, -1, fmt.Errorf("capture: rollout %s: a %s record of %d bytes, over the %d limit", id, r.Kind, len(b), maxRecordBytes)
		}
		if r.Kind == KindRollout {
			if r.Rollout == nil || r.Rollout.ID != id || !validDigestHex(r.Rollout.KeySHA256) {
				return 0, -1, fmt.Errorf("capture: rollout %s: its rollout record must name it and hold a key digest", id)
			}
			keys = append(keys, s.keyIndex(r.Rollout.KeySHA256))
		}
		if r.Time.After(last) {
			last = r.Time
		}
		args = append(args, r.Kind, b)
	}
	args[2] = strconv.FormatInt(last.UnixMilli(), 10)
	res, err := appendScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return 0, -1, s.refusal("appending to rollout "+id, err)
	}
	if len(res) != 2 {
		return 0, -1, s.unavailable("appending to rollout "+id, fmt.Errorf("the script answered %v", res))
	}
	return int(res[0]), int(res[1]), nil
}

// redisPage is how many records one read fetches: reads are bounded by
// it times the record limit, whatever the rollout's length.
const redisPage = 128

// since returns id's records from index from on, and when the rollout was
// last used by any replica (zero when it is finished); fs.ErrNotExist
// (wrapped) when it has no log.
func (s *RedisStore) since(ctx context.Context, id string, from int) ([]Record, time.Time, error) {
	if !validID(id) {
		return nil, time.Time{}, fmt.Errorf("capture: invalid rollout id %q", id)
	}
	k := s.keys(id)
	var out []Record
	var used time.Time
	for first := true; ; first = false {
		pipe := s.rdb.Pipeline()
		var exists *redis.IntCmd
		var score *redis.FloatCmd
		if first {
			exists = pipe.Exists(ctx, k[1])
			score = pipe.ZScore(ctx, k[4], id)
		}
		page := pipe.LRange(ctx, k[0], int64(from), int64(from+redisPage-1))
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, time.Time{}, s.unavailable("reading rollout "+id, err)
		}
		if first {
			if exists.Val() == 0 {
				return nil, time.Time{}, fmt.Errorf("capture: rollout %s: %w", id, fs.ErrNotExist)
			}
			if ms, err := score.Result(); err == nil {
				used = time.UnixMilli(int64(ms))
			}
		}
		recs, err := decodeEntries(id, from, page.Val())
		if err != nil {
			return nil, time.Time{}, err
		}
		out = append(out, recs...)
		from += len(recs)
		if len(recs) < redisPage {
			return out, used, nil
		}
	}
}

// decodeEntries decodes the list entries of rollout id that start at
// index from: each a Record, the first of the log its rollout record
// naming id (so a log cannot pass for another rollout's).
func decodeEntries(id string, from int, vals []string) ([]Record, error) {
	out := make([]Record, 0, len(vals))
	for i, v := range vals {
		r, err := DecodeRecord([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("capture: rollout %s, record %d: %w", id, from+i+1, err)
		}
		if (from+i == 0) != (r.Kind == KindRollout) {
			return nil, fmt.Errorf("capture: rollout %s, record %d: %w: a log starts with its rollout record, and has only that one", id, from+i+1, ErrRecord)
		}
		if r.Kind == KindRollout && r.Rollout.ID != id {
			return nil, fmt.Errorf("capture: rollout %s, record 1: %w: it names rollout %q", id, ErrRecord, r.Rollout.ID)
		}
		out = append(out, r)
	}
	return out, nil
}

// Load implements Store.
func (s *RedisStore) Load(ctx context.Context, id string) ([]Record, error) {
	recs, _, err := s.since(ctx, id, 0)
	return recs, err
}

// List implements Store, a page at a time.
func (s *RedisStore) List(ctx context.Context) ([]string, error) {
	var ids []string
	var cursor uint64
	for {
		page, next, err := s.rdb.SScan(ctx, s.prefix+"ids", cursor, "", redisPage).Result()
		if err != nil {
			return nil, s.unavailable("listing rollouts", err)
		}
		for _, id := range page {
			if validID(id) {
				ids = append(ids, id)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	sort.Strings(ids)
	return slicesCompact(ids), nil
}

// slicesCompact drops adjacent duplicates (SSCAN may return a member
// twice).
func slicesCompact(ids []string) []string {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}

// Delete implements Store.
func (s *RedisStore) Delete(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("capture: invalid rollout id %q", id)
	}
	if err := deleteScript.Run(ctx, s.rdb, s.keys(id), id).Err(); err != nil {
		return s.unavailable("deleting rollout "+id, err)
	}
	return nil
}

// keyRollout returns the rollout whose key has digest d; "" when none.
func (s *RedisStore) keyRollout(ctx context.Context, d [32]byte) (string, error) {
	id, err := s.rdb.Get(ctx, s.keyIndex(hex.EncodeToString(d[:]))).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", s.unavailable("looking a key up", err)
	}
	if !validID(id) {
		return "", fmt.Errorf("capture: redis key index: %w: %q is not a rollout id", ErrRecord, id)
	}
	return id, nil
}

// begin implements sharedStore.
func (s *RedisStore) begin(ctx context.Context, id string, t time.Time) (string, int, error) {
	if !validID(id) {
		return "", 0, fmt.Errorf("capture: invalid rollout id %q", id)
	}
	token, err := newToken(16)
	if err != nil {
		return "", 0, err
	}
	k := s.keys(id)
	res, err := beginScript.Run(ctx, s.rdb, []string{k[0], k[1], k[4]}, token, id, t.Format(time.RFC3339Nano), t.UnixMilli()).Slice()
	if err != nil {
		return "", 0, s.refusal("beginning a call of rollout "+id, err)
	}
	var call string
	var end int64
	if len(res) == 2 {
		call, _ = res[0].(string)
		end, _ = res[1].(int64)
	}
	if !validID(call) {
		return "", 0, s.unavailable("beginning a call of rollout "+id, fmt.Errorf("the script answered %v", res))
	}
	return call, int(end), nil
}

// touch marks open rollout id used at t; it says whether it had been
// idle for longer than idle before. The error wraps ErrNotFound when the
// rollout has no log.
func (s *RedisStore) touch(ctx context.Context, id string, t time.Time, idle time.Duration) (bool, error) {
	k := s.keys(id)
	n, err := touchScript.Run(ctx, s.rdb, []string{k[4], k[1]}, id, t.UnixMilli(), idle.Milliseconds()).Int()
	if err != nil {
		return false, s.unavailable("marking rollout "+id+" used", err)
	}
	if n < 0 {
		return false, fmt.Errorf("%w: %s (deleted)", ErrNotFound, id)
	}
	return n == 1, nil
}

// idle returns up to max open rollouts last used before t.
func (s *RedisStore) idle(ctx context.Context, before time.Time, max int) ([]string, error) {
	ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.prefix + "open", ByScore: true,
		Start: "-inf", Stop: "(" + strconv.FormatInt(before.UnixMilli(), 10), Count: int64(max)}).Result()
	if err != nil {
		return nil, s.unavailable("listing idle rollouts", err)
	}
	out := ids[:0]
	for _, id := range ids {
		if validID(id) {
			out = append(out, id)
		}
	}
	return out, nil
}

func validDigestHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
