package httpapi

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
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
	if err := checkHosts(c.AllowedHosts); err != nil {
		return err
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
		if clean := filepath.Clean(d); clean != real {
			c.weightDirsAsGiven = append(c.weightDirsAsGiven, clean)
		}
	}
	c.AllowedWeightDirs = dirs
	return nil
}

func checkHosts(hosts []string) error {
	for i, h := range hosts {
		if h == "" || strings.ContainsAny(h, "/ ") {
			return fmt.Errorf("httpapi: Config.AllowedHosts[%d] = %q is not a host name", i, h)
		}
	}
	return nil
}

// ---- per-request checks ------------------------------------------------------

// access is who may call the server: the checks ServeHTTP makes first, and
// Guard makes for listeners of their own.
type access struct {
	token          string
	hosts, origins []string
}

func accessOf(c Config) access {
	return access{token: c.AuthToken, hosts: c.AllowedHosts, origins: c.AllowedOrigins}
}

// Guard returns h behind the checks the Server makes before any of its
// endpoints: the Origin and (without an auth token) Host checks against
// cross-site requests and DNS rebinding, and the bearer token when
// cfg.AuthToken is set. Only cfg's AuthToken, AllowedHosts and
// AllowedOrigins are read. It is for listeners of their own that serve
// what the Server knows (a metrics port): without it a rebinding page
// could read them.
func Guard(h http.Handler, cfg Config) (http.Handler, error) {
	if err := checkHosts(cfg.AllowedHosts); err != nil {
		return nil, err
	}
	a := accessOf(cfg)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.allow(w, r, errorWriterFor(r.URL.Path)) {
			h.ServeHTTP(w, r)
		}
	}), nil
}

// allow answers a request that may not call the server (421, 403 or 401)
// with fail, the error writer of the request's dialect, and returns false;
// else it returns true and writes nothing.
func (a access) allow(w http.ResponseWriter, r *http.Request, fail func(http.ResponseWriter, int, string)) bool {
	if code, msg := a.checkOrigin(r); code != 0 {
		fail(w, code, msg)
		return false
	}
	if a.token != "" && !a.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentrl"`)
		fail(w, http.StatusUnauthorized, "missing or wrong API token: send it as \"Authorization: Bearer <token>\" or \"x-api-key: <token>\"")
		return false
	}
	return true
}

// authorized accepts the token as a bearer token or as x-api-key (what
// Anthropic's clients send), compared in constant time.
func (a access) authorized(r *http.Request) bool {
	want := []byte(a.token)
	if k := r.Header.Get("X-Api-Key"); k != "" && subtle.ConstantTimeCompare([]byte(k), want) == 1 {
		return true
	}
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(h[len(prefix):]), want) == 1
}

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
func (a access) checkOrigin(r *http.Request) (int, string) {
	if a.token == "" && !a.hostAllowed(r.Host) {
		return http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not allowed: address this server by IP or localhost, or start it with an allowed host name (DNS-rebinding defence)", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return 0, ""
	}
	for _, o := range a.origins {
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

func (a access) hostAllowed(hostport string) bool {
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
	for _, h := range a.hosts {
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

// errWeightsOutside is the one answer for every path outside the allowed
// directories, whether it exists or not, is a file or a directory, or is
// reached through a symbolic link: a different answer (or the path echoed
// back) would tell a client what exists on the host.
var errWeightsOutside = &errWeightsPath{http.StatusForbidden,
	`field "model_path": not a path inside the directories this server may load weights from`}

// weightsPath checks that p lies inside one of Config.AllowedWeightDirs,
// first as written (cleaned, so ".." cannot climb out), then with symbolic
// links resolved, and returns the resolved path (so the engine opens what
// was checked, not a link that could be swapped). Nothing outside the
// allowed directories is looked at before the first check passes.
func (s *Server) weightsPath(p string) (string, *errWeightsPath) {
	if len(s.cfg.AllowedWeightDirs) == 0 {
		return "", &errWeightsPath{http.StatusForbidden,
			"loading weights from disk is disabled on this server: no directory is allowed (start it with -allow-weights-dir)"}
	}
	if !filepath.IsAbs(p) {
		return "", &errWeightsPath{http.StatusBadRequest, `field "model_path": not an absolute path`}
	}
	clean := filepath.Clean(p)
	if !s.insideWeightDirs(clean, true) {
		return "", errWeightsOutside
	}
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		// Missing: say so only when what is missing would be inside (the
		// deepest part that exists resolves inside); a link pointing out
		// of the directories gets the same answer whether its target
		// exists or not.
		have := clean
		for {
			if _, err := os.Lstat(have); err == nil {
				break
			}
			have = filepath.Dir(have)
		}
		if r, err := filepath.EvalSymlinks(have); err == nil && s.insideWeightDirs(r, false) {
			return "", &errWeightsPath{http.StatusBadRequest, `field "model_path": no such file or directory inside the allowed directories`}
		}
		return "", errWeightsOutside
	}
	if !s.insideWeightDirs(real, false) {
		return "", errWeightsOutside
	}
	return real, nil
}

// insideWeightDirs reports whether the clean absolute path p lies inside
// an allowed directory: as resolved, and (asWritten) as configured.
func (s *Server) insideWeightDirs(p string, asWritten bool) bool {
	dirs := s.cfg.AllowedWeightDirs
	if asWritten {
		dirs = append(slices.Clip(dirs), s.cfg.weightDirsAsGiven...)
	}
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
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
