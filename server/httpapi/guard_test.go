package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/internal/syncbuf"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// readUntilClosed reads c until the server closes it, failing if that
// takes longer than within; it returns what the server sent.
func readUntilClosed(t *testing.T, c net.Conn, within time.Duration) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(within)))
	data, err := io.ReadAll(c)
	require.NoError(t, err, "the server did not close the connection within %v (got %q)", within, data)
	return string(data)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// A client that sends its headers and then trickles (here: stops sending)
// the body is cut off by the body timeout with 408, instead of holding a
// connection and a handler forever.
func TestAttackSlowBodyIsTimedOut(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{BodyTimeout: 200 * time.Millisecond})
	c := dial(t, s.Addr())
	_, err := fmt.Fprintf(c, "POST /generate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"input_ids\":[1,", s.Addr())
	require.NoError(t, err)
	resp := readUntilClosed(t, c, 5*time.Second)
	require.Contains(t, resp, "408 Request Timeout")
	require.Contains(t, resp, "took too long")
}

// A connection that never sends a request (or stops between requests) is
// closed by the header and idle timeouts.
func TestAttackIdleConnectionsAreClosed(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	silent := dial(t, s.Addr())
	readUntilClosed(t, silent, 5*time.Second)

	partial := dial(t, s.Addr())
	_, err := fmt.Fprintf(partial, "GET /health HTTP/1.1\r\nHost: x") // never ends its headers
	require.NoError(t, err)
	readUntilClosed(t, partial, 5*time.Second)

	kept := dial(t, s.Addr())
	_, err = fmt.Fprintf(kept, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", s.Addr())
	require.NoError(t, err)
	require.Contains(t, readUntilClosed(t, kept, 5*time.Second), "200 OK")
}

// A flood of connections is capped at MaxConns: further ones are not
// served until one of the held ones goes away.
func TestAttackConnectionFloodIsCapped(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{MaxConns: 2, ReadHeaderTimeout: time.Minute})
	holders := []net.Conn{dial(t, s.Addr()), dial(t, s.Addr())}
	// Both holders are accepted (each answers a request), then sit idle.
	for _, h := range holders {
		_, err := fmt.Fprintf(h, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", s.Addr())
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(h), nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
	}
	third := dial(t, s.Addr())
	_, err := fmt.Fprintf(third, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", s.Addr())
	require.NoError(t, err)
	require.NoError(t, third.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = third.Read(make([]byte, 1))
	var ne net.Error
	require.ErrorAs(t, err, &ne, "the third connection was served beyond MaxConns=2")
	require.True(t, ne.Timeout())

	holders[0].Close()
	require.NoError(t, third.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

// Beyond MaxInFlight, generation requests get 429 with an OpenAI-shaped
// error at once, while health checks are still answered.
func TestAttackInFlightCapAnswers429(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	eng.SetFault(servertest.HangFault())
	s := start(t, eng, httpapi.Config{MaxInFlight: 3})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			postAsync(s.URL()+"/generate", `{"input_ids":[1]}`)
		}()
	}
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 3 }, 5*time.Second, time.Millisecond)
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[1]}`)
	require.Equal(t, http.StatusTooManyRequests, code, body)
	var e struct {
		Error struct {
			Message, Type, Code string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	require.Equal(t, "rate_limit_error", e.Error.Type)
	require.Equal(t, "rate_limit_exceeded", e.Error.Code)
	require.Contains(t, e.Error.Message, "3 requests in flight")
	code, _ = get(t, s.URL()+"/health")
	require.Equal(t, 200, code)
	// Closing the server cancels the hung requests.
	require.NoError(t, s.Close())
	wg.Wait()
}

// A web page on the same machine cannot drive the control endpoints: a
// text/plain (or bodiless, or form) POST is what a browser sends
// cross-site without a preflight, and it is refused; so is any request
// whose Origin is another site, and (DNS rebinding) any request naming
// the server by a foreign host name.
func TestAttackCrossSiteControlIsRefused(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	s := start(t, eng, httpapi.Config{})
	for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain; charset=application/json"} {
		for _, path := range []string{"/sleep", "/release_memory_occupation", "/update_weights_from_disk", "/abort_request", "/flush_cache", "/pause"} {
			req, err := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(`{"model_path":"/tmp"}`))
			require.NoError(t, err)
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := testClient.Do(req)
			require.NoError(t, err)
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "%s with %q: %s", path, ct, data)
		}
	}
	sleeping, _ := eng.Sleeping()
	require.False(t, sleeping)

	code, body := post(t, s.URL()+"/sleep", `{}`, "Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = post(t, s.URL()+"/generate", `{"input_ids":[1]}`, "Origin", "null")
	require.Equal(t, http.StatusForbidden, code, body)
	// DNS rebinding: the page's own host name, resolved to 127.0.0.1.
	code, body = post(t, s.URL()+"/sleep", `{}`, "Host", "evil.example:"+port(s))
	require.Equal(t, http.StatusMisdirectedRequest, code, body)
	code, body = post(t, s.URL()+"/sleep", `{}`, "Host", "evil.example:"+port(s), "Origin", "http://evil.example:"+port(s))
	require.Equal(t, http.StatusMisdirectedRequest, code, body)
	sleeping, _ = eng.Sleeping()
	require.False(t, sleeping)

	// The server's own origin, and addresses by IP or localhost, pass.
	code, body = post(t, s.URL()+"/sleep", `{}`, "Origin", s.URL())
	require.Equal(t, 200, code, body)
	code, body = post(t, s.URL()+"/wake_up", ``, "Host", "localhost:"+port(s))
	require.Equal(t, 200, code, body)

	// Named hosts and origins pass when allowed.
	named := start(t, eng, httpapi.Config{AllowedHosts: []string{"rollout-0.internal"}, AllowedOrigins: []string{"https://ui.example"}})
	code, body = post(t, named.URL()+"/sleep", `{}`, "Host", "rollout-0.internal:"+port(named), "Origin", "https://ui.example")
	require.Equal(t, 200, code, body)
	// With a token the Host check is off (a browser cannot attach it), the
	// Origin check stays.
	authed := start(t, eng, httpapi.Config{AuthToken: "t0k"})
	code, body = post(t, authed.URL()+"/wake_up", `{}`, "Host", "rollout-0.internal", "Authorization", "Bearer t0k")
	require.Equal(t, 200, code, body)
	code, body = post(t, authed.URL()+"/wake_up", `{}`, "Authorization", "Bearer t0k", "Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, code, body)
}

func port(s *httpapi.Server) string {
	_, p, _ := net.SplitHostPort(s.Addr())
	return p
}

// Weights load only from the directories the operator allowed, after
// resolving symbolic links; without any, never.
func TestAttackWeightsPathOutsideAllowedDirs(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	outside := filepath.Join(root, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(allowed, "step-1"), 0o700))
	require.NoError(t, os.MkdirAll(outside, 0o700))
	require.NoError(t, os.Symlink(outside, filepath.Join(allowed, "escape")))
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		require.NoError(t, err)
		return r
	}

	closed := start(t, eng, httpapi.Config{})
	code, body := post(t, closed.URL()+"/update_weights_from_disk", `{"model_path":`+strconv.Quote(filepath.Join(allowed, "step-1"))+`}`)
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, "disabled")

	s := start(t, eng, httpapi.Config{AllowedWeightDirs: []string{allowed}})
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{outside, http.StatusForbidden, "not a path inside the directories"},
		{"/etc", http.StatusForbidden, "not a path inside the directories"},
		{filepath.Join(allowed, "..", "outside"), http.StatusForbidden, "not a path inside the directories"},
		{filepath.Join(allowed, "escape"), http.StatusForbidden, "not a path inside the directories"},
		{filepath.Join(allowed, "missing"), http.StatusBadRequest, "no such file or directory inside the allowed directories"},
		{filepath.Join(allowed, "step-1", "missing", "deeper"), http.StatusBadRequest, "no such file or directory inside the allowed directories"},
		{"allowed/step-1", http.StatusBadRequest, "not an absolute path"},
	} {
		code, body := post(t, s.URL()+"/update_weights_from_disk", `{"model_path":`+strconv.Quote(tc.path)+`}`)
		require.Equal(t, tc.code, code, "%s: %s", tc.path, body)
		require.Contains(t, body, tc.msg, tc.path)
		require.Contains(t, body, `"success":false`)
	}
	require.Empty(t, eng.WeightsPath())

	code, body = post(t, s.URL()+"/update_weights_from_disk", `{"model_path":`+strconv.Quote(filepath.Join(allowed, "step-1"))+`,"weight_version":4}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, real(filepath.Join(allowed, "step-1")), eng.WeightsPath())

	_, err := httpapi.New(eng, httpapi.Config{AllowedWeightDirs: []string{"relative/dir"}})
	require.ErrorContains(t, err, "not an absolute path")
	_, err = httpapi.New(eng, httpapi.Config{AllowedWeightDirs: []string{filepath.Join(root, "nope")}})
	require.ErrorContains(t, err, "AllowedWeightDirs[0]")
}

// TestAttackWeightsPathProbe: /update_weights_from_disk must not tell a
// client what exists outside the allowed directories. Symbolic links were
// resolved before the check, so a missing path (/root/.ssh) got 400 "no
// such file", an existing one (/etc/shadow) 403, and a followed link
// leaked its target's size. Now every path outside, and every link out
// of the allowed directory, gets the same bytes back.
func TestAttackWeightsPathProbe(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	host := filepath.Join(root, "host") // stands for the host's own files
	require.NoError(t, os.MkdirAll(allowed, 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(host, "etc"), 0o700))
	shadow := filepath.Join(host, "etc", "shadow")
	require.NoError(t, os.WriteFile(shadow, []byte("root:*:19000:0:99999:7:::\n"), 0o600))
	missing := filepath.Join(host, "root", ".ssh")
	for name, target := range map[string]string{"to-shadow": shadow, "to-ssh": missing, "to-etc": filepath.Join(host, "etc"), "to-root": "/"} {
		require.NoError(t, os.Symlink(target, filepath.Join(allowed, name)))
	}
	s := start(t, eng, httpapi.Config{AllowedWeightDirs: []string{allowed}})
	probe := func(p string) string {
		resp, err := testClient.Post(s.URL()+"/update_weights_from_disk", "application/json", strings.NewReader(`{"model_path":`+strconv.Quote(p)+`}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	want := probe(missing)
	require.Contains(t, want, "403 ")
	for _, p := range []string{
		shadow, filepath.Join(host, "etc"), "/etc/shadow", "/root/.ssh", "/", "/proc/self/environ",
		filepath.Join(allowed, "..", "host", "etc", "shadow"),
		filepath.Join(allowed, "to-shadow"), filepath.Join(allowed, "to-ssh"), filepath.Join(allowed, "to-etc"),
		filepath.Join(allowed, "to-etc", "shadow"), filepath.Join(allowed, "to-etc", "passwd"),
		filepath.Join(allowed, "to-root", "etc", "shadow"), filepath.Join(allowed, "to-root", "root", ".ssh"),
	} {
		require.Equal(t, want, probe(p), p)
	}
	require.NotContains(t, want, host, "the path is not echoed back")
	require.Empty(t, eng.WeightsPath())
}

func TestWarnsWhenServingBeyondLoopbackWithoutToken(t *testing.T) {
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	eng := servertest.New(servertest.Config{})
	start(t, eng, httpapi.Config{Logger: logger})
	start(t, eng, httpapi.Config{Addr: "0.0.0.0:0", AuthToken: "x", Logger: logger})
	require.Empty(t, buf.String())
	start(t, eng, httpapi.Config{Addr: "0.0.0.0:0", Logger: logger})
	require.Contains(t, buf.String(), "level=WARN")
	require.Contains(t, buf.String(), "without an auth token")
}

func TestConfigLimitsRangeChecked(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	for _, tc := range []struct {
		cfg  httpapi.Config
		name string
	}{
		{httpapi.Config{BodyTimeout: -1}, "BodyTimeout"},
		{httpapi.Config{ReadHeaderTimeout: -time.Second}, "ReadHeaderTimeout"},
		{httpapi.Config{IdleTimeout: -1}, "IdleTimeout"},
		{httpapi.Config{WriteTimeout: -1}, "WriteTimeout"},
		{httpapi.Config{MaxConns: -1}, "MaxConns"},
		{httpapi.Config{MaxInFlight: -5}, "MaxInFlight"},
		{httpapi.Config{MaxBodyBytes: -1}, "MaxBodyBytes"},
		{httpapi.Config{AllowedHosts: []string{"a b"}}, "AllowedHosts"},
		{httpapi.Config{Chat: &httpapi.Chat{Tokenizer: byteTok{}, MaxTokens: -1}}, "MaxTokens"},
	} {
		_, err := httpapi.New(eng, tc.cfg)
		require.ErrorContains(t, err, tc.name)
	}
}

// byteTok is the smallest httpapi.Tokenizer.
type byteTok struct{}

func (byteTok) Encode(text string) []int32                              { return []int32{int32(len(text))} }
func (byteTok) Decode([]int32, bool) (string, error)                    { return "", nil }
func (byteTok) VocabSize() int                                          { return 256 }
func (byteTok) EOSTokenIDs() []int32                                    { return nil }
func (byteTok) ApplyChatTemplate(tokenizer.ChatContext) (string, error) { return "", nil }

// SGLang's clients and verl post to control endpoints with no body and no
// Content-Type (requests.post(url)): that is served, while a browser's
// cross-site version of it (which carries an Origin and Sec-Fetch-Site) is
// still refused.
func TestControlEmptyBodyPost(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	s := start(t, eng, httpapi.Config{})
	bare := func(path string, hdr ...string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, s.URL()+path, nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := testClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	code, body := bare("/flush_cache")
	require.Equal(t, 200, code, body)
	code, body = bare("/sleep")
	require.Equal(t, 200, code, body)
	sleeping, _ := eng.Sleeping()
	require.True(t, sleeping)
	code, body = bare("/wake_up", "Sec-Fetch-Site", "same-origin")
	require.Equal(t, 200, code, body)

	for _, hdr := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "http://evil.example"},
		{"Origin", "null"},
	} {
		code, body = bare("/sleep", hdr...)
		require.Equal(t, http.StatusForbidden, code, "%v: %s", hdr, body)
	}
	sleeping, _ = eng.Sleeping()
	require.False(t, sleeping)
	// A body still needs its JSON type.
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/sleep", strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}
