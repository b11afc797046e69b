package reference

import (
	"errors"
	"fmt"
	"math"

	"github.com/agentrl/agentrl/cuda/train"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trajectory"
)

// ErrBatch is wrapped by errors about a batch the trainer cannot use.
var ErrBatch = errors.New("reference: bad batch")

// Config configures a Trainer.
type Config struct {
	AdamW AdamWConfig
	// MaxGradNorm clips the global gradient norm before each step; 0 = no
	// clipping.
	MaxGradNorm float64
}

// Trainer updates a train.Model with AdamW from masked token losses.
type Trainer struct {
	Model *train.Model
	Opt   *AdamW
	cfg   Config
}

// New returns a trainer for m.
func New(m *train.Model, cfg Config) (*Trainer, error) {
	if cfg.MaxGradNorm < 0 || math.IsNaN(cfg.MaxGradNorm) {
		return nil, fmt.Errorf("%w: MaxGradNorm must be >= 0, got %v", ErrConfig, cfg.MaxGradNorm)
	}
	opt, err := NewAdamW(m.Params(), cfg.AdamW)
	if err != nil {
		return nil, err
	}
	return &Trainer{Model: m, Opt: opt, cfg: cfg}, nil
}

// rows turns a collated batch into the model's token rows (prompt ++
// response, padding dropped) and returns, per row, the number of prompt
// tokens kept.
func rows(b *trajectory.Batch) ([][]int32, []int, error) {
	if b == nil || b.Size == 0 {
		return nil, nil, fmt.Errorf("%w: empty batch", ErrBatch)
	}
	P, R := b.PromptLen, b.ResponseLen
	W := P + R
	if len(b.InputIDs) != b.Size*W || len(b.AttentionMask) != b.Size*W || len(b.ResponseMask) != b.Size*R || len(b.ResponseLens) != b.Size {
		return nil, nil, fmt.Errorf("%w: tensors do not match Size %d, PromptLen %d, ResponseLen %d", ErrBatch, b.Size, P, R)
	}
	out := make([][]int32, b.Size)
	plens := make([]int, b.Size)
	for i := range out {
		am := b.AttentionMask[i*W : (i+1)*W]
		ids := b.InputIDs[i*W : (i+1)*W]
		pl := 0
		for j := 0; j < P; j++ {
			if am[j] != 0 {
				pl++
			}
		}
		rl := int(b.ResponseLens[i])
		if rl < 0 || rl > R {
			return nil, nil, fmt.Errorf("%w: row %d: response length %d outside [0,%d]", ErrBatch, i, rl, R)
		}
		if pl == 0 {
			return nil, nil, fmt.Errorf("%w: row %d has an empty prompt: its first response token has no context to be predicted from", ErrBatch, i)
		}
		for j := rl; j < R; j++ {
			if b.ResponseMask[i*R+j] != 0 {
				return nil, nil, fmt.Errorf("%w: row %d: response_mask is 1 on padding position %d (response length %d)", ErrBatch, i, j, rl)
			}
		}
		row := make([]int32, 0, pl+rl)
		row = append(row, ids[P-pl:P]...)
		row = append(row, ids[P:P+rl]...)
		out[i], plens[i] = row, pl
	}
	return out, plens, nil
}

// responseLogprobs runs the forward pass and returns the logprob of each
// response token as a [B,R] matrix (0 on padding).
func (t *Trainer) responseLogprobs(b *trajectory.Batch) (trainer.Matrix, [][]int32, []int, error) {
	rs, plens, err := rows(b)
	if err != nil {
		return trainer.Matrix{}, nil, nil, err
	}
	lp, err := t.Model.Forward(rs)
	if err != nil {
		return trainer.Matrix{}, nil, nil, fmt.Errorf("reference: forward: %w", err)
	}
	out, err := trainer.NewMatrix(b.Size, b.ResponseLen)
	if err != nil {
		return trainer.Matrix{}, nil, nil, err
	}
	for i := range rs {
		copy(out.Row(i), lp[i][plens[i]-1:])
	}
	return out, rs, plens, nil
}

// backward feeds dL/dlogp of response tokens ([B,R]) into the model.
func (t *Trainer) backward(grad trainer.Matrix, rs [][]int32, plens []int) error {
	d := make([][]float32, len(rs))
	for i, r := range rs {
		d[i] = make([]float32, len(r)-1)
		copy(d[i][plens[i]-1:], grad.Row(i)[:len(r)-plens[i]])
	}
	return t.Model.Backward(d)
}

// step clips, applies AdamW and clears the gradients; it returns the norm
// before clipping.
func (t *Trainer) step() (float64, error) {
	norm := GradNorm(t.Model.Params())
	var err error
	if t.cfg.MaxGradNorm > 0 {
		norm, err = ClipGradNorm(t.Model.Params(), t.cfg.MaxGradNorm)
	} else if math.IsNaN(norm) || math.IsInf(norm, 0) {
		err = fmt.Errorf("reference: gradient norm is %v", norm)
	}
	if err != nil {
		t.Model.ZeroGrad()
		return norm, err
	}
	t.Opt.Step()
	t.Model.ZeroGrad()
	return norm, nil
}

// SFTStats report one SFT step.
type SFTStats struct {
	Loss     float64 // mean negative log-likelihood over mask-1 tokens, before the update
	Tokens   int     // mask-1 tokens
	GradNorm float64 // before clipping
}

// SFTLoss is the mean negative log-likelihood of the batch's mask-1
// response tokens, and its gradient with respect to each response token's
// logprob. Mask-0 tokens (tool output, template glue, padding) are context
// only: they get no loss and no gradient.
func SFTLoss(logp trainer.Matrix, mask []int32) (float64, trainer.Matrix, int, error) {
	if len(mask) != len(logp.Data) {
		return 0, trainer.Matrix{}, 0, fmt.Errorf("%w: response_mask has %d values for %d logprobs", ErrBatch, len(mask), len(logp.Data))
	}
	n := 0
	for _, m := range mask {
		if m != 0 {
			n++
		}
	}
	if n == 0 {
		return 0, trainer.Matrix{}, 0, fmt.Errorf("%w: no response token has mask 1", ErrBatch)
	}
	grad, err := trainer.NewMatrix(logp.Rows, logp.Cols)
	if err != nil {
		return 0, trainer.Matrix{}, 0, err
	}
	var loss float64
	for k, m := range mask {
		if m != 0 {
			loss -= float64(logp.Data[k])
			grad.Data[k] = float32(-1 / float64(n))
		}
	}
	return loss / float64(n), grad, n, nil
}

// SFTStep trains on the mask-1 response tokens of b (cross-entropy) for one
// optimizer step.
func (t *Trainer) SFTStep(b *trajectory.Batch) (SFTStats, error) {
	lp, rs, plens, err := t.responseLogprobs(b)
	if err != nil {
		return SFTStats{}, err
	}
	loss, grad, n, err := SFTLoss(lp, b.ResponseMask)
	if err != nil {
		return SFTStats{}, err
	}
	if err := t.backward(grad, rs, plens); err != nil {
		return SFTStats{}, err
	}
	norm, err := t.step()
	return SFTStats{Loss: loss, Tokens: n, GradNorm: norm}, err
}

// EvalSFT returns the SFT loss of b without changing the model.
func (t *Trainer) EvalSFT(b *trajectory.Batch) (float64, error) {
	lp, _, _, err := t.responseLogprobs(b)
	if err != nil {
		return 0, err
	}
	loss, _, _, err := SFTLoss(lp, b.ResponseMask)
	return loss, err
}
