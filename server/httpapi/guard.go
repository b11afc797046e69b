package httpapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Defaults of the connection and request limits (Config fields of the same
// names). They are sized for one trainer driving a few hundred concurrent
// rollouts against one server.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultWriteTimeout      = 120 * time.Second
	DefaultMaxConns          = 4096
	DefaultMaxInFlight       = 2048
	// controlBodyLimit bounds the bodies of control endpoints, which are a
	// few fields: a large body there is an attack, not a request.
	controlBodyLimit = 1 << 20
)

// limitsDefaults fills the zero limits of c and rejects negative ones.
func (c *Config) limitsDefaults() error {
	durs := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ReadHeaderTimeout", &c.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"BodyTimeout", &c.BodyTimeout, DefaultBodyTimeout},
		{"IdleTimeout", &c.IdleTimeout, DefaultIdleTimeout},
		{"WriteTimeout", &c.WriteTimeout, DefaultWriteTimeout},
	}
	for _, d := range durs {
		switch {
		case *d.v < 0:
			return fmt.Errorf("httpapi: Config.%s is negative (%v)", d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxConns", &c.MaxConns, DefaultMaxConns},
		{"MaxInFlight", &c.MaxInFlight, DefaultMaxInFlight},
	}
	for _, n := range ints {
		switch {
		case *n.v < 0:
			return fmt.Errorf("httpapi: Config.%s is negative (%d)", n.name, *n.v)
		case *n.v == 0:
			*n.v = n.def
		}
	}
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("httpapi: Config.MaxBodyBytes is negative (%d)", c.MaxBodyBytes)
	}
	for i, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ ") {
			return fmt.Errorf("httpapi: Config.AllowedHosts[%d] = %q is not a host name", i, h)
		}
	}
	dirs := make([]string, len(c.AllowedWeightDirs))
	for i, d := range c.AllowedWeightDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("httpapi: Config.AllowedWeightDirs[%d] = %q is not an absolute path", i, d)
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fmt.Errorf("httpapi: Config.AllowedWeightDirs[%d]: %w", i, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return fmt.Errorf("httpapi: Config.AllowedWeightDirs[%d] = %q is not a directory", i, d)
		}
		dirs[i] = real
	}
	c.AllowedWeightDirs = dirs
	return nil
}

// ---- per-request checks ------------------------------------------------------

// checkOrigin is the defence against cross-site requests from a browser on
// a machine that can reach the server: CSRF (a page POSTing to
// 127.0.0.1) and DNS rebinding (a page whose own host name resolves to
// 127.0.0.1, so that its requests are same-origin to the browser).
//
//   - A request carrying an Origin header (browsers send it on every
//     cross-origin request and every POST) must come from the server's own
//     origin or one of Config.AllowedOrigins.
//   - Without an auth token, the Host header must name the server by an IP
//     address, "localhost", or one of Config.AllowedHosts: a rebinding
//     page's requests carry the attacker's host name. With a token the
//     check is off: a browser cannot attach the bearer token on its own.
func (s *Server) checkOrigin(r *http.Request) (int, string) {
	if s.cfg.AuthToken == "" && !s.hostAllowed(r.Host) {
		return http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not allowed: address this server by IP or localhost, or start it with an allowed host name (DNS-rebinding defence)", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return 0, ""
	}
	for _, o := range s.cfg.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return 0, ""
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return http.StatusForbidden, fmt.Sprintf("cross-origin request from %q refused", origin)
	}
	return 0, ""
}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") {
		// No Host (HTTP/1.0) or an address: a rebinding page cannot make
		// the browser send an IP literal as the Host of its own origin.
		return true
	}
	for _, h := range s.cfg.AllowedHosts {
		if h == "*" || strings.EqualFold(h, host) || strings.EqualFold(h, hostport) {
			return true
		}
	}
	return false
}

// control wraps a control endpoint (sleep, weights, abort, flush, pause):
// its body must be declared JSON. A browser can send text/plain and form
// posts (and bodiless posts without a type) cross-site without asking the
// server first; application/json needs a CORS preflight that this server
// never grants.
//
// A POST with no body and no type is taken too: SGLang's own clients and
// verl send exactly that (requests.post(url)). A browser sends it
// cross-site only with an Origin (refused in checkOrigin unless allowed)
// and a Sec-Fetch-Site of cross-site or same-site, refused here.
func (s *Server) control(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if ct == "" && r.ContentLength == 0 {
			if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
				writeError(w, http.StatusForbidden, fmt.Sprintf("%s is a control endpoint: a %s browser request is refused", r.URL.Path, site))
				return
			}
			h(w, r)
			return
		}
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType,
				fmt.Sprintf("%s is a control endpoint: it needs Content-Type: application/json (got %q)", r.URL.Path, r.Header.Get("Content-Type")))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, min(s.cfg.MaxBodyBytes, controlBodyLimit))
		h(w, r)
	}
}

// errWeightsPath is a weight path the server refuses to load.
type errWeightsPath struct {
	status int
	msg    string
}

// weightsPath checks that p lies inside one of Config.AllowedWeightDirs
// once symbolic links are resolved, and returns the resolved path (so the
// engine opens what was checked, not a link that could be swapped).
func (s *Server) weightsPath(p string) (string, *errWeightsPath) {
	if len(s.cfg.AllowedWeightDirs) == 0 {
		return "", &errWeightsPath{http.StatusForbidden,
			"loading weights from disk is disabled on this server: no directory is allowed (start it with -allow-weights-dir)"}
	}
	if !filepath.IsAbs(p) {
		return "", &errWeightsPath{http.StatusBadRequest, fmt.Sprintf(`field "model_path": %q is not an absolute path`, p)}
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", &errWeightsPath{http.StatusBadRequest, fmt.Sprintf(`field "model_path": %v`, err)}
	}
	for _, d := range s.cfg.AllowedWeightDirs {
		if rel, err := filepath.Rel(d, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return real, nil
		}
	}
	return "", &errWeightsPath{http.StatusForbidden,
		fmt.Sprintf(`field "model_path": %q is outside the directories this server may load weights from`, p)}
}

// ---- body read deadline ------------------------------------------------------

// deadlineBody clears the connection's read deadline once the whole body
// has been read: the server keeps reading the connection in the background
// to notice a client that goes away, and that read must not time out while
// a long generation runs. After any other error the deadline stays, so the
// server's discarding of an unread rest times out too.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// isTimeout reports a body read that ran past Config.BodyTimeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writeDeadline sets the write deadline when the response starts, so a
// client that stops reading cannot hold its handler (and the engine's
// output) forever; generation time before it does not count.
type writeDeadline struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
}

func (w *writeDeadline) WriteHeader(code int) {
	if !w.started {
		w.started = true
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writeDeadline) Write(b []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *writeDeadline) Flush() {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	_ = w.rc.Flush()
}

func (w *writeDeadline) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ---- connection limit ----------------------------------------------------------

// limitListener accepts at most n connections at a time; further ones wait
// in the kernel's backlog until one closes (idle, header and body timeouts
// make sure slots come free).
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the listener and unblocks an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// isLoopback reports whether the listener's address is on a loopback
// interface only.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP != nil && tcp.IP.IsLoopback()
}
