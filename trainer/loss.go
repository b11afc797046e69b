package trainer

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// KLKind selects a KL estimator between the policy and a reference.
type KLKind string

// KL estimators, named as verl names them (the aliases in parentheses are
// accepted by ParseKLKind).
const (
	KLK1  KLKind = "k1"  // logp − ref ("kl")
	KLAbs KLKind = "abs" // |logp − ref|
	KLK2  KLKind = "k2"  // ½(logp − ref)² ("mse")
	// KLK3 is the low-variance estimator ("low_var_kl"): with d = ref − logp
	// clamped to [−20, 20], exp(d) − d − 1, clamped to [−10, 10].
	KLK3 KLKind = "k3"
)

// ErrUnknown is returned for an unknown estimator or mode name.
var ErrUnknown = errors.New("trainer: unknown name")

// ParseKLKind accepts verl's names and aliases.
func ParseKLKind(s string) (KLKind, error) {
	switch s {
	case "k1", "kl":
		return KLK1, nil
	case "abs":
		return KLAbs, nil
	case "k2", "mse":
		return KLK2, nil
	case "k3", "low_var_kl":
		return KLK3, nil
	}
	return "", fmt.Errorf("%w: KL estimator %q (want k1/kl, abs, k2/mse, k3/low_var_kl)", ErrUnknown, s)
}

func klValue(kind KLKind, logp, ref float64) (float64, error) {
	switch kind {
	case KLK1:
		return logp - ref, nil
	case KLAbs:
		return math.Abs(logp - ref), nil
	case KLK2:
		d := logp - ref
		return 0.5 * d * d, nil
	case KLK3:
		d := clamp(ref-logp, -20, 20)
		return clamp(math.Exp(d)-d-1, -10, 10), nil
	}
	return 0, fmt.Errorf("%w: KL estimator %q", ErrUnknown, kind)
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// KL returns the per-token KL estimate between logprob and ref (not masked).
func KL(logprob, ref Matrix, kind KLKind) (Matrix, error) {
	if err := checkShape(logprob, nil, "logprob"); err != nil {
		return Matrix{}, err
	}
	if err := checkShape(ref, nil, "ref logprob"); err != nil {
		return Matrix{}, err
	}
	if ref.Rows != logprob.Rows || ref.Cols != logprob.Cols {
		return Matrix{}, fmt.Errorf("%w: logprob [%d,%d], ref [%d,%d]", ErrShape, logprob.Rows, logprob.Cols, ref.Rows, ref.Cols)
	}
	out := zeros(logprob.Rows, logprob.Cols)
	for k := range out.Data {
		v, err := klValue(kind, float64(logprob.Data[k]), float64(ref.Data[k]))
		if err != nil {
			return Matrix{}, err
		}
		out.Data[k] = float32(v)
	}
	return out, nil
}

// ApplyKLPenalty turns token-level scores into token-level rewards:
// scores − beta·KL(old, ref)·mask. It also returns the batch's mean
// per-sequence KL (verl's actor/reward_kl_penalty metric).
func ApplyKLPenalty(scores, old, ref Matrix, mask []int32, kind KLKind, beta float64) (Matrix, float64, error) {
	if err := checkShape(scores, mask, "scores"); err != nil {
		return Matrix{}, 0, err
	}
	kl, err := KL(old, ref, kind)
	if err != nil {
		return Matrix{}, 0, err
	}
	if kl.Rows != scores.Rows || kl.Cols != scores.Cols {
		return Matrix{}, 0, fmt.Errorf("%w: logprobs [%d,%d], scores [%d,%d]", ErrShape, kl.Rows, kl.Cols, scores.Rows, scores.Cols)
	}
	out := zeros(scores.Rows, scores.Cols)
	var meanKL float64
	for i := 0; i < scores.Rows; i++ {
		var s, n float64
		for j := 0; j < scores.Cols; j++ {
			k := i*scores.Cols + j
			m := float64(mask[k])
			d := float64(kl.Data[k]) * m
			out.Data[k] = float32(float64(scores.Data[k]) - beta*d)
			s += d
			n += m
		}
		meanKL += s / (n + 1e-8)
	}
	if scores.Rows > 0 {
		meanKL /= float64(scores.Rows)
	}
	return out, meanKL, nil
}

// AggMode says how a [B,R] token loss becomes a scalar.
type AggMode string

// Loss aggregation modes (verl's loss_agg_mode).
const (
	// TokenMean: sum over all masked tokens / number of masked tokens.
	TokenMean AggMode = "token-mean"
	// SeqMeanTokenSum: per-row sum over masked tokens, mean over rows.
	SeqMeanTokenSum AggMode = "seq-mean-token-sum"
	// SeqMeanTokenMean: per-row mean over masked tokens, mean over rows. A
	// row with no masked token contributes 0 (verl would produce NaN).
	SeqMeanTokenMean AggMode = "seq-mean-token-mean"
	// SeqMeanTokenSumNorm: total masked sum / ResponseLen (Dr.GRPO).
	SeqMeanTokenSumNorm AggMode = "seq-mean-token-sum-norm"
)

// aggWeights returns w such that the aggregated loss is Σ w·loss: also the
// gradient of the aggregate with respect to each token's loss.
func aggWeights(mask []int32, rows, cols int, mode AggMode) ([]float64, error) {
	w := make([]float64, len(mask))
	switch mode {
	case TokenMean:
		var n float64
		for _, m := range mask {
			n += float64(m)
		}
		for k, m := range mask {
			w[k] = float64(m) / (n + 1e-8)
		}
	case SeqMeanTokenSum:
		for k, m := range mask {
			w[k] = float64(m) / float64(rows)
		}
	case SeqMeanTokenMean:
		for i := 0; i < rows; i++ {
			var n float64
			for _, m := range mask[i*cols : (i+1)*cols] {
				n += float64(m)
			}
			if n == 0 {
				continue
			}
			for j := 0; j < cols; j++ {
				w[i*cols+j] = float64(mask[i*cols+j]) / (n * float64(rows))
			}
		}
	case SeqMeanTokenSumNorm:
		for k, m := range mask {
			w[k] = float64(m) / float64(cols)
		}
	default:
		return nil, fmt.Errorf("%w: loss aggregation %q", ErrUnknown, mode)
	}
	return w, nil
}

// AggLoss aggregates a token loss matrix into a scalar.
func AggLoss(loss Matrix, mask []int32, mode AggMode) (float64, error) {
	if err := checkShape(loss, mask, "loss"); err != nil {
		return 0, err
	}
	if loss.Rows == 0 {
		return 0, nil
	}
	w, err := aggWeights(mask, loss.Rows, loss.Cols, mode)
	if err != nil {
		return 0, err
	}
	var s float64
	for k, v := range loss.Data {
		if w[k] != 0 {
			s += w[k] * float64(v)
		}
	}
	return s, nil
}

// PPOConfig configures the clipped policy loss.
type PPOConfig struct {
	// ClipLow and ClipHigh bound the ratio to [1−ClipLow, 1+ClipHigh].
	ClipLow, ClipHigh float64
	// ClipC is the dual-clip bound for negative advantages (> 1; verl's
	// default is 3).
	ClipC float64
	Agg   AggMode
}

// PolicyInputs are the [B,R] tensors of one policy-loss evaluation.
type PolicyInputs struct {
	Old, LogProb, Advantages Matrix
	Mask                     []int32
	// ISWeights, when set, multiplies every token's loss (truncated
	// importance sampling between rollout and training policies; see
	// ImportanceWeights). It carries no gradient.
	ISWeights *Matrix
}

// PolicyLossResult is the loss, verl's metrics, and the gradient of the loss
// with respect to each token's LogProb (0 on unmasked tokens).
type PolicyLossResult struct {
	Loss          float64
	ClipFrac      float64 // fraction of masked tokens where the clip was active
	ClipFracLower float64 // fraction where the dual clip bound was active
	ApproxKL      float64 // masked mean of old − new
	Grad          Matrix
}

// PolicyLoss computes the PPO clipped surrogate with dual clip, as verl's
// vanilla policy loss: ratio = exp(clamp(new − old, −20, 20)); per token
// max(−A·ratio, −A·clip(ratio)); for A < 0 additionally min(that, −A·ClipC).
func PolicyLoss(in PolicyInputs, cfg PPOConfig) (PolicyLossResult, error) {
	if err := checkShape(in.LogProb, in.Mask, "logprob"); err != nil {
		return PolicyLossResult{}, err
	}
	for name, m := range map[string]Matrix{"old logprob": in.Old, "advantages": in.Advantages} {
		if err := checkShape(m, in.Mask, name); err != nil {
			return PolicyLossResult{}, err
		}
	}
	if in.ISWeights != nil {
		if err := checkShape(*in.ISWeights, in.Mask, "importance weights"); err != nil {
			return PolicyLossResult{}, err
		}
	}
	if cfg.ClipC <= 1 {
		return PolicyLossResult{}, fmt.Errorf("trainer: PolicyLoss: ClipC must be > 1, got %v", cfg.ClipC)
	}
	R, B := in.LogProb.Cols, in.LogProb.Rows
	w, err := aggWeights(in.Mask, B, R, cfg.Agg)
	if err != nil {
		return PolicyLossResult{}, err
	}
	res := PolicyLossResult{Grad: zeros(B, R)}
	var maskSum, clipped, clippedLower, kl float64
	for k := range in.Mask {
		m := float64(in.Mask[k])
		maskSum += m
		logRatio := float64(in.LogProb.Data[k]) - float64(in.Old.Data[k])
		clampedLR := clamp(logRatio, -20, 20)
		dRatio := 1.0 // d clampedLR / d logprob
		if logRatio < -20 || logRatio > 20 {
			dRatio = 0
		}
		ratio := math.Exp(clampedLR)
		kl += -clampedLR * m
		a := float64(in.Advantages.Data[k])
		l1 := -a * ratio
		l2 := -a * clamp(ratio, 1-cfg.ClipLow, 1+cfg.ClipHigh)
		loss, grad := l1, -a*ratio*dRatio // d l1 / d logprob
		if l2 > l1 {
			loss, grad = l2, 0 // clipped: constant in logprob
			clipped += m
		}
		if a < 0 {
			l3 := -a * cfg.ClipC
			if loss > l3 {
				clippedLower += m
				loss, grad = l3, 0
			}
		}
		if in.ISWeights != nil {
			iw := float64(in.ISWeights.Data[k])
			loss *= iw
			grad *= iw
		}
		res.Loss += w[k] * loss
		res.Grad.Data[k] = float32(w[k] * grad)
	}
	res.ClipFrac = clipped / (maskSum + 1e-8)
	res.ClipFracLower = clippedLower / (maskSum + 1e-8)
	res.ApproxKL = kl / (maskSum + 1e-8)
	return res, nil
}

// ISLevel selects token- or sequence-level importance weights.
type ISLevel string

// Importance-sampling levels.
const (
	ISToken    ISLevel = "token"
	ISSequence ISLevel = "sequence"
)

// ImportanceWeights returns truncated importance-sampling weights that
// correct for the rollout engine's policy differing from the trainer's
// (different kernels, precision, or weights mid-update):
//
//   - token level: w = min(exp(old − rollout), cap) per token;
//   - sequence level: w = min(exp(Σ_masked (old − rollout)), cap) for every
//     token of the row.
//
// Log ratios are clamped to [−20, 20] before exp. Unmasked tokens get 0.
func ImportanceWeights(old, rollout Matrix, mask []int32, level ISLevel, cap float64) (Matrix, error) {
	if err := checkShape(old, mask, "old logprob"); err != nil {
		return Matrix{}, err
	}
	if err := checkShape(rollout, mask, "rollout logprob"); err != nil {
		return Matrix{}, err
	}
	if cap <= 0 {
		return Matrix{}, fmt.Errorf("trainer: ImportanceWeights: cap must be > 0, got %v", cap)
	}
	out := zeros(old.Rows, old.Cols)
	switch level {
	case ISToken:
		for k, m := range mask {
			if m != 0 {
				out.Data[k] = float32(math.Min(math.Exp(clamp(float64(old.Data[k])-float64(rollout.Data[k]), -20, 20)), cap))
			}
		}
	case ISSequence:
		for i := 0; i < old.Rows; i++ {
			var s float64
			for j := 0; j < old.Cols; j++ {
				k := i*old.Cols + j
				s += (float64(old.Data[k]) - float64(rollout.Data[k])) * float64(mask[k])
			}
			wv := float32(math.Min(math.Exp(clamp(s, -20, 20)), cap))
			for j := 0; j < old.Cols; j++ {
				if k := i*old.Cols + j; mask[k] != 0 {
					out.Data[k] = wv
				}
			}
		}
	default:
		return Matrix{}, fmt.Errorf("%w: importance-sampling level %q", ErrUnknown, level)
	}
	return out, nil
}

// Mismatch summarizes how far the rollout engine's logprobs are from the
// trainer's for the same tokens: the input that decides whether TIS is
// needed.
type Mismatch struct {
	Tokens int
	// K1 and K3 estimate KL(rollout ‖ train) from the rollout's samples:
	// mean of rollout − train, and mean of exp(train − rollout) −
	// (train − rollout) − 1.
	K1, K3 float64
	// MaxAbsDiff is the largest |rollout − train| over masked tokens.
	MaxAbsDiff float64
	// MeanAbsProbDiff is the mean of |exp(rollout) − exp(train)|.
	MeanAbsProbDiff float64
	// PPLRatio is the mean over rows of exp(mean(−train)) / exp(mean(−rollout)).
	PPLRatio float64
	// PerTurn has one entry per assistant turn index (the k-th run of
	// mask-1 tokens within a row), aggregated over rows.
	PerTurn []TurnMismatch
}

// TurnMismatch is Mismatch restricted to the k-th assistant turn of rows.
type TurnMismatch struct {
	Turn, Tokens int
	K1, K3       float64
	MaxAbsDiff   float64
}

// MismatchMetrics compares rollout and training logprobs over masked tokens.
func MismatchMetrics(train, rollout Matrix, mask []int32) (Mismatch, error) {
	if err := checkShape(train, mask, "train logprob"); err != nil {
		return Mismatch{}, err
	}
	if err := checkShape(rollout, mask, "rollout logprob"); err != nil {
		return Mismatch{}, err
	}
	var out Mismatch
	turns := map[int]*TurnMismatch{}
	var pplRows int
	for i := 0; i < train.Rows; i++ {
		turn := -1
		prev := int32(0)
		var sumT, sumR, n float64
		for j := 0; j < train.Cols; j++ {
			k := i*train.Cols + j
			m := mask[k]
			if m != 0 && prev == 0 {
				turn++
			}
			prev = m
			if m == 0 {
				continue
			}
			t, r := float64(train.Data[k]), float64(rollout.Data[k])
			d := t - r
			k3 := math.Exp(d) - d - 1
			out.Tokens++
			out.K1 += r - t
			out.K3 += k3
			out.MaxAbsDiff = math.Max(out.MaxAbsDiff, math.Abs(d))
			out.MeanAbsProbDiff += math.Abs(math.Exp(r) - math.Exp(t))
			tm := turns[turn]
			if tm == nil {
				tm = &TurnMismatch{Turn: turn}
				turns[turn] = tm
			}
			tm.Tokens++
			tm.K1 += r - t
			tm.K3 += k3
			tm.MaxAbsDiff = math.Max(tm.MaxAbsDiff, math.Abs(d))
			sumT += t
			sumR += r
			n++
		}
		if n > 0 {
			out.PPLRatio += math.Exp(-sumT/n) / math.Exp(-sumR/n)
			pplRows++
		}
	}
	if out.Tokens > 0 {
		n := float64(out.Tokens)
		out.K1 /= n
		out.K3 /= n
		out.MeanAbsProbDiff /= n
	}
	if pplRows > 0 {
		out.PPLRatio /= float64(pplRows)
	}
	for _, tm := range turns {
		tm.K1 /= float64(tm.Tokens)
		tm.K3 /= float64(tm.Tokens)
		out.PerTurn = append(out.PerTurn, *tm)
	}
	sort.Slice(out.PerTurn, func(a, b int) bool { return out.PerTurn[a].Turn < out.PerTurn[b].Turn })
	return out, nil
}

// FilterGroups is DAPO's dynamic-sampling filter: it returns the indices of
// the rows whose group's metric (usually the sequence reward) varies — a
// group whose members all scored the same gives GRPO no signal — plus rows
// of groups of one. Order is preserved.
func FilterGroups(groups []string, metric []float64) ([]int, error) {
	if len(groups) != len(metric) {
		return nil, fmt.Errorf("%w: %d group ids for %d metric values", ErrShape, len(groups), len(metric))
	}
	byGroup := map[string][]float64{}
	for i, g := range groups {
		byGroup[g] = append(byGroup[g], metric[i])
	}
	keepGroup := map[string]bool{}
	for g, vals := range byGroup {
		if len(vals) == 1 {
			keepGroup[g] = true
			continue
		}
		var mean float64
		for _, v := range vals {
			mean += v
		}
		mean /= float64(len(vals))
		var sq float64
		for _, v := range vals {
			sq += (v - mean) * (v - mean)
		}
		keepGroup[g] = math.Sqrt(sq/float64(len(vals))) > 0
	}
	var keep []int
	for i, g := range groups {
		if keepGroup[g] {
			keep = append(keep, i)
		}
	}
	return keep, nil
}
