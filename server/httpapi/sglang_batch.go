package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentrl/agentrl/server"
)

// ---- SGLang batched /generate ----------------------------------------------
//
// SGLang's /generate takes a batch where "text" is a list of strings or
// "input_ids" a list of lists, and answers a JSON list of results in the
// same order. The semantics follow GenerateReqInput's
// normalize_batch_and_arguments (sgl-project/sglang
// python/sglang/srt/managers/io_struct.py @ 001067ff):
//   - sampling_params is one object for every prompt or a list, one per
//     prompt;
//   - n > 1 (parallel sampling, the same in every sampling_params) turns
//     even a single prompt into a batch, and the results come prompt by
//     prompt, n each (tokenizer_manager.py _handle_batch_request expands
//     `for i in range(batch_size): for _ in range(parallel_sample_num)`),
//     every sample under a fresh id;
//   - rid is a string (item i gets "<rid>_<i>") or a list of distinct ids,
//     one per prompt;
//   - return_logprob, logprob_start_len and top_logprobs_num are one value
//     or a list, one per prompt (a list not allowed with n > 1).
//
// Each item is checked as a single request would be, and a bad one fails
// the whole batch with an error naming its index. Items run concurrently;
// an engine error cancels the rest.

// maxGenerateBatch caps the items of one batched /generate (prompts × n):
// each is an engine request held by one HTTP request.
const maxGenerateBatch = 256

// sglBatchFields are the top-level fields a batch may give per prompt.
var sglBatchFields = []string{"return_logprob", "logprob_start_len", "top_logprobs_num"}

// sglangBatch reports whether body is a batched /generate request, and if
// so its items in response order, each as a single-request body. ok is false for a body that is
// not a batch (or not a JSON object): the single-request parser's error
// then stands.
//
// ids, when not nil, is the request's flat input_ids, which the body
// reader split out of body.
func sglangBatch(body []byte, ids []int32) (items [][]byte, ok bool, err error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil, false, nil
	}
	if ids != nil {
		if top["input_ids"], err = json.Marshal(ids); err != nil {
			return nil, false, nil
		}
	}
	promptKey, prompts := "", []json.RawMessage(nil)
	for _, k := range []string{"text", "input_ids"} {
		raw, has := top[k]
		if !has || !isSet(raw) || firstByte(raw) != '[' {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return nil, false, nil
		}
		if k == "input_ids" && (len(list) == 0 || firstByte(list[0]) != '[') {
			continue // a flat list of ids: one prompt
		}
		promptKey, prompts = k, list
	}
	n, spList, err := parallelSamples(top["sampling_params"])
	if err != nil {
		return nil, true, err
	}
	if promptKey == "" {
		if n == 1 {
			return nil, false, nil
		}
		// n > 1 makes a single prompt a batch of one.
		for _, k := range []string{"text", "input_ids"} {
			if raw, has := top[k]; has && isSet(raw) {
				promptKey, prompts = k, []json.RawMessage{raw}
			}
		}
		if promptKey == "" {
			return nil, false, nil
		}
	}
	B := len(prompts)
	switch {
	case B == 0:
		return nil, true, badRequest("field %q: an empty batch", promptKey)
	case B*n > maxGenerateBatch:
		return nil, true, badRequest("field %q: a batch of %d prompts × n=%d is more than the %d requests one /generate may carry", promptKey, B, n, maxGenerateBatch)
	case isSet(top["stream"]) && string(bytes.TrimSpace(top["stream"])) != "false":
		return nil, true, badRequest(`field "stream": streaming a batch is not supported: send one request per prompt`)
	}
	if spList != nil && len(spList) != B {
		return nil, true, badRequest(`field "sampling_params": %d entries for a batch of %d prompts`, len(spList), B)
	}
	rids, err := batchRIDs(top["rid"], B, n)
	if err != nil {
		return nil, true, err
	}
	perPrompt := map[string][]json.RawMessage{}
	for _, k := range sglBatchFields {
		raw := top[k]
		if !isSet(raw) || firstByte(raw) != '[' {
			continue
		}
		if n > 1 {
			return nil, true, badRequest("field %q: a list is not allowed with n > 1 (parallel sampling)", k)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil || len(list) != B {
			return nil, true, badRequest("field %q: expected one value or a list of %d (one per prompt)", k, B)
		}
		perPrompt[k] = list
	}
	items = make([][]byte, 0, B*n)
	for i := range B {
		for j := range n {
			m := make(map[string]json.RawMessage, len(top))
			for k, v := range top {
				m[k] = v
			}
			delete(m, "text")
			delete(m, "input_ids")
			m[promptKey] = prompts[i]
			for k, list := range perPrompt {
				m[k] = list[i]
			}
			sp := top["sampling_params"]
			if spList != nil {
				sp = spList[i]
			}
			if n > 1 {
				if sp, err = withoutN(sp); err != nil {
					return nil, true, badRequest("batch item %d: field %q: %v", i, "sampling_params", err)
				}
			}
			if sp != nil {
				m["sampling_params"] = sp
			}
			m["rid"] = rids[i*n+j]
			b, err := json.Marshal(m)
			if err != nil {
				return nil, true, badRequest("batch item %d: %v", i, err)
			}
			items = append(items, b)
		}
	}
	return items, true, nil
}

func firstByte(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// parallelSamples reads n from sampling_params, one object or a list whose
// entries must agree on it (io_struct.py _handle_parallel_sampling), and
// returns the list when it is one.
func parallelSamples(raw json.RawMessage) (int, []json.RawMessage, error) {
	if !isSet(raw) {
		return 1, nil, nil
	}
	readN := func(sp json.RawMessage) (int, error) {
		var v struct {
			N *int `json:"n"`
		}
		if err := json.Unmarshal(sp, &v); err != nil {
			return 0, badRequest(`field "sampling_params": expected an object or a list of objects: %v`, err)
		}
		if v.N == nil {
			return 1, nil
		}
		if *v.N < 1 {
			return 0, badRequest(`field "sampling_params.n": must be ≥ 1, got %d`, *v.N)
		}
		return *v.N, nil
	}
	if firstByte(raw) != '[' {
		n, err := readN(raw)
		return n, nil, err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return 0, nil, badRequest(`field "sampling_params": %v`, err)
	}
	n := 1
	for i, sp := range list {
		ni, err := readN(sp)
		if err != nil {
			return 0, nil, err
		}
		if i == 0 {
			n = ni
		} else if ni != n {
			return 0, nil, badRequest(`field "sampling_params[%d].n": %d, but sampling_params[0].n is %d: n must be the same for every prompt`, i, ni, n)
		}
	}
	return n, list, nil
}

// withoutN is sampling_params with n removed: each expanded item is one
// sample.
func withoutN(sp json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(sp, &m); err != nil {
		return nil, err
	}
	delete(m, "n")
	return json.Marshal(m)
}

// batchRIDs are the items' ids (as JSON strings, "" for the server to make
// one): from a string rid "<rid>_<i>", from a list its entries, and with
// n > 1 fresh ones, as SGLang regenerates them per sample.
func batchRIDs(raw json.RawMessage, B, n int) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, B*n)
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	if n > 1 || !isSet(raw) {
		for i := range out {
			out[i] = str(newRequestID())
		}
		return out, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		for i := range out {
			out[i] = str(one + "_" + strconv.Itoa(i))
		}
		return out, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest(`field "rid": expected a string or a list of strings`)
	}
	if len(list) != B {
		return nil, badRequest(`field "rid": %d ids for a batch of %d prompts`, len(list), B)
	}
	seen := make(map[string]int, B)
	for i, id := range list {
		if j, dup := seen[id]; dup {
			return nil, badRequest(`field "rid": id %q is given twice (entries %d and %d)`, id, j, i)
		}
		seen[id] = i
		out[i] = str(id)
	}
	return out, nil
}

// itemError names the batch item an error belongs to, keeping its status.
type itemError struct {
	index int
	err   error
}

func (e *itemError) Error() string { return fmt.Sprintf("batch item %d: %v", e.index, e.err) }
func (e *itemError) Unwrap() error { return e.err }

// serveSGLangBatch parses every item, runs them on the engine together and
// writes the list of results.
func (s *Server) serveSGLangBatch(w http.ResponseWriter, r *http.Request, items [][]byte, start time.Time) {
	ps := make([]prepared, len(items))
	for i, it := range items {
		p, err := s.parseSGLangGenerate(it)
		if err != nil {
			var re *errRequest
			if errors.As(err, &re) {
				writeRequestError(w, &errRequest{status: re.status, msg: fmt.Sprintf("batch item %d: %s", i, re.msg), code: re.code})
				return
			}
			writeRequestError(w, &itemError{i, err})
			return
		}
		ps[i] = p
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	outs := make([]server.TokenOutput, len(items))
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.engine.Generate(ctx, ps[i].req)
			if err == nil {
				err = checkOutput(out, ps[i].req)
			}
			if err != nil {
				errs[i] = err
				cancel() // the batch fails: stop the others
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	// The first failure that is not the cancellation it caused.
	var failed error
	for i, err := range errs {
		if err != nil && (failed == nil || errors.Is(failed, context.Canceled) && !errors.Is(err, context.Canceled)) {
			failed = &itemError{i, err}
		}
	}
	if failed != nil {
		writeEngineError(w, failed)
		return
	}
	b := append(make([]byte, 0, 256*len(items)), '[')
	for i := range ps {
		body, err := s.sglangBody(ps[i], outs[i], start)
		if err != nil {
			writeEngineError(w, &itemError{i, err})
			return
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, body...)
	}
	writeRawJSON(w, http.StatusOK, append(b, ']'))
}
