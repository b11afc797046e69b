package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// DefaultSessionKeys are where agent harnesses put their conversation's
// identity (measured: opencode and crush send x-session-id; codex
// session-id, thread-id and prompt_cache_key; Claude Code
// x-claude-code-session-id and metadata.user_id), first match wins.
var DefaultSessionKeys = []string{
	"header:x-session-id",
	"header:session-id",
	"header:thread-id",
	"header:x-claude-code-session-id",
	"body:prompt_cache_key",
	"body:metadata.user_id",
}

// maxSessionKey bounds a session key's length: it becomes a request id.
const maxSessionKey = 256

// sessionSource is one place a session key is read from.
type sessionSource struct {
	header string   // canonical header name, or ""
	body   []string // a path of JSON object keys
}

// parseSessionKeys reads Config.SessionKeys ("header:NAME" or
// "body:a.b.c").
func parseSessionKeys(keys []string) ([]sessionSource, error) {
	out := make([]sessionSource, 0, len(keys))
	for _, k := range keys {
		kind, name, ok := strings.Cut(k, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf(`httpapi: Config.SessionKeys: %q: want "header:NAME" or "body:FIELD.PATH"`, k)
		}
		switch kind {
		case "header":
			out = append(out, sessionSource{header: http.CanonicalHeaderKey(name)})
		case "body":
			out = append(out, sessionSource{body: strings.Split(name, ".")})
		default:
			return nil, fmt.Errorf(`httpapi: Config.SessionKeys: %q: want "header:NAME" or "body:FIELD.PATH"`, k)
		}
	}
	return out, nil
}

// sessionKey is the request's conversation key from the first source
// that has one ("" when none does). Behind a router it is the sticky
// routing key (server.GenerateRequest.RequestID), so a harness's calls
// stay on the server that holds their prefix cache. The body is decoded
// again only for body sources and only when no header matched.
func (s *Server) sessionKey(h http.Header, body []byte) string {
	var top map[string]json.RawMessage
	decoded := false
	for _, src := range s.sessionSources {
		if src.header != "" {
			if v := h.Get(src.header); v != "" {
				return boundKey(v)
			}
			continue
		}
		if !decoded {
			decoded = true
			if json.Unmarshal(body, &top) != nil {
				top = nil
			}
		}
		if v := lookupString(top, src.body); v != "" {
			return boundKey(v)
		}
	}
	return ""
}

// boundKey keeps a key to maxSessionKey bytes; longer keys (Claude Code's
// metadata.user_id is a JSON string of several ids) stay distinct by
// their prefix, which holds the session id.
func boundKey(v string) string {
	if len(v) > maxSessionKey {
		return v[:maxSessionKey]
	}
	return v
}

// lookupString follows path through nested objects to a string.
func lookupString(obj map[string]json.RawMessage, path []string) string {
	for i, k := range path {
		raw, ok := obj[k]
		if !ok {
			return ""
		}
		if i == len(path)-1 {
			var v string
			if json.Unmarshal(raw, &v) != nil {
				return ""
			}
			return v
		}
		obj = nil
		if json.Unmarshal(raw, &obj) != nil {
			return ""
		}
	}
	return ""
}
