package capture

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// Handler serves the harnesses' model calls. A call reaches its rollout by
// the URL prefix /rollouts/{id}/v1/... with the rollout's key, or by the
// key alone on /v1/...; the key comes as "Authorization: Bearer KEY" or
// "x-api-key: KEY" (what the OpenAI and Anthropic SDKs send). A call
// with a missing or unknown key, a key of another rollout, or an unknown
// id is refused with 401 in its dialect's error shape and recorded
// nowhere. The calls are served by httpapi (chat completions, Responses,
// Anthropic Messages, models), with the Capture as its Recorder.
func (c *Capture) Handler() http.Handler { return http.HandlerFunc(c.serveModel) }

// served says which endpoints a harness may call: those that record
// through the Recorder (and the model list); the rest are 404.
func served(path string) bool {
	switch path {
	case "/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens", "/v1/models":
		return true
	}
	return strings.HasPrefix(path, "/v1/models/")
}

func (c *Capture) serveModel(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet) {
		// A reachability probe (Claude Code sends HEAD / without a key
		// before its first call): 200 with no body, which names no
		// rollout and records nothing, rather than a refusal.
		w.WriteHeader(http.StatusOK)
		return
	}
	var ro *rollout
	var err error
	key := requestKey(r)
	if rest, ok := strings.CutPrefix(path, "/rollouts/"); ok {
		id, tail, _ := strings.Cut(rest, "/")
		path = "/" + tail
		if key != "" {
			got, gerr := c.byRolloutKey(r.Context(), key)
			if got != nil && subtle.ConstantTimeCompare([]byte(got.info.ID), []byte(id)) == 1 {
				ro = got
			}
			err = gerr
		}
	} else if key != "" {
		ro, err = c.byRolloutKey(r.Context(), key)
	}
	if err != nil {
		// The shared store is unreachable: fail closed, saying so.
		c.stats.refused.Add(1)
		refuse(w, path, http.StatusServiceUnavailable, err.Error())
		return
	}
	if ro == nil {
		c.stats.refused.Add(1)
		c.m.call(dialectOfPath(path), outRefused)
		refuse(w, path, http.StatusUnauthorized, "missing or unknown rollout key (send it as Authorization: Bearer KEY or x-api-key: KEY), or a key of another rollout")
		return
	}
	if !served(path) {
		c.stats.refused.Add(1)
		c.m.call(dialectOfPath(path), outRefused)
		refuse(w, path, http.StatusNotFound, fmt.Sprintf("capture does not serve %s", path))
		return
	}
	r2 := r.Clone(withRollout(r.Context(), ro))
	r2.URL.Path, r2.URL.RawPath = path, ""
	// The key is the rollout's, not the engine's: it goes no further.
	r2.Header.Del("Authorization")
	r2.Header.Del("X-Api-Key")
	c.srv.ServeHTTP(w, r2)
}

// requestKey is the rollout key a call carries.
func requestKey(r *http.Request) string {
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "Bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

// refuse answers in the dialect's error shape: Anthropic's for
// /v1/messages, OpenAI's otherwise.
func refuse(w http.ResponseWriter, path string, status int, msg string) {
	var body any
	if strings.HasPrefix(path, "/v1/messages") {
		typ := "authentication_error"
		switch status {
		case http.StatusNotFound:
			typ = "not_found_error"
		case http.StatusServiceUnavailable:
			typ = "api_error"
		}
		body = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
	} else {
		typ := "invalid_request_error"
		var code any = "invalid_api_key"
		switch status {
		case http.StatusNotFound:
			code = "not_found"
		case http.StatusServiceUnavailable:
			typ, code = "server_error", nil
		}
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "capture: encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// maxControlBody bounds a control request's body.
const maxControlBody = 64 << 10

// ControlHandler serves the control API, every request authenticated by
// "Authorization: Bearer TOKEN" (compared in constant time; a rollout's
// key is not a control token, so a harness cannot set its own reward):
//
//	POST   /rollouts                    {"group","metadata"} → 201 Rollout
//	POST   /rollouts/{id}/reward        {"reward": 1.0}
//	POST   /rollouts/{id}/finish
//	GET    /rollouts/{id}/trajectories  trajectory JSONL (Rebuild)
//	GET    /rollouts/{id}/report        the rebuild Report
//	DELETE /rollouts/{id}
//
// Errors are OpenAI-shaped JSON naming what was wrong.
func (c *Capture) ControlHandler(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rollouts", func(w http.ResponseWriter, r *http.Request) {
		var opts CreateOptions
		if err := readControl(r, &opts); err != nil {
			controlError(w, err)
			return
		}
		ro, err := c.Create(r.Context(), opts)
		if err != nil {
			controlError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, ro)
	})
	mux.HandleFunc("POST /rollouts/{id}/reward", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Reward *float64 `json:"reward"`
		}
		if err := readControl(r, &in); err != nil {
			controlError(w, err)
			return
		}
		if in.Reward == nil {
			controlError(w, fmt.Errorf(`%w: field "reward": required`, errBadControl))
			return
		}
		if err := c.SetReward(r.Context(), r.PathValue("id"), *in.Reward); err != nil {
			controlError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "reward": *in.Reward})
	})
	mux.HandleFunc("POST /rollouts/{id}/finish", func(w http.ResponseWriter, r *http.Request) {
		if err := readControl(r, &struct{}{}); err != nil {
			controlError(w, err)
			return
		}
		if err := c.Finish(r.Context(), r.PathValue("id")); err != nil {
			controlError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "finished": true})
	})
	mux.HandleFunc("GET /rollouts/{id}/trajectories", func(w http.ResponseWriter, r *http.Request) {
		trajs, _, err := c.Rebuild(r.Context(), r.PathValue("id"), RebuildOptions{})
		if err != nil {
			controlError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/jsonl")
		_ = trajectory.WriteJSONL(w, trajs)
	})
	mux.HandleFunc("GET /rollouts/{id}/report", func(w http.ResponseWriter, r *http.Request) {
		_, rep, err := c.Rebuild(r.Context(), r.PathValue("id"), RebuildOptions{})
		if err != nil {
			controlError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, rep)
	})
	mux.HandleFunc("DELETE /rollouts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if err := c.Delete(r.Context(), r.PathValue("id")); err != nil {
			controlError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if token == "" || len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") ||
			subtle.ConstantTimeCompare([]byte(h[7:]), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentrl-capture"`)
			refuse(w, "", http.StatusUnauthorized, "missing or wrong control token in the Authorization header")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

var errBadControl = errors.New("bad control request")

// readControl decodes a control request's JSON body into v: at most
// maxControlBody bytes, no unknown fields, one value; an empty body is
// the zero value.
func readControl(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxControlBody+1))
	if err != nil {
		return fmt.Errorf("%w: reading the body: %v", errBadControl, err)
	}
	return decodeControl(data, v)
}

// decodeControl is readControl's decoding, apart for fuzzing.
func decodeControl(data []byte, v any) error {
	if len(data) > maxControlBody {
		return fmt.Errorf("%w: body over %d bytes", errBadControl, maxControlBody)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", errBadControl, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON value", errBadControl)
	}
	if o, ok := v.(*CreateOptions); ok {
		if len(o.Group) > 256 {
			return fmt.Errorf(`%w: field "group": over 256 bytes`, errBadControl)
		}
		if len(o.Metadata) > 64 {
			return fmt.Errorf(`%w: field "metadata": over 64 entries`, errBadControl)
		}
	}
	return nil
}

func controlError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, errBadControl):
		status = http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrFinished):
		status = http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, server.ErrUnavailable):
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error", "param": nil, "code": nil}})
}
