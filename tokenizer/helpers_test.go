package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dlclark/regexp2"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Shared test data lives next to the repository: ../shared from the repo
// root. Tests that need it skip when it is absent, except under CI=1,
// where it must be there (see needShared).
const (
	sharedGolden = "../../shared/golden"
	llamaDir     = "../../shared/testdata/tokenizers/llama3_1"
)

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
	qwenDir  string

	llamaOnce sync.Once
	llamaTok  *Tokenizer
	llamaErr  error
)

// qwenTokDir unpacks the committed Qwen3 tokenizer files into a directory.
func qwenTokDir(t testing.TB) string {
	t.Helper()
	qwenOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentrl-qwen3-")
		if err != nil {
			qwenErr = err
			return
		}
		qwenDir = dir
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
			if err := gunzipFile(filepath.Join("testdata", "qwen3", name+".gz"), filepath.Join(dir, name)); err != nil {
				qwenErr = err
				return
			}
		}
		qwenTok, qwenErr = Load(dir)
	})
	require.NoError(t, qwenErr)
	return qwenDir
}

func qwen(t testing.TB) *Tokenizer {
	t.Helper()
	qwenTokDir(t)
	return qwenTok
}

func llama(t testing.TB) *Tokenizer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(llamaDir, "tokenizer.json")); err != nil {
		needShared(t, "Llama-3.1 tokenizer not present in ../shared/testdata/tokenizers")
	}
	llamaOnce.Do(func() { llamaTok, llamaErr = Load(llamaDir) })
	require.NoError(t, llamaErr)
	return llamaTok
}

func gunzipFile(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func readGunzip(t testing.TB, src string) []byte {
	t.Helper()
	f, err := os.Open(src)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	return b
}

// needShared skips a test whose ../shared data is absent, or fails it
// under CI=1: CI always has the shared data, so a missing file there is a
// broken setup, not a reason to check less.
func needShared(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI=1: the shared test data must be present)", msg)
	}
	t.Skip(msg)
}

// readJSONL decodes each line of a JSONL file into a new T. A golden
// under ../shared that is absent skips the test (see needShared); a
// committed one (testdata/) that is absent, or any file without a record,
// fails it, so that a lost or emptied golden cannot pass by checking
// nothing.
func readJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) && strings.HasPrefix(path, sharedGolden) {
		needShared(t, path+" not present")
	}
	require.NoError(t, err)
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var v T
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), "%s: %s", path, sc.Text())
		out = append(out, v)
	}
	require.NoError(t, sc.Err())
	if len(out) == 0 {
		t.Fatalf("%s has no records", path)
	}
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if qwenDir != "" {
		os.RemoveAll(qwenDir)
	}
	if code == 0 {
		// regexp2 keeps one clock goroutine while match timeouts are
		// pending (tokenizer regexes without a fast matcher); it ends on
		// its own a second after the last match. The library's test hook
		// stops it now.
		regexp2.StopTimeoutClock()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
