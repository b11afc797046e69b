package capture_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
)

// stores are the embedded stores, each opened (again) on the same place.
var stores = []struct {
	name string
	open func(t *testing.T, dir string) (capture.Store, func() error, string)
}{
	{"dir", func(t *testing.T, dir string) (capture.Store, func() error, string) {
		s, err := capture.OpenDir(dir)
		require.NoError(t, err)
		return s, s.Close, filepath.Join(dir, "ro_a.jsonl")
	}},
	{"log", func(t *testing.T, dir string) (capture.Store, func() error, string) {
		s, err := capture.OpenLog(filepath.Join(dir, "capture.log"))
		require.NoError(t, err)
		return s, s.Close, filepath.Join(dir, "capture.log")
	}},
}

func rolloutRec(id string) capture.Record {
	return capture.Record{Kind: capture.KindRollout, Rollout: &capture.RolloutInfo{ID: id, KeySHA256: strings.Repeat("ab", 32)}}
}

func TestStores(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s, closeFn, file := st.open(t, dir)
			var wg sync.WaitGroup
			for _, id := range []string{"ro_a", "ro_b"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					require.NoError(t, s.Append(ctx, id, true, rolloutRec(id)))
					for range 20 {
						require.NoError(t, s.Append(ctx, id, true, capture.Record{Kind: capture.KindBegin, CallID: "c"}))
					}
				}()
			}
			wg.Wait()
			ids, err := s.List(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"ro_a", "ro_b"}, ids)
			recs, err := s.Load(ctx, "ro_b")
			require.NoError(t, err)
			require.Len(t, recs, 21)
			require.Equal(t, "ro_b", recs[0].Rollout.ID)
			_, err = s.Load(ctx, "ro_none")
			require.ErrorIs(t, err, fs.ErrNotExist)
			require.NoError(t, s.Delete(ctx, "ro_b"))
			ids, err = s.List(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"ro_a"}, ids)
			require.Error(t, s.Append(ctx, "../x", true, rolloutRec("ro_a")))
			require.NoError(t, closeFn())

			// A crash mid-write leaves half a line: ignored on reopen,
			// then cut before the next append.
			f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(`{"rollout":"ro_a","record":{"kind":"call","call":{"id":"c0","sampled_ids":[1,2`)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			s, closeFn, _ = st.open(t, dir)
			defer closeFn()
			recs, err = s.Load(ctx, "ro_a")
			require.NoError(t, err)
			require.Len(t, recs, 21)
			require.NoError(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindFinish}))
			recs, err = s.Load(ctx, "ro_a")
			require.NoError(t, err)
			require.Len(t, recs, 22)
			require.Equal(t, capture.KindFinish, recs[21].Kind)
			ids, err = s.List(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"ro_a"}, ids, "a deletion survives a reopen")
		})
	}
}

// The whole capture path over the shared log.
func TestOpenAIClientConversationOverTheLogStore(t *testing.T) {
	tok := qwen(t)
	sc := newScript(t, tok, weatherReplies...)
	var log *capture.LogStore
	r := newRigWith(t, tok, sc.Rule, func(c *capture.Config) {
		var err error
		log, err = capture.OpenLog(filepath.Join(t.TempDir(), "capture.log"))
		require.NoError(t, err)
		c.Store = log
	})
	defer log.Close()
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	runWeather(t, r.client(ro.OpenAIBaseURL, ro.Key), true)
	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	require.Equal(t, 3, trajs[0].NumTurns)
	require.Equal(t, 1.0, rep.Delivered)
}

// The log is preallocated: a crash (no Close) leaves zero padding after
// the last record, and maybe a record torn inside it — its start, or,
// when the kernel wrote its pages out of order, only its end. Reopening
// keeps every whole record before the first damaged line, cuts the
// rest, and appends after it; Close leaves only records.
func TestLogStoreCrashInsideThePadding(t *testing.T) {
	ctx := context.Background()
	for name, torn := range map[string]func(end int64) (string, int64){
		"padding only": func(int64) (string, int64) { return "", 0 },
		"torn start":   func(end int64) (string, int64) { return `{"rollout":"ro_a","record":{"kind":"beg`, end },
		"torn end":     func(end int64) (string, int64) { return `in","call_id":"c9"}}` + "\n", end + 4096 },
		"whole unsynced record after a torn one": func(end int64) (string, int64) {
			return `{"rollout":"ro_a","record":{"kind":"begin","call_id":"c9"}}` + "\n", end + 100
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "capture.log")
			s, err := capture.OpenLog(path)
			require.NoError(t, err)
			require.NoError(t, s.Append(ctx, "ro_a", true, rolloutRec("ro_a")))
			for range 3 {
				require.NoError(t, s.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindBegin, CallID: "c"}))
			}
			recs, err := s.Load(ctx, "ro_a")
			require.NoError(t, err)
			require.Len(t, recs, 4)
			// The crash: the file as the process left it, never closed.
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			end := int64(strings.LastIndexByte(string(data), '\n') + 1)
			require.Greater(t, int64(len(data)), end, "the log is padded")
			require.Equal(t, strings.Repeat("\x00", len(data)-int(end)), string(data[end:]))
			text, at := torn(end)
			require.Less(t, at+int64(len(text)), int64(len(data)))
			copy(data[at:], text)
			crashed := filepath.Join(t.TempDir(), "capture.log")
			require.NoError(t, os.WriteFile(crashed, data, 0o600))

			s2, err := capture.OpenLog(crashed)
			require.NoError(t, err)
			recs, err = s2.Load(ctx, "ro_a")
			require.NoError(t, err)
			require.Len(t, recs, 4)
			require.NoError(t, s2.Append(ctx, "ro_a", true, capture.Record{Kind: capture.KindFinish}))
			recs, err = s2.Load(ctx, "ro_a")
			require.NoError(t, err)
			require.Len(t, recs, 5)
			require.Equal(t, capture.KindFinish, recs[4].Kind)
			require.NoError(t, s2.Close())
			after, err := os.ReadFile(crashed)
			require.NoError(t, err)
			require.Equal(t, string(data[:end]), string(after[:end]))
			require.NotContains(t, string(after), "\x00")
			require.Equal(t, 5, strings.Count(string(after), "\n"))
			require.NoError(t, s.Close())
		})
	}
}
