package syncbuf_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/internal/syncbuf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConcurrentWrites: writes from many goroutines, read while they run
// (the race detector checks the lock), all arrive whole.
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "g%d-%d\n", g, i)
			}
		}()
	}
	for range 10 {
		_ = b.String()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	for g := range 8 {
		for i := range 100 {
			if w := fmt.Sprintf("g%d-%d", g, i); !seen[w] {
				t.Fatalf("line %q missing or torn", w)
			}
		}
	}
}

// A logger that a server's goroutines share writes into the buffer while
// the test reads it.
func Example() {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // keep the output stable
			}
			return a
		},
	}))
	logger.Warn("serving without an auth token", "addr", "0.0.0.0:8000")
	fmt.Print(logs.String())
	// Output:
	// level=WARN msg="serving without an auth token" addr=0.0.0.0:8000
}
