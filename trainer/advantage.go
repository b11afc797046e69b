package trainer

import (
	"errors"
	"fmt"
	"math"

	"github.com/agentrl/agentrl/trajectory"
)

// Matrix is a row-major [Rows, Cols] tensor: row i is
// Data[i*Cols:(i+1)*Cols]. Batch tensors of width ResponseLen are Matrices.
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// NewMatrix returns a zero [rows, cols] matrix. Negative sizes, and sizes
// over trajectory.MaxCollateElements values (the largest batch Collate
// makes), are ErrShape errors.
func NewMatrix(rows, cols int) (Matrix, error) {
	if rows < 0 || cols < 0 || (cols > 0 && rows > trajectory.MaxCollateElements/cols) {
		return Matrix{}, fmt.Errorf("%w: NewMatrix(%d, %d): sizes must be >= 0 and hold at most %d values", ErrShape, rows, cols, trajectory.MaxCollateElements)
	}
	return zeros(rows, cols), nil
}

// zeros is NewMatrix for shapes already checked.
func zeros(rows, cols int) Matrix {
	return Matrix{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
}

// FromBatch views a [B,R] tensor of the batch (TokenLevelScores,
// RolloutLogprobs, ...) as a Matrix without copying. A nil batch, or data
// that is not B×R values (RolloutLogprobs is nil when the rollouts were
// made without logprobs), is an ErrShape error.
func FromBatch(data []float32, b *trajectory.Batch) (Matrix, error) {
	if b == nil {
		return Matrix{}, fmt.Errorf("%w: FromBatch: nil batch", ErrShape)
	}
	if b.Size < 0 || b.ResponseLen < 0 || len(data) != b.Size*b.ResponseLen {
		return Matrix{}, fmt.Errorf("%w: FromBatch: %d values for the batch's [%d,%d] (a nil RolloutLogprobs means the rollouts had no logprobs)",
			ErrShape, len(data), b.Size, b.ResponseLen)
	}
	return Matrix{Rows: b.Size, Cols: b.ResponseLen, Data: data}, nil
}

// Row returns row i.
func (m Matrix) Row(i int) []float32 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// ErrShape is returned when tensors do not fit together.
var ErrShape = errors.New("trainer: shape mismatch")

// ErrTooFewTokens is returned by whitening when the mask selects fewer than
// two tokens: the unbiased variance is undefined (verl raises here too).
var ErrTooFewTokens = errors.New("trainer: whitening needs at least two masked tokens")

func checkShape(m Matrix, mask []int32, what string) error {
	if m.Rows < 0 || m.Cols < 0 || len(m.Data) != m.Rows*m.Cols {
		return fmt.Errorf("%w: %s has %d values for [%d,%d]", ErrShape, what, len(m.Data), m.Rows, m.Cols)
	}
	if mask != nil && len(mask) != len(m.Data) {
		return fmt.Errorf("%w: response_mask has %d values, %s has %d", ErrShape, len(mask), what, len(m.Data))
	}
	return nil
}

// grpoEpsilon is verl's epsilon in the GRPO denominator.
const grpoEpsilon = 1e-6

// groupStats returns, per row, its group's size, mean and unbiased standard
// deviation of the sequence scores. With rollouts, the rows of one rollout
// (a multi-output rollout's trajectories, which share its reward) count as
// one member of the group, with the score of its last row.
func groupStats(scores []float64, groups, rollouts []string) (n []int, mean, std []float64) {
	idx := map[string][]int{}
	for i, g := range groups {
		idx[g] = append(idx[g], i)
	}
	n = make([]int, len(scores))
	mean = make([]float64, len(scores))
	std = make([]float64, len(scores))
	for _, rows := range idx {
		members := rows
		if rollouts != nil {
			last := map[string]int{}
			var order []string
			for _, r := range rows {
				if _, seen := last[rollouts[r]]; !seen {
					order = append(order, rollouts[r])
				}
				last[rollouts[r]] = r
			}
			members = make([]int, len(order))
			for k, id := range order {
				members[k] = last[id]
			}
		}
		var s float64
		for _, r := range members {
			s += scores[r]
		}
		m := s / float64(len(members))
		var v float64
		for _, r := range members {
			d := scores[r] - m
			v += d * d
		}
		sd := math.NaN()
		if len(members) > 1 {
			sd = math.Sqrt(v / float64(len(members)-1))
		}
		for _, r := range rows {
			n[r], mean[r], std[r] = len(members), m, sd
		}
	}
	return n, mean, std
}

func sequenceScores(rewards Matrix) []float64 {
	s := make([]float64, rewards.Rows)
	for i := range s {
		for _, v := range rewards.Row(i) {
			s[i] += float64(v)
		}
	}
	return s
}

func broadcast(seq []float64, mask []int32, rows, cols int) Matrix {
	out := zeros(rows, cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out.Data[i*cols+j] = float32(seq[i] * float64(mask[i*cols+j]))
		}
	}
	return out
}

// GRPO computes group-relative outcome advantages: each row's sequence score
// (the sum of its token-level rewards) minus its group's mean, divided by the
// group's unbiased std + 1e-6, broadcast over the row's masked tokens
// (DrGRPO leaves the division out). A group of one gets mean 0 and std 1, as
// in verl.
func GRPO(rewards Matrix, mask []int32, groups []string) (Matrix, error) {
	return grpo(rewards, mask, groups, nil, true)
}

// DrGRPO is GRPO without the division by the group std (Dr.GRPO).
func DrGRPO(rewards Matrix, mask []int32, groups []string) (Matrix, error) {
	return grpo(rewards, mask, groups, nil, false)
}

// GRPORollouts is GRPO for a batch whose rollouts may have returned
// several trajectories (Batch.RolloutIDs): a group's mean and std are over
// its rollouts, each counted once, as verl's V1 trainer groups its n
// sessions; every row still gets its own advantage. rollouts names each
// row's rollout; nil is GRPO (every row its own rollout).
func GRPORollouts(rewards Matrix, mask []int32, groups, rollouts []string) (Matrix, error) {
	return grpo(rewards, mask, groups, rollouts, true)
}

// DrGRPORollouts is GRPORollouts without the division by the group std.
func DrGRPORollouts(rewards Matrix, mask []int32, groups, rollouts []string) (Matrix, error) {
	return grpo(rewards, mask, groups, rollouts, false)
}

func grpo(rewards Matrix, mask []int32, groups, rollouts []string, normByStd bool) (Matrix, error) {
	if err := checkShape(rewards, mask, "rewards"); err != nil {
		return Matrix{}, err
	}
	if len(groups) != rewards.Rows {
		return Matrix{}, fmt.Errorf("%w: %d group ids for %d rows", ErrShape, len(groups), rewards.Rows)
	}
	if rollouts != nil && len(rollouts) != rewards.Rows {
		return Matrix{}, fmt.Errorf("%w: %d rollout ids for %d rows", ErrShape, len(rollouts), rewards.Rows)
	}
	s := sequenceScores(rewards)
	n, mean, std := groupStats(s, groups, rollouts)
	for i := range s {
		m, sd := mean[i], std[i]
		if n[i] == 1 {
			m, sd = 0, 1
		}
		if normByStd {
			s[i] = (s[i] - m) / (sd + grpoEpsilon)
		} else {
			s[i] -= m
		}
	}
	return broadcast(s, mask, rewards.Rows, rewards.Cols), nil
}

// RLOO computes leave-one-out advantages: for a group of n > 1,
// score·n/(n−1) − mean·n/(n−1), which equals the score minus the mean of the
// other members; a group of one keeps its score.
func RLOO(rewards Matrix, mask []int32, groups []string) (Matrix, error) {
	if err := checkShape(rewards, mask, "rewards"); err != nil {
		return Matrix{}, err
	}
	if len(groups) != rewards.Rows {
		return Matrix{}, fmt.Errorf("%w: %d group ids for %d rows", ErrShape, len(groups), rewards.Rows)
	}
	s := sequenceScores(rewards)
	n, mean, _ := groupStats(s, groups, nil)
	for i := range s {
		if k := float64(n[i]); n[i] > 1 {
			s[i] = s[i]*k/(k-1) - mean[i]*k/(k-1)
		}
	}
	return broadcast(s, mask, rewards.Rows, rewards.Cols), nil
}

// maskedWhiten normalizes values to zero mean and unit (unbiased) variance
// over the masked tokens: (v − mean)·rsqrt(var + 1e-8), as verl's
// masked_whiten. Unmasked positions are transformed too; callers zero them.
func maskedWhiten(values []float64, mask []int32) ([]float64, error) {
	var sum, cnt float64
	for i, v := range values {
		if mask[i] != 0 {
			sum += v
			cnt++
		}
	}
	if cnt < 2 {
		return nil, fmt.Errorf("%w: mask selects %v", ErrTooFewTokens, cnt)
	}
	mean := sum / (cnt + 1e-8)
	var sq float64
	for i, v := range values {
		if mask[i] != 0 {
			d := v - mean
			sq += d * d
		}
	}
	variance := sq / (cnt + 1e-8) * (cnt / (cnt - 1))
	inv := 1 / math.Sqrt(variance+1e-8)
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = (v - mean) * inv
	}
	return out, nil
}

// ReinforcePP computes REINFORCE++ advantages: discounted returns of the
// token-level rewards (the running return resets where the mask is 0, so
// tool tokens do not carry it), whitened over the whole batch's masked
// tokens, then masked. It also returns the unwhitened returns.
func ReinforcePP(rewards Matrix, mask []int32, gamma float64) (adv, returns Matrix, err error) {
	if err := checkShape(rewards, mask, "rewards"); err != nil {
		return Matrix{}, Matrix{}, err
	}
	R := rewards.Cols
	ret := make([]float64, len(rewards.Data))
	for i := 0; i < rewards.Rows; i++ {
		running := 0.0
		for t := R - 1; t >= 0; t-- {
			k := i*R + t
			running = float64(rewards.Data[k]) + gamma*running
			ret[k] = running
			running *= float64(mask[k])
		}
	}
	w, err := maskedWhiten(ret, mask)
	if err != nil {
		return Matrix{}, Matrix{}, fmt.Errorf("trainer: REINFORCE++: %w", err)
	}
	adv, returns = zeros(rewards.Rows, R), zeros(rewards.Rows, R)
	for k := range w {
		adv.Data[k] = float32(w[k] * float64(mask[k]))
		returns.Data[k] = float32(ret[k])
	}
	return adv, returns, nil
}

// GAE computes generalized advantage estimates with a value vector. Tokens
// with mask 0 (tool output inside a multi-turn response) are skipped: they
// pass the next value and the running estimate through unchanged, as in
// verl. Returns are advantages + values (before whitening); advantages are
// whitened over the masked tokens.
func GAE(rewards, values Matrix, mask []int32, gamma, lambda float64) (adv, returns Matrix, err error) {
	if err := checkShape(rewards, mask, "rewards"); err != nil {
		return Matrix{}, Matrix{}, err
	}
	if err := checkShape(values, mask, "values"); err != nil {
		return Matrix{}, Matrix{}, err
	}
	R := rewards.Cols
	a := make([]float64, len(rewards.Data))
	returns = zeros(rewards.Rows, R)
	for i := 0; i < rewards.Rows; i++ {
		next, last := 0.0, 0.0
		for t := R - 1; t >= 0; t-- {
			k := i*R + t
			m := float64(mask[k])
			v := float64(values.Data[k])
			delta := float64(rewards.Data[k]) + gamma*next - v
			cand := delta + gamma*lambda*last
			next = v*m + (1-m)*next
			last = cand*m + (1-m)*last
			a[k] = last
			returns.Data[k] = float32(last + v)
		}
	}
	w, err := maskedWhiten(a, mask)
	if err != nil {
		return Matrix{}, Matrix{}, fmt.Errorf("trainer: GAE: %w", err)
	}
	adv = zeros(rewards.Rows, R)
	for k := range w {
		adv.Data[k] = float32(w[k])
	}
	return adv, returns, nil
}
