package arith_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/internal/arith"
	"github.com/agentrl/agentrl/tokenizer"
)

// TestKVBF16HeldOut measures what a bf16 KV cache does to a trained model's
// rollouts: the committed checkpoint runs 256 held-out tasks greedily on an
// fp32 cache and on a bf16 one. A bf16 cache rounds every key and value
// (2^-9 relative), so logprobs move a little; greedy trajectories must
// stay the same (a flip needs a near tie in some step's top two) and the
// accuracy with them. Measured: 256 of 256 trajectories the same token for
// token, logprobs 1.7e-4 apart on average and 0.047 at most.
func TestKVBF16HeldOut(t *testing.T) {
	ctx := context.Background()
	dir := embedded(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	tasks, err := arith.Generate(arith.DemoSeed, 256, arith.HeldOut)
	require.NoError(t, err)
	run := func(kv model.KVType) (arith.Eval, [][]int32, [][]float32, [][]int8) {
		m, err := model.Load(dir, nil)
		require.NoError(t, err)
		opts := arith.EngineOptions(2)
		opts.KVCache = kv
		e, err := cuda.New(m, opts)
		require.NoError(t, err)
		defer e.Close()
		ev, out, err := arith.Evaluate(ctx, e, tok, tasks)
		require.NoError(t, err)
		var ids [][]int32
		var lps [][]float32
		var masks [][]int8
		for _, r := range out.Results {
			require.Len(t, r.Trajectories, 1)
			tr := r.Trajectories[0]
			require.Len(t, tr.Logprobs, len(tr.ResponseIDs))
			ids, lps, masks = append(ids, tr.ResponseIDs), append(lps, tr.Logprobs), append(masks, tr.ResponseMask)
		}
		return ev, ids, lps, masks
	}
	ev32, ids32, lp32, mask := run(model.KVF32)
	ev16, ids16, lp16, _ := run(model.KVBF16)
	same, n := 0, 0
	var sum, worst float64
	for i := range ids32 {
		if slices.Equal(ids32[i], ids16[i]) {
			same++
		}
		// The policy's logprobs compare up to the first differing token.
		for j := 0; j < min(len(ids32[i]), len(ids16[i])) && ids32[i][j] == ids16[i][j]; j++ {
			if mask[i][j] == 0 {
				continue // a tool result's token: no logprob of the policy
			}
			d := math.Abs(float64(lp32[i][j] - lp16[i][j]))
			sum += d
			worst = math.Max(worst, d)
			n++
		}
	}
	t.Logf("%d/%d trajectories the same; logprobs %.2g apart on average, %.2g at most (%d policy tokens); accuracy %.3f fp32, %.3f bf16",
		same, len(ids32), sum/float64(n), worst, n, ev32.Accuracy, ev16.Accuracy)
	require.Greater(t, n, 256*8, "logprobs compared")
	require.GreaterOrEqual(t, same, 250, "greedy trajectories the same")
	require.InDelta(t, ev32.Accuracy, ev16.Accuracy, 0.02)
	require.Less(t, sum/float64(n), 1e-3, "mean logprob difference")
	require.Less(t, worst, 0.2, "largest logprob difference")
}
