package reference

import (
	"errors"
	"fmt"
	"math"

	"github.com/agentrl/agentrl/cuda/train"
)

// ErrConfig is wrapped by errors about invalid hyperparameters.
var ErrConfig = errors.New("reference: invalid config")

// AdamWConfig are torch.optim.AdamW's hyperparameters.
type AdamWConfig struct {
	LR           float64
	Beta1, Beta2 float64
	Eps          float64
	WeightDecay  float64
}

func (c AdamWConfig) validate() error {
	switch {
	case !(c.LR > 0):
		return fmt.Errorf("%w: AdamW LR must be > 0, got %v", ErrConfig, c.LR)
	case !(c.Beta1 >= 0 && c.Beta1 < 1), !(c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("%w: AdamW betas must be in [0,1), got %v, %v", ErrConfig, c.Beta1, c.Beta2)
	case !(c.Eps > 0):
		return fmt.Errorf("%w: AdamW Eps must be > 0, got %v", ErrConfig, c.Eps)
	case !(c.WeightDecay >= 0):
		return fmt.Errorf("%w: AdamW WeightDecay must be >= 0, got %v", ErrConfig, c.WeightDecay)
	}
	return nil
}

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter), exactly
// as torch.optim.AdamW (amsgrad off) computes it:
//
//	p ← p·(1 − lr·wd)
//	m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²
//	p ← p − lr/(1−β1^t) · m / (√v/√(1−β2^t) + eps)
//
// Moments are kept in float64 so long runs do not drift from the reference.
type AdamW struct {
	cfg    AdamWConfig
	params []*train.Param
	m, v   [][]float64
	step   int
}

// NewAdamW returns an optimizer over params.
func NewAdamW(params []*train.Param, cfg AdamWConfig) (*AdamW, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := &AdamW{cfg: cfg, params: params}
	for _, p := range params {
		if len(p.Grad) != len(p.Data) {
			return nil, fmt.Errorf("%w: parameter %s has %d gradient values for %d weights", ErrConfig, p.Name, len(p.Grad), len(p.Data))
		}
		o.m = append(o.m, make([]float64, len(p.Data)))
		o.v = append(o.v, make([]float64, len(p.Data)))
	}
	return o, nil
}

// Steps is the number of steps taken.
func (o *AdamW) Steps() int { return o.step }

// SetLR changes the learning rate (schedules).
func (o *AdamW) SetLR(lr float64) { o.cfg.LR = lr }

// Step applies one update from the parameters' current gradients.
func (o *AdamW) Step() {
	o.step++
	c := o.cfg
	bc1 := 1 - math.Pow(c.Beta1, float64(o.step))
	bc2 := 1 - math.Pow(c.Beta2, float64(o.step))
	stepSize := c.LR / bc1
	sqrtBC2 := math.Sqrt(bc2)
	decay := 1 - c.LR*c.WeightDecay
	for i, p := range o.params {
		m, v := o.m[i], o.v[i]
		for j, g32 := range p.Grad {
			g := float64(g32)
			w := float64(p.Data[j]) * decay
			m[j] = c.Beta1*m[j] + (1-c.Beta1)*g
			v[j] = c.Beta2*v[j] + (1-c.Beta2)*g*g
			w -= stepSize * m[j] / (math.Sqrt(v[j])/sqrtBC2 + c.Eps)
			p.Data[j] = float32(w)
		}
	}
}

// GradNorm is the global L2 norm of every gradient.
func GradNorm(params []*train.Param) float64 {
	var s float64
	for _, p := range params {
		for _, g := range p.Grad {
			s += float64(g) * float64(g)
		}
	}
	return math.Sqrt(s)
}

// ClipGradNorm scales every gradient by min(1, maxNorm/(norm + 1e-6)) as
// torch.nn.utils.clip_grad_norm_ does, and returns the norm before
// clipping. A non-finite norm is an error and leaves the gradients alone:
// stepping on it would destroy the weights.
func ClipGradNorm(params []*train.Param, maxNorm float64) (float64, error) {
	norm := GradNorm(params)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("reference: gradient norm is %v", norm)
	}
	coef := maxNorm / (norm + 1e-6)
	if coef >= 1 {
		return norm, nil
	}
	for _, p := range params {
		for j := range p.Grad {
			p.Grad[j] = float32(float64(p.Grad[j]) * coef)
		}
	}
	return norm, nil
}
