package trajectory

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sampleTrajectories(t testing.TB) []*Trajectory {
	r := rand.New(rand.NewPCG(5, 6))
	var out []*Trajectory
	for i := 0; i < 20; i++ {
		tr, _ := randomTrajectory(r, true)
		tr.ID = "traj-" + string(rune('a'+i))
		tr.Index = i
		tr.GroupID = "g" + string(rune('0'+i%3))
		tr.StopReason = StopCompleted
		tr.TurnRewards = []float64{0.25, -1}
		tr.ToolRewards = []float64{1e-9}
		tr.MinWeightVersion, tr.MaxWeightVersion = 3, 4
		tr.Timing = Timing{Generate: 1500 * time.Millisecond, Tool: 3, Reward: 0, Total: 2 * time.Second}
		tr.Extra = map[string]json.RawMessage{"data_source": json.RawMessage(`"gsm8k"`), "meta": json.RawMessage(`{"b":1,"a":[1.5,"<x>"]}`)}
		out = append(out, tr)
	}
	// Shapes at the edges: nothing at all, no logprobs.
	out = append(out, &Trajectory{PromptIDs: []int32{}, ResponseIDs: []int32{}, ResponseMask: []int8{}})
	b := NewBuilder([]int32{1})
	require.NoError(t, b.AppendModel([]int32{2}, nil))
	out = append(out, b.Build())
	return out
}

func TestJSONLRoundTripIsLossless(t *testing.T) {
	trajs := sampleTrajectories(t)
	var buf bytes.Buffer
	require.NoError(t, WriteJSONL(&buf, trajs))
	require.Equal(t, len(trajs), strings.Count(buf.String(), "\n"))
	got, err := ReadJSONL(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, trajs, got)

	// Writing what was read gives the same bytes.
	var again bytes.Buffer
	require.NoError(t, WriteJSONL(&again, got))
	require.Equal(t, buf.String(), again.String())
}

func TestJSONLReaderErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"{\"prompt_ids\":[1],\"response_ids\":[],\"response_mask\":[]}\n\n{bad json}\n":             "line 3: invalid trajectory",
		"{\"prompt_ids\":[1],\"response_ids\":[5],\"response_mask\":[1,0]}\n":                       "line 1: response_mask: length 2, response_ids has 1",
		"{\"prompt_ids\":[1],\"response_ids\":[],\"response_mask\":[],\"surprise\":1}\n":            `line 1: invalid trajectory: json: unknown field "surprise"`,
		"{\"prompt_ids\":[1],\"response_ids\":[],\"response_mask\":[]} {\"prompt_ids\":[]}":         "line 1: invalid trajectory: trailing data",
		"{\"prompt_ids\":[1],\"response_ids\":[7],\"response_mask\":[0],\"rollout_logprobs\":[-1]}": "line 1: rollout_logprobs[0]: logprob -1 on a mask-0 token",
	}
	for in, want := range cases {
		_, err := ReadJSONL(strings.NewReader(in))
		require.Error(t, err, in)
		require.Contains(t, err.Error(), want, in)
		require.ErrorIs(t, err, ErrInvalid)
	}
}

func TestJSONLWriterRejectsInvalid(t *testing.T) {
	var buf bytes.Buffer
	err := WriteJSONL(&buf, []*Trajectory{{ResponseIDs: []int32{1}}})
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "row 0: trajectory: JSONL write: response_mask")
}

func FuzzJSONL(f *testing.F) {
	var buf bytes.Buffer
	require.NoError(f, WriteJSONL(&buf, sampleTrajectories(f)[:3]))
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		f.Add(line)
	}
	f.Add("{\"prompt_ids\":[1],\"response_ids\":[5],\"response_mask\":[1],\"rollout_logprobs\":[1e39]}")
	f.Add("{\"reward\":null,\"extra\":{\"a\":[}}")
	f.Add("\n\n\n{}")
	f.Add("{\"rollout_logprobs\":[]}") // found by the fuzzer: [] came back as no key
	f.Add("{\"prompt_ids\":[1],\"response_ids\":[],\"response_mask\":[],\"num_turns\":2,\"tool_calls\":3,\"tool_errors\":1,\"num_preempted\":2}")
	f.Fuzz(func(t *testing.T, in string) {
		trajs, err := ReadJSONL(strings.NewReader(in))
		if err != nil {
			return
		}
		// Whatever the reader accepts must be valid and survive a round trip.
		var out bytes.Buffer
		require.NoError(t, WriteJSONL(&out, trajs))
		back, err := ReadJSONL(&out)
		require.NoError(t, err)
		require.Equal(t, len(trajs), len(back))
		for i := range trajs {
			require.Equal(t, trajs[i].ResponseIDs, back[i].ResponseIDs)
			require.Equal(t, trajs[i].ResponseMask, back[i].ResponseMask)
			require.Equal(t, trajs[i].Logprobs, back[i].Logprobs)
			require.Equal(t, [3]int{trajs[i].ToolCalls, trajs[i].ToolErrors, trajs[i].NumPreempted},
				[3]int{back[i].ToolCalls, back[i].ToolErrors, back[i].NumPreempted})
		}
	})
}

func TestSafetensorsRoundTrip(t *testing.T) {
	batch, err := Collate(sampleTrajectories(t)[:20], CollateOptions{PromptLen: 8, ResponseLen: 16, PadTokenID: 3, TruncatePrompts: true})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, batch.WriteSafetensors(&buf))
	hlen := binary.LittleEndian.Uint64(buf.Bytes()[:8])
	require.Zero(t, hlen%8, "header is padded to 8 bytes")
	got, err := ReadSafetensorsBatch(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, batch, got)
}

// TestSafetensorsReadableByNumpy proves interop: a Python script using only
// json and numpy reads the file and checks every tensor against the values
// Go wrote next to it.
func TestSafetensorsReadableByNumpy(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have python3-numpy: %v", err)
		}
		t.Skipf("python3 with numpy not available: %v", err)
	}
	for _, withLP := range []bool{true, false} {
		trajs := sampleTrajectories(t)[:20]
		if !withLP {
			for _, tr := range trajs {
				tr.Logprobs = nil
			}
		}
		batch, err := Collate(trajs, CollateOptions{PromptLen: 6, ResponseLen: 9, PadTokenID: 151643, TruncatePrompts: true})
		require.NoError(t, err)
		dir := t.TempDir()
		path := filepath.Join(dir, "batch.safetensors")
		var buf bytes.Buffer
		require.NoError(t, batch.WriteSafetensors(&buf))
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))

		expected := map[string]any{}
		md, err := batch.metadata()
		require.NoError(t, err)
		expected["__metadata__"] = md
		for _, ts := range batch.tensors() {
			var data any = ts.i32
			if ts.dtype == "F32" {
				data = ts.f32
			}
			expected[ts.name] = map[string]any{"dtype": ts.dtype, "shape": ts.shape, "data": data}
		}
		ej, err := json.Marshal(expected)
		require.NoError(t, err)
		epath := filepath.Join(dir, "expected.json")
		require.NoError(t, os.WriteFile(epath, ej, 0o644))

		out, err := exec.Command(py, "testdata/check_safetensors.py", path, epath).CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "ok: ")
	}
}

func TestSafetensorsReaderRejectsCorruptFiles(t *testing.T) {
	batch, err := Collate(sampleTrajectories(t)[:3], CollateOptions{PromptLen: 4, ResponseLen: 4, TruncatePrompts: true})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, batch.WriteSafetensors(&buf))
	good := buf.Bytes()

	hugeHeader := append([]byte{}, good...)
	binary.LittleEndian.PutUint64(hugeHeader, 1<<40)
	truncated := good[:len(good)-5]
	hlen := binary.LittleEndian.Uint64(good[:8])
	badOffsets := append([]byte{}, good...)
	hdr := string(badOffsets[8 : 8+hlen])
	hdr = strings.Replace(hdr, `"data_offsets":[0,`, `"data_offsets":[4,`, 1)
	copy(badOffsets[8:], hdr)

	for name, in := range map[string][]byte{
		"short":         good[:4],
		"huge header":   hugeHeader,
		"truncated":     truncated,
		"bad offsets":   badOffsets,
		"not json":      append(binary.LittleEndian.AppendUint64(nil, 8), []byte("notjson!")...),
		"missing field": append(binary.LittleEndian.AppendUint64(nil, 8), []byte(`{}      `)...),
	} {
		_, err := ReadSafetensorsBatch(bytes.NewReader(in))
		require.ErrorIs(t, err, ErrSafetensors, name)
	}
}

func FuzzSafetensorsReader(f *testing.F) {
	batch, err := Collate(sampleTrajectories(f)[:2], CollateOptions{PromptLen: 2, ResponseLen: 3, TruncatePrompts: true})
	require.NoError(f, err)
	var buf bytes.Buffer
	require.NoError(f, batch.WriteSafetensors(&buf))
	f.Add(buf.Bytes())
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := ReadSafetensorsBatch(bytes.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		require.NoError(t, b.WriteSafetensors(&out))
	})
}

// TestSafetensorsLoadedByTorch loads the batch with PyTorch and runs the
// index operations verl's trainer runs on it (testdata/check_torch.py):
// int64 ids for torch.gather, compute_position_id_with_mask positions,
// rm_scores on the last valid token, masked means, non_tensor_batch and
// meta_info. It needs python3 with torch (Debian: python3-torch).
func TestSafetensorsLoadedByTorch(t *testing.T) {
	py := torchPython(t)
	for _, c := range []struct {
		name   string
		mutate func(tr *Trajectory, i int)
	}{
		{"all scored, logprobs", func(tr *Trajectory, i int) { tr.Reward = f64(float64(i%3) - 0.5) }},
		{"some unscored, no logprobs", func(tr *Trajectory, i int) {
			tr.Logprobs = nil
			if i%2 == 0 {
				tr.Reward = f64(1)
			}
		}},
		{"routed experts", func(tr *Trajectory, i int) {
			tr.Reward = f64(1)
			tr.RoutedExperts = sampleRouting(len(tr.PromptIDs)+len(tr.ResponseIDs)-1, i)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			trajs := sampleTrajectories(t)[:16]
			for i, tr := range trajs {
				tr.Reward = nil
				c.mutate(tr, i)
				tr.TurnRewards = []float64{0.5}
				tr.Extra = map[string]json.RawMessage{"raw_prompt": json.RawMessage(`[{"role":"user","content":"<q>"}]`)}
			}
			batch, err := Collate(trajs, CollateOptions{PromptLen: 6, ResponseLen: 9, PadTokenID: 151643, TruncatePrompts: true})
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "batch.safetensors")
			var buf bytes.Buffer
			require.NoError(t, batch.WriteSafetensors(&buf))
			require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			out, err := exec.Command(py, "testdata/check_torch.py", path).CombinedOutput()
			require.NoError(t, err, string(out))
			require.Contains(t, string(out), "ok: torch")
			// verl's own postprocessing of the same trajectories gives
			// the same tensors (prompts cut to their last 6 tokens,
			// responses to 9, as verl's agent loops cut them).
			verlMatches(t, py, path, trajs, 151643)
		})
	}
}

// TestVerlPostprocessCatchesFaults: the comparison with verl's
// postprocessing fails, naming the tensor, on each fault a collator could
// make (the mutations are on agentrl's batch, the trajectories are left
// alone).
func TestVerlPostprocessCatchesFaults(t *testing.T) {
	py := torchPython(t)
	trajs := sampleTrajectories(t)[:16]
	for i, tr := range trajs {
		tr.Reward = f64(float64(i%3) - 0.5)
		tr.RoutedExperts = sampleRouting(len(tr.PromptIDs)+len(tr.ResponseIDs)-1, i)
	}
	opts := CollateOptions{PromptLen: 6, ResponseLen: 9, PadTokenID: 151643, TruncatePrompts: true}
	// A row with padding on both sides to put faults in.
	row := -1
	for i, tr := range trajs {
		if len(tr.PromptIDs) < 6 && len(tr.ResponseIDs) > 0 && len(tr.ResponseIDs) < 9 {
			row = i
			break
		}
	}
	require.GreaterOrEqual(t, row, 0)
	for _, c := range []struct {
		name, tensor string
		fault        func(b *Batch)
	}{
		{"positions counted from 1", "position_ids", func(b *Batch) {
			for k := range b.PromptLen + b.ResponseLen {
				b.PositionIDs[row*(b.PromptLen+b.ResponseLen)+k]++
			}
		}},
		{"mask 1 on response padding", "response_mask", func(b *Batch) { b.ResponseMask[row*b.ResponseLen+b.ResponseLen-1] = 1 }},
		{"prompt padded with 0, not the pad id", "prompts", func(b *Batch) { b.Prompts[row*b.PromptLen] = 0 }},
		{"score on the first response token", "rm_scores", func(b *Batch) {
			r := b.TokenLevelScores[row*b.ResponseLen : (row+1)*b.ResponseLen]
			var s float32
			for k := range r {
				s, r[k] = s+r[k], 0
			}
			r[0] = s + 1
		}},
		{"log-prob on padding", "rollout_log_probs", func(b *Batch) { b.RolloutLogprobs[row*b.ResponseLen+b.ResponseLen-1] = -1 }},
		{"routing one position late", "routed_experts", func(b *Batch) {
			w := b.RoutingLayers * b.RoutingTopK
			r := b.RoutedExperts[row*(b.PromptLen+b.ResponseLen)*w : (row+1)*(b.PromptLen+b.ResponseLen)*w]
			copy(r[w:], append([]int16(nil), r[:len(r)-w]...))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Collate(trajs, opts)
			require.NoError(t, err)
			c.fault(b)
			path := filepath.Join(t.TempDir(), "batch.safetensors")
			var buf bytes.Buffer
			require.NoError(t, b.WriteSafetensors(&buf))
			require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			jsonl := filepath.Join(t.TempDir(), "trajs.jsonl")
			buf.Reset()
			require.NoError(t, WriteJSONL(&buf, trajs))
			require.NoError(t, os.WriteFile(jsonl, buf.Bytes(), 0o644))
			out, err := exec.Command(py, "testdata/verl_postprocess.py", path, jsonl, "151643").CombinedOutput()
			require.Error(t, err, "the fault passed: %s", out)
			require.Contains(t, string(out), "FAIL: "+c.tensor, string(out))
		})
	}
}

// sampleRouting is routing for rows positions of 3 layers × top-2, every
// value distinct per position so a misplaced row shows.
func sampleRouting(rows, seed int) *Routing {
	rows = max(rows, 0)
	r := &Routing{Layers: 3, TopK: 2, Experts: make(Int16s, rows*6)}
	for k := range r.Experts {
		r.Experts[k] = int16((k*7 + seed*13) % 251)
	}
	return r
}

// torchPython is the python3 that has torch; without one the test skips,
// and fails under CI=1 (.ci/deps.sh installs python3-torch).
func torchPython(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	if out, err := exec.Command(py, "-c", "import torch").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have python3-torch (.ci/deps.sh installs it): %v: %s", err, out)
		}
		t.Skipf("python3 with torch is not available (install python3-torch to run this test): %v: %s", err, out)
	}
	return py
}

// verlMatches runs verl's postprocessing, ported to PyTorch
// (testdata/verl_postprocess.py, from verl's agent_loop.py), on trajs and
// requires the batch at path to equal its tensors exactly.
func verlMatches(t *testing.T, py, path string, trajs []*Trajectory, padID int32) {
	t.Helper()
	jsonl := filepath.Join(t.TempDir(), "trajs.jsonl")
	var buf bytes.Buffer
	require.NoError(t, WriteJSONL(&buf, trajs))
	require.NoError(t, os.WriteFile(jsonl, buf.Bytes(), 0o644))
	out, err := exec.Command(py, "testdata/verl_postprocess.py", path, jsonl, strconv.Itoa(int(padID))).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "match verl's postprocessing")
	t.Log(strings.TrimSpace(string(out)))
}
