package trajectory

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/safetensors"
)

// The file is written and read by package safetensors (header padded to 8
// bytes so tensor data is aligned for zero-copy readers; strict header
// checks on reading); this file maps a Batch to and from its tensors and
// string metadata.

// ErrSafetensors is wrapped by every safetensors decoding error.
var ErrSafetensors = errors.New("invalid safetensors")

type stTensor struct {
	name  string
	dtype string // "I64" (written from int32 values), "I16" or "F32"
	shape []int
	i32   []int32
	i16   []int16
	f32   []float32
}

func (t stTensor) nbytes() int {
	switch t.dtype {
	case "I64":
		return 8 * len(t.i32)
	case "I16":
		return 2 * len(t.i16)
	}
	return 4 * len(t.f32)
}

func (t stTensor) values() int {
	switch t.dtype {
	case "I64":
		return len(t.i32)
	case "I16":
		return len(t.i16)
	}
	return len(t.f32)
}

// Tensor names of the safetensors batch. The first group is verl's
// DataProto.batch (agent_loop.py _postprocess); the rest are agentrl's
// additions, which verl's trainer does not read.
const (
	TensorPrompts         = "prompts"
	TensorResponses       = "responses"
	TensorInputIDs        = "input_ids"
	TensorAttentionMask   = "attention_mask"
	TensorPositionIDs     = "position_ids"
	TensorResponseMask    = "response_mask"
	TensorRolloutLogProbs = "rollout_log_probs"
	TensorRMScores        = "rm_scores"
	TensorRoutedExperts   = "routed_experts"

	TensorRewards      = "rewards"
	TensorHasReward    = "has_reward"
	TensorNumTurns     = "num_turns"
	TensorResponseLens = "response_lens"
	TensorIndices      = "indices"
	// TensorLossMask is written only for batches with multi-output rows
	// (Batch.LossMask).
	TensorLossMask = "loss_mask"

	// Written for batches with images (Batch.MultiModal): verl's
	// per-row multi_modal_inputs, flattened (see BatchMultiModal), and
	// the number of images of each row. position_ids is then (B, 4, P+R)
	// for M-RoPE models.
	TensorPixelValues   = "multi_modal_inputs.pixel_values"
	TensorImageGridTHW  = "multi_modal_inputs.image_grid_thw"
	TensorImagesSeqlens = "multi_modal_inputs.images_seqlens"
	TensorRowImages     = "multi_modal_inputs.row_images"
)

// BatchFormat is the __metadata__ "format" of the safetensors batch.
const BatchFormat = "agentrl.batch.v2"

// tensors lists the Batch's tensors in a fixed order. Integer tensors are
// int64, as torch.gather and embedding lookups need.
func (b *Batch) tensors() []stTensor {
	B, P, R := b.Size, b.PromptLen, b.ResponseLen
	ts := []stTensor{
		{name: TensorPrompts, dtype: "I64", shape: []int{B, P}, i32: b.Prompts},
		{name: TensorResponses, dtype: "I64", shape: []int{B, R}, i32: b.Responses},
		{name: TensorInputIDs, dtype: "I64", shape: []int{B, P + R}, i32: b.InputIDs},
		{name: TensorAttentionMask, dtype: "I64", shape: []int{B, P + R}, i32: b.AttentionMask},
		{name: TensorPositionIDs, dtype: "I64", shape: []int{B, P + R}, i32: b.PositionIDs},
		{name: TensorResponseMask, dtype: "I64", shape: []int{B, R}, i32: b.ResponseMask},
		{name: TensorRewards, dtype: "F32", shape: []int{B}, f32: b.Rewards},
		{name: TensorHasReward, dtype: "I64", shape: []int{B}, i32: b.HasReward},
		{name: TensorNumTurns, dtype: "I64", shape: []int{B}, i32: b.NumTurns},
		{name: TensorResponseLens, dtype: "I64", shape: []int{B}, i32: b.ResponseLens},
		{name: TensorIndices, dtype: "I64", shape: []int{B}, i32: b.Indices},
	}
	if b.allScored() {
		// verl adds rm_scores only when every row has a score; otherwise
		// its reward manager scores the batch later.
		ts = append(ts, stTensor{name: TensorRMScores, dtype: "F32", shape: []int{B, R}, f32: b.TokenLevelScores})
	}
	if b.RolloutLogprobs != nil {
		ts = append(ts, stTensor{name: TensorRolloutLogProbs, dtype: "F32", shape: []int{B, R}, f32: b.RolloutLogprobs})
	}
	if b.RoutedExperts != nil {
		ts = append(ts, stTensor{name: TensorRoutedExperts, dtype: "I16", shape: []int{B, P + R, b.RoutingLayers, b.RoutingTopK}, i16: b.RoutedExperts})
	}
	if b.LossMask != nil {
		ts = append(ts, stTensor{name: TensorLossMask, dtype: "I64", shape: []int{B, R}, i32: b.LossMask})
	}
	if mm := b.MultiModal; mm != nil {
		if mm.PositionIDs != nil {
			ts[4] = stTensor{name: TensorPositionIDs, dtype: "I64", shape: []int{B, 4, P + R}, i32: mm.PositionIDs}
		}
		rows := 0
		if mm.RowLen > 0 {
			rows = len(mm.PixelValues) / mm.RowLen
		}
		ts = append(ts,
			stTensor{name: TensorPixelValues, dtype: "F32", shape: []int{rows, mm.RowLen}, f32: mm.PixelValues},
			stTensor{name: TensorImageGridTHW, dtype: "I64", shape: []int{len(mm.ImageGridTHW) / 3, 3}, i32: mm.ImageGridTHW},
			stTensor{name: TensorImagesSeqlens, dtype: "I64", shape: []int{len(mm.ImagesSeqlens)}, i32: mm.ImagesSeqlens},
			stTensor{name: TensorRowImages, dtype: "I64", shape: []int{B}, i32: mm.RowImages})
	}
	return ts
}

func (b *Batch) allScored() bool {
	if b.Size == 0 || len(b.HasReward) != b.Size {
		return false
	}
	for _, h := range b.HasReward {
		if h == 0 {
			return false
		}
	}
	return true
}

func (b *Batch) metadata() (map[string]string, error) {
	md := map[string]string{
		"format":              BatchFormat,
		"prompt_len":          strconv.Itoa(b.PromptLen),
		"response_len":        strconv.Itoa(b.ResponseLen),
		"prompts_truncated":   strconv.Itoa(b.PromptsTruncated),
		"responses_truncated": strconv.Itoa(b.ResponsesTruncated),
	}
	for k, v := range map[string][]string{"ids": b.IDs, "group_ids": b.GroupIDs, "stop_reasons": b.StopReasons} {
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		md[k] = string(enc)
	}
	if b.RolloutIDs != nil {
		enc, err := json.Marshal(b.RolloutIDs)
		if err != nil {
			return nil, err
		}
		md["rollout_ids"] = string(enc)
	}
	nt := b.NonTensor
	if nt == nil {
		nt = map[string][]json.RawMessage{}
	}
	// No HTML escaping: the values come back byte for byte.
	var nb bytes.Buffer
	je := json.NewEncoder(&nb)
	je.SetEscapeHTML(false)
	if err := je.Encode(nt); err != nil {
		return nil, fmt.Errorf("non_tensor_batch: %w", err)
	}
	md["non_tensor_batch"] = strings.TrimSuffix(nb.String(), "\n")
	var enc []byte
	var err error
	metrics := b.Metrics
	if metrics == nil {
		metrics = []RowMetrics{}
	}
	if enc, err = json.Marshal(map[string]any{"metrics": metrics}); err != nil {
		return nil, fmt.Errorf("meta_info: %w", err)
	}
	md["meta_info"] = string(enc)
	return md, nil
}

// WriteSafetensors writes the batch as a safetensors file in verl's
// DataProto layout: int64 tensors prompts, responses, input_ids,
// attention_mask, position_ids and response_mask; float32
// rollout_log_probs (when the rows have logprobs) and rm_scores (when every
// row is scored, as verl does); int16 routed_experts [B, P+R, layers, topk]
// when the rows carry MoE routing (routing replay); agentrl's per-row rewards, has_reward,
// num_turns, response_lens and indices. The string metadata holds
// "non_tensor_batch" (a JSON object of per-row arrays: uid, index,
// turn_scores, tool_rewards, __num_turns__, raw_prompt, ...), "meta_info"
// ({"metrics": [...]}, times in seconds), ids, group_ids and stop_reasons
// (JSON arrays) and the lengths and truncation counts (decimal strings).
// A batch with multi-output rows also has the int64 loss_mask tensor, the
// "rollout_ids" array and non_tensor_batch "key" (see Batch.RolloutIDs).
// A batch with images (Batch.MultiModal) has float32
// multi_modal_inputs.pixel_values and int64 multi_modal_inputs.image_grid_thw,
// .images_seqlens and .row_images, and, for M-RoPE models, position_ids of
// shape [B, 4, P+R].
func (b *Batch) WriteSafetensors(w io.Writer) error {
	if b == nil {
		return fmt.Errorf("%w: nil batch", ErrSafetensors)
	}
	if w == nil {
		return ErrNilIO
	}
	if err := b.checkShapes(); err != nil {
		return err
	}
	ts := b.tensors()
	md, err := b.metadata()
	if err != nil {
		return fmt.Errorf("trajectory: safetensors metadata: %w", err)
	}
	specs := make([]safetensors.Tensor, len(ts))
	byName := make(map[string]stTensor, len(ts))
	for i, t := range ts {
		shape := make([]int64, len(t.shape))
		for j, d := range t.shape {
			shape[j] = int64(d)
		}
		specs[i] = safetensors.Tensor{Name: t.name, DType: safetensors.DType(t.dtype), Shape: shape}
		byName[t.name] = t
	}
	return safetensors.WriteStreamTo(w, specs, md, func(spec safetensors.Tensor, _ int64, w io.Writer) error {
		t := byName[spec.Name]
		switch t.dtype {
		case "I64":
			return writeI64(w, t.i32)
		case "I16":
			return writeI16(w, t.i16)
		}
		return writeF32(w, t.f32)
	})
}

// writeI64 writes int32 values sign-extended to little-endian int64.
func writeI64(w io.Writer, s []int32) error {
	var buf [8192]byte
	for len(s) > 0 {
		n := min(len(s), len(buf)/8)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint64(buf[8*i:], uint64(int64(s[i])))
		}
		if _, err := w.Write(buf[:8*n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

// writeI16 writes int16 values little-endian through a bounded buffer.
func writeI16(w io.Writer, s []int16) error {
	var buf [8192]byte
	for len(s) > 0 {
		n := min(len(s), len(buf)/2)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(buf[2*i:], uint16(s[i]))
		}
		if _, err := w.Write(buf[:2*n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

// writeF32 writes float32 values little-endian through a bounded buffer.
func writeF32(w io.Writer, s []float32) error {
	var buf [8192]byte
	for len(s) > 0 {
		n := min(len(s), len(buf)/4)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(s[i]))
		}
		if _, err := w.Write(buf[:4*n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

func (b *Batch) checkShapes() error {
	B, P, R := b.Size, b.PromptLen, b.ResponseLen
	if B < 0 || P <= 0 || R <= 0 {
		return fmt.Errorf("trajectory: batch has bad dimensions B=%d P=%d R=%d", B, P, R)
	}
	for _, t := range b.tensors() {
		want := 1
		for _, d := range t.shape {
			want *= d
		}
		if got := t.values(); got != want {
			return fmt.Errorf("trajectory: batch tensor %s has %d values, shape %v needs %d", t.name, got, t.shape, want)
		}
	}
	if len(b.TokenLevelScores) != B*R {
		return fmt.Errorf("trajectory: batch tensor %s has %d values, shape [%d %d] needs %d", TensorRMScores, len(b.TokenLevelScores), B, R, B*R)
	}
	for name, s := range map[string][]string{"ids": b.IDs, "group_ids": b.GroupIDs, "stop_reasons": b.StopReasons} {
		if len(s) != B {
			return fmt.Errorf("trajectory: batch %s has %d entries for %d rows", name, len(s), B)
		}
	}
	if b.RolloutIDs != nil && len(b.RolloutIDs) != B {
		return fmt.Errorf("trajectory: batch rollout_ids has %d entries for %d rows", len(b.RolloutIDs), B)
	}
	for k, col := range b.NonTensor {
		if len(col) != B {
			return fmt.Errorf("trajectory: batch non_tensor_batch %q has %d entries for %d rows", k, len(col), B)
		}
	}
	if b.Metrics != nil && len(b.Metrics) != B {
		return fmt.Errorf("trajectory: batch metrics has %d entries for %d rows", len(b.Metrics), B)
	}
	return nil
}

// ReadSafetensorsBatch reads a Batch written by WriteSafetensors. Every
// offset is checked against dtype×shape and the data size; tensors may not
// overlap or leave gaps; errors wrap ErrSafetensors and name the tensor.
func ReadSafetensorsBatch(r io.Reader) (*Batch, error) {
	if r == nil {
		return nil, ErrNilIO
	}
	h, data, err := safetensors.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSafetensors, err)
	}
	for _, t := range h.Tensors {
		switch t.DType {
		case safetensors.I64, safetensors.I32, safetensors.F32:
		case safetensors.I16:
			if t.Name != TensorRoutedExperts {
				return nil, fmt.Errorf("%w: tensor %q: dtype I16 (only %s is I16)", ErrSafetensors, t.Name, TensorRoutedExperts)
			}
		default:
			return nil, fmt.Errorf("%w: tensor %q: dtype %q (a batch holds only I64, I32, I16 and F32)", ErrSafetensors, t.Name, t.DType)
		}
	}
	md := h.Metadata
	b := &Batch{}
	atoi := func(key string) int {
		if err != nil {
			return 0
		}
		v, e := strconv.Atoi(md[key])
		if e != nil {
			err = fmt.Errorf("%w: metadata %q: %w", ErrSafetensors, key, e)
		}
		return v
	}
	b.PromptLen = atoi("prompt_len")
	b.ResponseLen = atoi("response_len")
	b.PromptsTruncated = atoi("prompts_truncated")
	b.ResponsesTruncated = atoi("responses_truncated")
	if err != nil {
		return nil, err
	}
	for key, dst := range map[string]*[]string{"ids": &b.IDs, "group_ids": &b.GroupIDs, "stop_reasons": &b.StopReasons} {
		if e := json.Unmarshal([]byte(md[key]), dst); e != nil {
			return nil, fmt.Errorf("%w: metadata %q: %w", ErrSafetensors, key, e)
		}
	}
	b.Size = len(b.IDs)
	if raw, ok := md["rollout_ids"]; ok {
		if e := json.Unmarshal([]byte(raw), &b.RolloutIDs); e != nil {
			return nil, fmt.Errorf("%w: metadata \"rollout_ids\": %w", ErrSafetensors, e)
		}
	}
	// Files written before the verl layout (agentrl.batch.v1) used int32
	// tensors and the names rollout_logprobs and token_level_scores.
	loadI := func(name string) []int32 {
		t, ok := h.Lookup(name)
		if err != nil {
			return nil
		}
		raw := data[t.Begin:t.End]
		switch {
		case ok && t.DType == safetensors.I32:
			out := make([]int32, len(raw)/4)
			for i := range out {
				out[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			return out
		case ok && t.DType == safetensors.I64:
			out := make([]int32, len(raw)/8)
			for i := range out {
				v := int64(binary.LittleEndian.Uint64(raw[8*i:]))
				if v < math.MinInt32 || v > math.MaxInt32 {
					err = fmt.Errorf("%w: tensor %q[%d] = %d does not fit a token id or mask (int32)", ErrSafetensors, name, i, v)
					return nil
				}
				out[i] = int32(v)
			}
			return out
		}
		err = fmt.Errorf("%w: tensor %q missing or not an integer tensor", ErrSafetensors, name)
		return nil
	}
	loadF := func(name string, optional bool, old string) []float32 {
		t, ok := h.Lookup(name)
		if !ok {
			t, ok = h.Lookup(old)
		}
		if err != nil || (!ok && optional) {
			return nil
		}
		if !ok || t.DType != safetensors.F32 {
			err = fmt.Errorf("%w: tensor %q missing or not F32", ErrSafetensors, name)
			return nil
		}
		raw := data[t.Begin:t.End]
		out := make([]float32, len(raw)/4)
		if e := safetensors.ToFloat32(out, t.DType, raw); e != nil {
			err = fmt.Errorf("%w: tensor %q: %w", ErrSafetensors, name, e)
			return nil
		}
		return out
	}
	b.Prompts = loadI("prompts")
	b.Responses = loadI("responses")
	b.InputIDs = loadI("input_ids")
	b.AttentionMask = loadI("attention_mask")
	b.PositionIDs = loadI("position_ids")
	if t, ok := h.Lookup(TensorPositionIDs); ok && len(t.Shape) == 3 && err == nil {
		// M-RoPE's (B, 4, L): Batch.PositionIDs is the text positions,
		// which Collate derives from the attention mask.
		b.MultiModal = &BatchMultiModal{PositionIDs: b.PositionIDs}
		b.PositionIDs = nil
	}
	b.ResponseMask = loadI("response_mask")
	b.HasReward = loadI("has_reward")
	b.NumTurns = loadI("num_turns")
	b.ResponseLens = loadI("response_lens")
	b.Indices = loadI("indices")
	if _, ok := h.Lookup(TensorLossMask); ok {
		b.LossMask = loadI(TensorLossMask)
	}
	b.TokenLevelScores = loadF(TensorRMScores, true, "token_level_scores")
	b.Rewards = loadF(TensorRewards, false, "")
	b.RolloutLogprobs = loadF(TensorRolloutLogProbs, true, "rollout_logprobs")
	if err != nil {
		return nil, err
	}
	if t, ok := h.Lookup(TensorRoutedExperts); ok {
		if len(t.Shape) != 4 || t.Shape[2] <= 0 || t.Shape[3] <= 0 || t.Shape[2] > math.MaxInt32 || t.Shape[3] > math.MaxInt32 {
			return nil, fmt.Errorf("%w: tensor %q: shape %v, want [B, P+R, layers, topk]", ErrSafetensors, TensorRoutedExperts, t.Shape)
		}
		b.RoutingLayers, b.RoutingTopK = int(t.Shape[2]), int(t.Shape[3])
		raw := data[t.Begin:t.End]
		b.RoutedExperts = make([]int16, len(raw)/2)
		for i := range b.RoutedExperts {
			b.RoutedExperts[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	}
	if _, ok := h.Lookup(TensorRowImages); ok {
		if b.MultiModal == nil {
			b.MultiModal = &BatchMultiModal{}
		}
		mm := b.MultiModal
		mm.RowImages = loadI(TensorRowImages)
		mm.ImageGridTHW = loadI(TensorImageGridTHW)
		mm.ImagesSeqlens = loadI(TensorImagesSeqlens)
		mm.PixelValues = loadF(TensorPixelValues, false, "")
		if err != nil {
			return nil, err
		}
		if t, _ := h.Lookup(TensorPixelValues); len(t.Shape) == 2 && t.Shape[1] > 0 && t.Shape[1] <= math.MaxInt32 {
			mm.RowLen = int(t.Shape[1])
		} else {
			return nil, fmt.Errorf("%w: tensor %q: shape %v, want [patches, row]", ErrSafetensors, TensorPixelValues, t.Shape)
		}
	}
	if b.MultiModal != nil && b.PositionIDs == nil {
		b.PositionIDs = textPositions(b.AttentionMask, b.Size, b.PromptLen+b.ResponseLen)
	}
	if b.TokenLevelScores == nil {
		// Not every row was scored, so there is no rm_scores (as in verl):
		// rebuild it from the rows' rewards, placed as Collate places them.
		b.TokenLevelScores = make([]float32, max(b.Size*b.ResponseLen, 0))
		if e := b.checkShapes(); e != nil {
			return nil, fmt.Errorf("%w: %w", ErrSafetensors, e)
		}
		for i, has := range b.HasReward {
			if has == 0 {
				continue
			}
			at := int(b.ResponseLens[i]) - 1
			if at < 0 || at >= b.ResponseLen {
				at = b.ResponseLen - 1
			}
			b.TokenLevelScores[i*b.ResponseLen+at] = b.Rewards[i]
		}
	}
	if raw, ok := md["non_tensor_batch"]; ok {
		if e := json.Unmarshal([]byte(raw), &b.NonTensor); e != nil {
			return nil, fmt.Errorf("%w: metadata \"non_tensor_batch\": %w", ErrSafetensors, e)
		}
	}
	if raw, ok := md["meta_info"]; ok {
		var mi struct {
			Metrics []RowMetrics `json:"metrics"`
		}
		if e := json.Unmarshal([]byte(raw), &mi); e != nil {
			return nil, fmt.Errorf("%w: metadata \"meta_info\": %w", ErrSafetensors, e)
		}
		b.Metrics = mi.Metrics
	}
	if e := b.checkShapes(); e != nil {
		return nil, fmt.Errorf("%w: %w", ErrSafetensors, e)
	}
	return b, nil
}

// textPositions is Collate's Batch.PositionIDs for an attention mask:
// 0, 1, … over the valid tokens, 0 before them, the last one repeated
// after them.
func textPositions(att []int32, B, L int) []int32 {
	if len(att) != B*L {
		return nil // checkShapes reports it
	}
	pos := make([]int32, B*L)
	for i := range B {
		row, p := att[i*L:(i+1)*L], int32(-1)
		for j, a := range row {
			p += a
			pos[i*L+j] = max(p, 0)
		}
	}
	return pos
}
