package router

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/server"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake is a minimal engine whose calls can be held open, so tests control
// in-flight load exactly. Calls block while hold is non-nil and open.
type fake struct {
	name string

	mu      sync.Mutex
	calls   []string // request ids, in arrival order
	hold    chan struct{}
	started chan string // if set, receives each request id as its call starts
	err     error       // returned by every call when set
	tokens  []int32
}

func newFake(name string) *fake { return &fake{name: name, tokens: []int32{1, 2, 3}} }

func (f *fake) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req.RequestID)
	hold, started, err := f.hold, f.started, f.err
	f.mu.Unlock()
	if started != nil {
		started <- req.RequestID
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return server.TokenOutput{}, &server.Error{Server: f.name, Op: "generate", Err: ctx.Err()}
		}
	}
	if err != nil {
		return server.TokenOutput{}, err
	}
	return server.TokenOutput{TokenIDs: f.tokens, StopReason: server.StopEOS}, nil
}

func (f *fake) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *fake) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func retryableErr(name string) error {
	return &server.Error{Server: name, Op: "generate", Status: 503, Retryable: true, Err: server.ErrUnavailable}
}

func fatalErr(name string) error {
	return &server.Error{Server: name, Op: "generate", Err: fmt.Errorf("connection reset mid-response: %w", server.ErrUnavailable)}
}

func fakes(n int) ([]*fake, []Backend) {
	fs := make([]*fake, n)
	bs := make([]Backend, n)
	for i := range fs {
		fs[i] = newFake(fmt.Sprintf("s%d", i))
		bs[i] = Backend{Name: fs[i].name, Server: fs[i]}
	}
	return fs, bs
}

func statsByName(s Snapshot) map[string]ServerStats {
	m := make(map[string]ServerStats, len(s.Servers))
	for _, st := range s.Servers {
		m[st.Name] = st
	}
	return m
}

func isTyped(err error) bool {
	var se *server.Error
	return errors.As(err, &se)
}
