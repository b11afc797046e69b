package httpapi

import (
	"errors"
	"io"
	"sync"
)

// DefaultBodyMemory is Config.MaxBodyMemory when it and MaxBodyBytes are
// 0: four bodies of the largest size at once, server-wide.
const DefaultBodyMemory = 4 * DefaultMaxBodyBytes

// errBodyMemory is a body read refused because the bodies being read at
// once already hold Config.MaxBodyMemory bytes.
var errBodyMemory = errors.New("server busy: the request bodies being read at once hold the server's limit of body memory (MaxBodyMemory); retry later")

// bodyBudget counts the bytes of request bodies being read and decoded at
// once, server-wide (Config.MaxBodyMemory): each body's bytes are charged
// as they are read (into the reader's buffer, which exists either way:
// what a request holds grows only with what it keeps of the bytes read),
// and given back when its reading ends
// (its end, an error, or the handler's return). A read that would pass the
// limit fails at once and the request gets 429 with Retry-After, as for
// the in-flight limit: the client retries the same server later, which a
// 503 would tell a router not to.
type bodyBudget struct {
	mu          sync.Mutex
	held, limit int64
	peak        int64 // the most ever held (tests)
}

func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.limit {
		return false
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return true
}

func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// budgetBody is a request body whose bytes are charged to a bodyBudget.
type budgetBody struct {
	io.ReadCloser
	b    *bodyBudget
	mu   sync.Mutex
	held int64
	done bool
}

func (b *bodyBudget) wrap(body io.ReadCloser) *budgetBody {
	return &budgetBody{ReadCloser: body, b: b}
}

func (r *budgetBody) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return r.ReadCloser.Read(p)
	}
	n, err := r.ReadCloser.Read(p)
	if n > 0 && !r.b.take(int64(n)) {
		r.releaseLocked()
		return 0, errBodyMemory
	}
	r.held += int64(n)
	if err != nil {
		// The body's end or a failure: its reading is over.
		r.releaseLocked()
	}
	return n, err
}

// release gives the body's bytes back; further reads are not charged.
func (r *budgetBody) release() {
	r.mu.Lock()
	r.releaseLocked()
	r.mu.Unlock()
}

func (r *budgetBody) releaseLocked() {
	if !r.done {
		r.done = true
		r.b.give(r.held)
		r.held = 0
	}
}
