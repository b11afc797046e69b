package view

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// Options configure a report.
type Options struct {
	// Tokenizer decodes token ids to text piece by piece; nil shows ids.
	Tokenizer *tokenizer.Tokenizer
	// Batch is the collated batch the trajectories went into; when set,
	// its response_mask and responses are checked against each
	// trajectory's and the reward's column is taken from it.
	Batch *trajectory.Batch
	// Title heads the report; "" uses a default.
	Title string
	// Capture describes the black-box capture rollouts the trajectories
	// came from: the report shows each one's segments and what was
	// dropped.
	Capture []CaptureRollout
}

// Token kinds: the classes the HTML gives each token.
const (
	KindPrompt      = "prompt"      // a prompt token (never trained)
	KindPolicy      = "policy"      // response_mask 1: sampled by the policy, trained
	KindObservation = "observation" // response_mask 0: tool output, interaction text, template glue
)

// Token is one token as the report shows it.
type Token struct {
	Pos  int    // position in the response (-1 for prompt tokens)
	ID   int32  // token id
	Text string // decoded piece; "" while a UTF-8 character spans tokens
	Mask int8   // response_mask (0 for prompt tokens)
	// LP is the rollout logprob; HasLP says the trajectory had logprobs.
	LP    float32
	HasLP bool
	// Heat buckets -LP into 0 (certain) … 7 (very unlikely) for the heat map.
	Heat int
	// Reward marks the token the reward sits on at collation time.
	Reward bool
	// Mismatch says the batch's response_mask or response id disagrees here.
	Mismatch bool
	// Image is the 1-based number of the image this <|image_pad|> token
	// stands for (0: none); ImageHead, on the first pad of each block, is
	// the image shown where its placeholders stand.
	Image     int
	ImageHead *ImageView
}

// ImageView is one image of a trajectory as the report shows it.
type ImageView struct {
	N      int      // 1-based, in block order
	Grid   [3]int64 // image_grid_thw; zero when the trajectory has no grids
	Tokens int      // the block's pad tokens
	// Src is a data URL of the image's bytes when the trajectory kept
	// them (trajectory.MultiModal.Images); "" shows a box instead.
	Src template.URL
}

// Label describes the image.
func (v *ImageView) Label() string {
	s := fmt.Sprintf("image %d · %d tokens", v.N, v.Tokens)
	if v.Grid != [3]int64{} {
		s += fmt.Sprintf(" · grid %d×%d×%d", v.Grid[0], v.Grid[1], v.Grid[2])
	}
	return s
}

// Qwen-VL's vision block tokens, used when no tokenizer names them.
const (
	qwenVisionStart = 151652
	qwenImagePad    = 151655
)

// markImages numbers the image blocks of toks (prompt then response, the
// trajectory's whole sequence) and attaches each block's ImageView.
func markImages(toks []*Token, t *trajectory.Trajectory, tok *tokenizer.Tokenizer) []string {
	start, pad := int32(qwenVisionStart), int32(qwenImagePad)
	if tok != nil {
		s, ok1 := tok.TokenID("<|vision_start|>")
		p, ok2 := tok.TokenID("<|image_pad|>")
		if !ok1 || !ok2 {
			return nil
		}
		start, pad = s, p
	}
	var notes []string
	n := 0
	var cur *ImageView // the block being read
	for i, tk := range toks {
		if tk.ID != pad {
			cur = nil
			continue
		}
		if cur != nil {
			tk.Image = cur.N
			cur.Tokens++
			continue
		}
		if i == 0 || toks[i-1].ID != start {
			continue // a pad outside a block: shown as text
		}
		n++
		v := &ImageView{N: n, Tokens: 1}
		cur = v
		if mm := t.MultiModal; mm != nil {
			if n <= len(mm.ImageGridTHW) {
				v.Grid = mm.ImageGridTHW[n-1]
			}
			if n <= len(mm.Images) {
				v.Src = template.URL("data:" + http.DetectContentType(mm.Images[n-1]) + ";base64," + base64.StdEncoding.EncodeToString(mm.Images[n-1]))
			}
		}
		tk.Image, tk.ImageHead = n, v
	}
	if mm := t.MultiModal; mm != nil && len(mm.ImageGridTHW) != n {
		notes = append(notes, fmt.Sprintf("%d image blocks in the tokens, %d image grids in the trajectory", n, len(mm.ImageGridTHW)))
	}
	return notes
}

// Kind is the token's class: prompt, policy or observation.
func (t Token) Kind() string {
	switch {
	case t.Pos < 0:
		return KindPrompt
	case t.Mask == 1:
		return KindPolicy
	default:
		return KindObservation
	}
}

// Title is the hover text.
func (t Token) Title() string {
	var b strings.Builder
	if t.Pos < 0 {
		fmt.Fprintf(&b, "prompt · id %d", t.ID)
	} else {
		fmt.Fprintf(&b, "pos %d · id %d · mask %d", t.Pos, t.ID, t.Mask)
		if t.HasLP && t.Mask == 1 {
			fmt.Fprintf(&b, " · logprob %.4f · p %.3f", t.LP, math.Exp(float64(t.LP)))
		}
	}
	if t.Image > 0 {
		fmt.Fprintf(&b, " · image %d", t.Image)
	}
	if t.Reward {
		b.WriteString(" · reward sits here")
	}
	if t.Mismatch {
		b.WriteString(" · BATCH DISAGREES")
	}
	return b.String()
}

// Segment is a run of tokens of one kind: the prompt, one assistant turn's
// policy tokens, or the observation/glue between turns.
type Segment struct {
	Kind   string
	Turn   int // assistant turn (1-based) the segment belongs to; 0 for the prompt
	Tokens []Token
	// MeanLP is the mean logprob of a policy segment (NaN without logprobs).
	MeanLP float64
	// Errors counts the errors an observation segment feeds back to the
	// model: agentloop and tool write each failed or unparsable call as a
	// tool message starting "Error: " (0 without a tokenizer).
	Errors int
}

// Text is the segment's decoded text.
func (s Segment) Text() string {
	var b strings.Builder
	for _, t := range s.Tokens {
		b.WriteString(t.Text)
	}
	return b.String()
}

// Row is one trajectory's line in the table.
type Row struct {
	N            int // 0-based position in the file
	ID           string
	GroupID      string
	DataSource   string
	Reward       *float64
	NumTurns     int
	PromptLen    int
	ResponseLen  int
	PolicyTokens int
	Stop         string
	DurationMS   float64
	ToolCalls    int
	ToolErrors   int
	ToolMS       float64
	GenerateMS   float64
	Mismatches   int
}

// RewardText formats the reward for the table.
func (r Row) RewardText() string {
	if r.Reward == nil {
		return "—"
	}
	return fmt.Sprintf("%.4g", *r.Reward)
}

// RewardSort is the sort key of the reward column (unscored sorts first).
func (r Row) RewardSort() float64 {
	if r.Reward == nil {
		return math.Inf(-1)
	}
	return *r.Reward
}

// Detail is one trajectory in full.
type Detail struct {
	Row
	Segments []Segment
	// RewardPos is the response position the reward sits on (-1: none).
	RewardPos int
	// Notes are findings worth a reader's attention (batch mismatches,
	// truncation, errors recorded in Extra).
	Notes []string
	Extra []KV
}

// KV is one Extra field, its JSON value shown as text.
type KV struct{ Key, Value string }

func heat(lp float32) int {
	x := -float64(lp)
	for i, th := range []float64{0.01, 0.1, 0.3, 0.7, 1.5, 3, 6} {
		if x < th {
			return i
		}
	}
	return 7
}

// RowOf summarizes t; n is its position in the file.
func RowOf(n int, t *trajectory.Trajectory) Row {
	r := Row{
		N: n, ID: t.ID, GroupID: t.GroupID, Reward: t.Reward, NumTurns: t.NumTurns,
		PromptLen: len(t.PromptIDs), ResponseLen: len(t.ResponseIDs), PolicyTokens: t.MaskOnes(),
		Stop:       string(t.StopReason),
		DurationMS: float64(t.Timing.Total) / 1e6, ToolCalls: t.ToolCalls, ToolErrors: t.ToolErrors,
		ToolMS: float64(t.Timing.Tool) / 1e6, GenerateMS: float64(t.Timing.Generate) / 1e6,
	}
	if raw, ok := t.Extra["data_source"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			r.DataSource = s
		}
	}
	return r
}

// pieces decodes ids one piece per token. A character that spans tokens
// shows on the token that completes it; an id outside the vocabulary shows
// as ⟨id?⟩ without disturbing the rest.
func pieces(tok *tokenizer.Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	if tok == nil {
		for i, id := range ids {
			out[i] = fmt.Sprintf("⟨%d⟩", id)
		}
		return out
	}
	d := tok.NewDecoder(false)
	for i, id := range ids {
		s, err := d.Add(id)
		if err != nil {
			s = fmt.Sprintf("⟨%d?⟩", id)
		}
		out[i] = s
	}
	if len(ids) > 0 {
		out[len(ids)-1] += d.Flush()
	}
	return out
}

// batchRow finds t's row in b: by ID when t has one that b lists, else by
// position n.
func batchRow(b *trajectory.Batch, n int, t *trajectory.Trajectory) int {
	if t.ID != "" {
		for i, id := range b.IDs {
			if id == t.ID {
				return i
			}
		}
	}
	if n < b.Size && (len(b.IDs) <= n || b.IDs[n] == "" || t.ID == "") {
		return n
	}
	return -1
}

// DetailOf builds the full view of t; n is its position in the file.
func DetailOf(n int, t *trajectory.Trajectory, opts Options) Detail {
	d := Detail{Row: RowOf(n, t), RewardPos: -1}
	if t.Reward != nil && len(t.ResponseIDs) > 0 {
		d.RewardPos = len(t.ResponseIDs) - 1
	}
	mismatch := map[int]bool{}
	if b := opts.Batch; b != nil {
		row := batchRow(b, n, t)
		if row < 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("not in the batch (id %q)", t.ID))
		} else {
			R := b.ResponseLen
			valid := int(b.ResponseLens[row])
			if t.Reward != nil {
				d.RewardPos = valid - 1
				if valid == 0 {
					d.RewardPos = -1
					d.Notes = append(d.Notes, fmt.Sprintf("batch row %d: empty response; the reward sits on padding column %d", row, R-1))
				}
			}
			if len(t.ResponseIDs) > R {
				d.Notes = append(d.Notes, fmt.Sprintf("batch row %d: response cut from %d to %d tokens", row, len(t.ResponseIDs), R))
			}
			for i := 0; i < len(t.ResponseIDs) && i < R; i++ {
				if b.ResponseMask[row*R+i] != int32(t.ResponseMask[i]) || b.Responses[row*R+i] != t.ResponseIDs[i] {
					mismatch[i] = true
				}
			}
			if len(mismatch) > 0 {
				d.Mismatches = len(mismatch)
				d.Notes = append(d.Notes, fmt.Sprintf("batch row %d disagrees with the trajectory at %d response positions (mask or token id)", row, len(mismatch)))
			}
		}
	}
	for _, k := range sortedKeys(t.Extra) {
		d.Extra = append(d.Extra, KV{k, string(t.Extra[k])})
	}
	if t.Timing.Total > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("time: generate %.1f ms, tools %.1f ms, reward %.1f ms, total %.1f ms",
			float64(t.Timing.Generate)/1e6, float64(t.Timing.Tool)/1e6, float64(t.Timing.Reward)/1e6, float64(t.Timing.Total)/1e6))
	}

	all := pieces(opts.Tokenizer, append(append(make([]int32, 0, len(t.PromptIDs)+len(t.ResponseIDs)), t.PromptIDs...), t.ResponseIDs...))
	prompt := Segment{Kind: KindPrompt, MeanLP: math.NaN()}
	for i, id := range t.PromptIDs {
		prompt.Tokens = append(prompt.Tokens, Token{Pos: -1, ID: id, Text: all[i]})
	}
	d.Segments = append(d.Segments, prompt)
	turn := 0
	var cur *Segment
	for i, id := range t.ResponseIDs {
		tk := Token{Pos: i, ID: id, Text: all[len(t.PromptIDs)+i], Mask: t.ResponseMask[i], Reward: i == d.RewardPos, Mismatch: mismatch[i]}
		if t.Logprobs != nil {
			tk.HasLP, tk.LP = true, t.Logprobs[i]
			if tk.Mask == 1 {
				tk.Heat = heat(tk.LP)
			}
		}
		kind := tk.Kind()
		if cur == nil || cur.Kind != kind {
			if kind == KindPolicy {
				turn++
			}
			d.Segments = append(d.Segments, Segment{Kind: kind, Turn: turn, MeanLP: math.NaN()})
			cur = &d.Segments[len(d.Segments)-1]
		}
		cur.Tokens = append(cur.Tokens, tk)
	}
	var toks []*Token
	for i := range d.Segments {
		for j := range d.Segments[i].Tokens {
			toks = append(toks, &d.Segments[i].Tokens[j])
		}
	}
	d.Notes = append(d.Notes, markImages(toks, t, opts.Tokenizer)...)
	for i := range d.Segments {
		s := &d.Segments[i]
		if s.Kind == KindObservation && opts.Tokenizer != nil {
			s.Errors = strings.Count(s.Text(), errorPrefix)
		}
		if s.Kind != KindPolicy || t.Logprobs == nil || len(s.Tokens) == 0 {
			continue
		}
		sum := 0.0
		for _, tk := range s.Tokens {
			sum += float64(tk.LP)
		}
		s.MeanLP = sum / float64(len(s.Tokens))
	}
	return d
}

// errorPrefix starts every error agentloop and tool feed back to the model.
const errorPrefix = "Error: "

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
