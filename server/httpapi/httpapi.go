package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/server"
)

// DefaultMaxBodyBytes is the request body limit when Config.MaxBodyBytes is 0:
// room for prompts of a few million token ids.
const DefaultMaxBodyBytes = 64 << 20

// Config configures a Server. The zero value serves on a free port of
// 127.0.0.1 with no auth and the default body limit.
type Config struct {
	// Addr is the listen address for Start; default "127.0.0.1:0". Binding
	// another interface must be asked for explicitly.
	Addr string
	// AuthToken, when set, is required on every request as
	// "Authorization: Bearer <AuthToken>" or "x-api-key: <AuthToken>"
	// (Anthropic's clients send the latter).
	AuthToken string
	// MaxBodyBytes limits request bodies; larger ones get 413.
	MaxBodyBytes int64
	// MaxBodyMemory caps the bytes of all request bodies being read at
	// once, server-wide: a body's bytes count from its first byte until
	// it is read to its end (or its handler returns). A read past the cap
	// fails and the request gets 429 with Retry-After. Default 4 ×
	// MaxBodyBytes (DefaultBodyMemory with the default body limit); at
	// least MaxBodyBytes.
	MaxBodyMemory int64
	// Model is the model name reported by /model_info, /v1/models and OpenAI
	// responses; default "agentrl".
	Model string
	// Chat enables text prompts on the native endpoints and the OpenAI
	// chat endpoint; nil leaves them answering 400/404.
	Chat *Chat
	// MaxModelLen is the engine's context length in tokens (prompt plus
	// completion); 0 means unknown. When set, a request whose prompt plus
	// max_tokens exceeds it gets 400 as on vLLM, and an OpenAI request
	// without max_tokens gets what is left of the context.
	MaxModelLen int
	// ModelPath is where the model was loaded from, reported as
	// model_path by /get_model_info and /get_server_info; default Model.
	ModelPath string

	// ReadHeaderTimeout bounds reading a request's headers, BodyTimeout
	// its body, IdleTimeout a kept-alive connection's wait for the next
	// request, WriteTimeout writing a response once it starts (generation
	// time does not count). Defaults: the Default* constants.
	ReadHeaderTimeout, BodyTimeout, IdleTimeout, WriteTimeout time.Duration
	// MaxConns caps open connections (Start only); further ones wait in
	// the listen backlog. MaxInFlight caps requests being handled (health
	// and other GET endpoints excepted); further ones get 429. Defaults
	// DefaultMaxConns and DefaultMaxInFlight.
	MaxConns, MaxInFlight int
	// AllowedHosts are host names (besides IP addresses and "localhost")
	// that requests may address the server by when it has no AuthToken;
	// "*" allows any (turning the DNS-rebinding defence off).
	AllowedHosts []string
	// AllowedOrigins are browser origins ("https://ui.example") allowed to
	// call the server besides its own; "*" allows any.
	AllowedOrigins []string
	// AllowedWeightDirs are the directories /update_weights_from_disk may
	// load from (symbolic links resolved); none refuses every such load.
	// A path is checked as written first (cleaned), then resolved; every
	// path outside gets one answer, whether it exists or not.
	AllowedWeightDirs []string
	// weightDirsAsGiven are the AllowedWeightDirs as configured (cleaned)
	// where they differ from their resolved form, for the check of a path
	// as written.
	weightDirsAsGiven []string
	// Logger receives warnings (an unauthenticated server bound beyond
	// loopback); default slog.Default().
	Logger *slog.Logger
	// LogRequests logs every request on Logger at Info when it is answered:
	// method, path, status, response bytes, duration and client address
	// (never headers or bodies, so no tokens or prompts).
	LogRequests bool
	// Metrics, when set, answers GET /metrics on the API port (SGLang and
	// vLLM serve their Prometheus metrics there); nil answers 404.
	Metrics http.Handler
	// SessionKeys are where the chat, Responses and Messages endpoints
	// read a conversation key from, first match wins: "header:NAME" or
	// "body:FIELD.PATH" (nested object keys). A request without its own
	// request_id uses the key as its engine request id, which is the
	// router's sticky key, so a harness's calls stay on one server. nil
	// means DefaultSessionKeys; an empty non-nil list turns this off.
	SessionKeys []string
	// ClampMaxTokens, when set with MaxModelLen, lowers a budget
	// (max_tokens and its dialect names) that the prompt leaves no room
	// for to what the context has left, instead of answering 400: agent
	// harnesses ask for their own configured budget (up to 32,000)
	// whatever the served context. Off by default, as vLLM.
	ClampMaxTokens bool
	// Recorder, when set, is told of every chat, Responses and Messages
	// call and records its answer before the answer is complete on the
	// wire (see Recorder).
	Recorder Recorder
}

// Server serves an engine over HTTP. Use it as an http.Handler, or Start it
// on its own listener.
type Server struct {
	engine server.LLMServer
	cfg    Config
	mux    *http.ServeMux

	// base is the parent of every request context: cancelling it aborts
	// every in-flight request (Close, Shutdown past its deadline).
	base       context.Context
	cancelBase context.CancelFunc
	// gate orders handler registration before the final wait: once
	// stopping is set (under the write lock) no handler is added.
	gate     sync.RWMutex
	stopping bool
	handlers sync.WaitGroup

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	serving  chan struct{} // closed when the Serve goroutine returned
	serveEr  error
	sleeping bool // as last set through /sleep, /release_memory_occupation, /wake_up

	inflight chan struct{} // a slot per request being handled (MaxInFlight)
	bodies   *bodyBudget   // bytes of the bodies being read (MaxBodyMemory)
	access   access        // who may call: Host, Origin, token
	created  time.Time     // reported as the model's "created"
	versions weightVersions

	sessionSources []sessionSource // Config.SessionKeys, parsed
}

// New returns a Server for engine. It does not listen: call Start, or mount
// it as a handler.
func New(engine server.LLMServer, cfg Config) (*Server, error) {
	if engine == nil {
		return nil, errors.New("httpapi: nil engine")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if err := cfg.limitsDefaults(); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	switch {
	case cfg.MaxBodyMemory == 0:
		cfg.MaxBodyMemory = 4 * cfg.MaxBodyBytes
	case cfg.MaxBodyMemory < cfg.MaxBodyBytes:
		return nil, fmt.Errorf("httpapi: Config.MaxBodyMemory (%d) is below MaxBodyBytes (%d): a body of the largest size could never be read", cfg.MaxBodyMemory, cfg.MaxBodyBytes)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Model == "" {
		cfg.Model = "agentrl"
	}
	if cfg.Chat != nil {
		if err := cfg.Chat.validate(); err != nil {
			return nil, err
		}
	}
	keys := cfg.SessionKeys
	if keys == nil {
		keys = DefaultSessionKeys
	}
	sources, err := parseSessionKeys(keys)
	if err != nil {
		return nil, err
	}
	s := &Server{engine: engine, cfg: cfg, mux: http.NewServeMux(), inflight: make(chan struct{}, cfg.MaxInFlight), created: time.Now(),
		sessionSources: sources, bodies: &bodyBudget{limit: cfg.MaxBodyMemory}, access: accessOf(cfg)}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

// Start creates a Server and starts serving it (see (*Server).Start).
func Start(engine server.LLMServer, cfg Config) (*Server, error) {
	s, err := New(engine, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start listens on Config.Addr and serves in a goroutine owned by s until
// Shutdown or Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("httpapi: listen %s: %w", s.cfg.Addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil || s.base.Err() != nil {
		ln.Close()
		return errors.New("httpapi: server already started or stopped")
	}
	if !isLoopback(ln.Addr()) && s.cfg.AuthToken == "" {
		s.cfg.Logger.Warn("httpapi: serving beyond loopback without an auth token: anyone who can reach this address can generate, sleep the engine and load weights from the allowed directories",
			"addr", ln.Addr().String())
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.base },
		// net/http's own diagnostics (a handler's panic, accept errors)
		// go to Logger, not to the standard log package's stderr.
		ErrorLog: slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelError),
	}
	ln = newLimitListener(ln, s.cfg.MaxConns)
	s.serving = make(chan struct{})
	go func() {
		defer close(s.serving)
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.mu.Lock()
		s.serveEr = err
		s.mu.Unlock()
	}()
	return nil
}

// Addr returns the listening address ("127.0.0.1:41234"), or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL returns "http://" + Addr().
func (s *Server) URL() string { return "http://" + s.Addr() }

// Shutdown stops accepting connections and waits for in-flight requests to
// finish. When ctx ends first, the in-flight requests are cancelled (the
// engine sees their contexts end, so it aborts them) and Shutdown waits for
// their handlers to return before returning ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, serving := s.srv, s.serving
	s.mu.Unlock()
	if srv == nil {
		// Mounted elsewhere: refuse new requests, let running ones finish
		// until ctx ends, then cancel them.
		s.stop()
		done := make(chan struct{})
		go func() {
			s.handlers.Wait()
			close(done)
		}()
		var err error
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		s.cancelBase()
		<-done
		return err
	}
	err := srv.Shutdown(ctx)
	s.stop()
	if err != nil {
		s.cancelBase()
		s.handlers.Wait()
		srv.Close()
	}
	<-serving
	s.cancelBase()
	return err
}

// Close stops at once: the listener and every connection are closed and
// in-flight requests cancelled, as if the process died. It waits for the
// handlers to return.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, serving := s.srv, s.serving
	s.mu.Unlock()
	var err error
	if srv != nil {
		// Connections first, so no handler gets to answer.
		err = srv.Close()
	}
	s.stop()
	s.cancelBase()
	if srv != nil {
		<-serving
	}
	s.handlers.Wait()
	return err
}

// stop makes ServeHTTP refuse new requests, so that handlers.Wait cannot
// race with a handlers.Add.
func (s *Server) stop() {
	s.gate.Lock()
	s.stopping = true
	s.gate.Unlock()
}

// ServeHTTP implements http.Handler: origin and host checks, auth, the
// in-flight limit, body limits and deadlines, routing.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := errorWriterFor(r.URL.Path)
	s.gate.RLock()
	if s.stopping {
		s.gate.RUnlock()
		fail(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	s.handlers.Add(1)
	s.gate.RUnlock()
	defer s.handlers.Done()
	if s.cfg.LogRequests {
		lw := &loggedWriter{ResponseWriter: w, status: http.StatusOK}
		w = lw
		defer s.logRequest(r, lw, time.Now())
	}
	rc := http.NewResponseController(w)
	w = &writeDeadline{ResponseWriter: w, rc: rc, timeout: s.cfg.WriteTimeout}
	if !s.access.allow(w, r, fail) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// Health checks and other reads stay answered under load.
		select {
		case s.inflight <- struct{}{}:
			defer func() { <-s.inflight }()
		default:
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusTooManyRequests, fmt.Sprintf("server busy: %d requests in flight (the limit); retry later", s.cfg.MaxInFlight))
			return
		}
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		b := s.bodies.wrap(r.Body)
		defer b.release()
		r.Body = b
	}
	// Requests must also end when the server is closed, also when the
	// handler is mounted elsewhere.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.base, cancel)
	defer stop()
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.unrouted(w, r, fail)
		return
	}
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

// unrouted answers a request no endpoint takes: 404, or 405 with Allow
// when the path exists under other methods (the mux decides which), as
// JSON in the path's dialect rather than net/http's plain text, which
// harnesses print as "404 404 page not found".
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request, fail func(http.ResponseWriter, int, string)) {
	h, _ := s.mux.Handler(r)
	rec := &statusRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if allow := rec.header.Get("Allow"); rec.status == http.StatusMethodNotAllowed && allow != "" {
		w.Header().Set("Allow", allow)
		fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
		return
	}
	fail(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s): this server has no such endpoint", r.Method, r.URL.Path))
}

// statusRecorder keeps the status and headers a handler writes, and drops
// its body.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header { return r.header }

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(b), nil
}

// errorWriterFor is the error writer of the dialect that path speaks:
// Anthropic's shape under /v1/messages, else OpenAI's (which SGLang,
// vLLM and Responses clients read).
func errorWriterFor(path string) func(http.ResponseWriter, int, string) {
	if path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/") {
		return writeAnthropicError
	}
	return writeError
}

// ---- shared helpers ------------------------------------------------------

// errorBody is the OpenAI error shape, which SGLang and vLLM also use.
type errorBody struct {
	Error errorDetail `json:"error"`
}

// errorDetail is OpenAI's error object: message, type, param (the request
// field at fault, or null) and code (a short string such as
// "model_not_found", or null), as the official clients read it
// (openai/openai-go internal/apierror: Error.Code and Error.Param are
// strings). SGLang and vLLM write the HTTP status as an integer code; the
// clients here only read the message and the status line.
type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeErrorCode(w, status, msg, "")
}

// writeErrorCode writes an error with an OpenAI error code ("" for null).
// The param is the field a message names first (`field "x": ...`).
func writeErrorCode(w http.ResponseWriter, status int, msg, code string) {
	typ := "server_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == http.StatusServiceUnavailable:
		typ = "service_unavailable"
	case status >= 400 && status < 500:
		typ = "invalid_request_error"
	}
	d := errorDetail{Message: msg, Type: typ}
	if code == "model_not_found" {
		param := "model"
		d.Param = &param
	} else if param, ok := fieldOf(msg); ok {
		d.Param = &param
		if code == "" {
			code = "invalid_value"
		}
	}
	if code == "" && status == http.StatusTooManyRequests {
		code = "rate_limit_exceeded"
	}
	if code != "" {
		d.Code = &code
	}
	writeJSON(w, status, errorBody{Error: d})
}

// fieldOf returns the request field an error message names: every request
// error here starts `field "name": ...` when one field is at fault.
func fieldOf(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, `field "`)
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '"')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "httpapi: encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// statusOf maps an engine error to the HTTP status the clients map back to
// the same sentinel.
func statusOf(err error) int {
	switch {
	case errors.Is(err, server.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, server.ErrOverloaded):
		return http.StatusTooManyRequests
	case errors.Is(err, server.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, errors.ErrUnsupported):
		// A capability the engine has only in part (a pause mode).
		return http.StatusNotImplemented
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		// Only the client (which is gone) or Close sees this.
		return http.StatusServiceUnavailable
	}
	var se *server.Error
	if errors.As(err, &se) && se.Status >= 400 && se.Status <= 599 {
		return se.Status
	}
	return http.StatusInternalServerError
}

func writeEngineError(w http.ResponseWriter, err error) {
	writeError(w, statusOf(err), err.Error())
}

// errRequest is a request the handler rejects with 400 (or 413).
type errRequest struct {
	status int
	msg    string
	code   string // OpenAI error code, "" for the default
}

func (e *errRequest) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &errRequest{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// decodeJSON reads a JSON body into v. Errors name the field and offset.
func decodeJSON(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	return unmarshalBody(data, v)
}

func unmarshalBody(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return badRequest("empty request body: expected a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return badRequest("field %q: expected %s, got JSON %s (byte offset %d)", clientPath(reflect.TypeOf(v), te.Field), te.Type, te.Value, te.Offset)
		case errors.As(err, &se):
			return badRequest("invalid JSON at byte offset %d: %v", se.Offset, err)
		}
		return badRequest("invalid JSON request: %v", err)
	}
	return nil
}

// clientPath is the field path of a decoding error as the client wrote it:
// encoding/json (since Go 1.24) also names the embedded Go structs on the
// way, which the client never saw.
func clientPath(t reflect.Type, path string) string {
	segs := strings.Split(path, ".")
	out := segs[:0]
	for _, seg := range segs {
		t = elemType(t)
		if t == nil || t.Kind() != reflect.Struct {
			out = append(out, seg)
			t = nil
			continue
		}
		if f, ok := t.FieldByName(seg); ok && f.Anonymous {
			t = f.Type
			continue
		}
		out = append(out, seg)
		t = jsonFieldType(t, seg)
	}
	return strings.Join(out, ".")
}

func elemType(t reflect.Type) reflect.Type {
	for t != nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
	return nil
}

// jsonFieldType is the type of struct t's field named name in JSON, own
// fields first, then those of embedded structs (which they shadow); nil if
// there is none.
func jsonFieldType(t reflect.Type, name string) reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name || (tag == "" && !f.Anonymous && f.Name == name) {
			return f.Type
		}
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous {
			if e := elemType(f.Type); e != nil && e.Kind() == reflect.Struct {
				if ft := jsonFieldType(e, name); ft != nil {
					return ft
				}
			}
		}
	}
	return nil
}

func writeRequestError(w http.ResponseWriter, err error) {
	var re *errRequest
	if errors.As(err, &re) {
		if re.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeErrorCode(w, re.status, re.msg, re.code)
		return
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// decodeOptional is decodeJSON for control endpoints, which also accept an
// empty body.
func decodeOptional(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return unmarshalBody(data, v)
}

// capability is the engine as a T; when the engine is not one, it answers
// 501 naming what is not supported and returns false.
func capability[T any](s *Server, w http.ResponseWriter, what string) (T, bool) {
	c, ok := s.engine.(T)
	if !ok {
		notSupported(w, what)
	}
	return c, ok
}

func notSupported(w http.ResponseWriter, what string) {
	writeError(w, http.StatusNotImplemented, "the engine behind this server does not support "+what)
}
