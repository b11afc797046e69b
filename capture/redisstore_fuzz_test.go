package capture

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeRedisEntries: a page of a rollout's list in Redis (written
// by any replica, or by anyone who can write to Redis) decodes to records
// whose invariants hold — the log's first entry, and only it, the
// rollout record naming this rollout — or to an ErrRecord error; never a
// panic. The input is the entries separated by newlines, its first byte
// choosing whether the page starts the log.
func FuzzDecodeRedisEntries(f *testing.F) {
	rollout := `{"kind":"rollout","time":"2026-01-01T00:00:00Z","rollout":{"id":"ro_1","key_sha256":"` + strings.Repeat("ab", 32) + `","created":"2026-01-01T00:00:00Z"}}`
	for _, s := range []string{
		"\x00" + rollout + "\n" + `{"kind":"begin","time":"2026-01-01T00:00:00Z","call_id":"c0"}`,
		"\x00" + strings.Replace(rollout, `"ro_1"`, `"ro_2"`, 1),
		"\x00" + `{"kind":"begin","call_id":"c0"}`,
		"\x01" + `{"kind":"call","call":{"id":"c1","parent":"c0","delta_ids":[9],"sampled_ids":[1],"answer":{}}}` + "\n" + `{"kind":"finish"}`,
		"\x01" + rollout,
		"\x01" + `{"kind":"reward","reward":1e400}`,
		"\x01" + `{"kind":"abort","call_id":"c3","reason":"client gone"}` + "\n" + `not json`,
		"\x00", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		from := 0
		if len(data) > 0 {
			from = int(data[0] % 3)
			data = data[1:]
		}
		var vals []string
		if len(data) > 0 {
			vals = strings.Split(string(data), "\n")
		}
		recs, err := decodeEntries("ro_1", from, vals)
		if err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("an error that is not ErrRecord: %v", err)
			}
			if !strings.Contains(err.Error(), "ro_1") {
				t.Fatalf("the error does not name the rollout: %v", err)
			}
			return
		}
		if len(recs) != len(vals) {
			t.Fatalf("%d records for %d entries", len(recs), len(vals))
		}
		for i, r := range recs {
			if (from+i == 0) != (r.Kind == KindRollout) {
				t.Fatalf("entry %d at %d is a %s record", i, from+i, r.Kind)
			}
			if r.Kind == KindRollout && r.Rollout.ID != "ro_1" {
				t.Fatalf("the log of ro_1 starts with rollout %q", r.Rollout.ID)
			}
			if err := r.check(); err != nil {
				t.Fatalf("a decoded record that fails its check: %v", err)
			}
		}
	})
}
