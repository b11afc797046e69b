package trajectory

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func routed(prompt, response []int32, rows int) *Trajectory {
	b := NewBuilder(prompt)
	if err := b.AppendModel(response, nil); err != nil {
		panic(err)
	}
	t := b.Build()
	t.RoutedExperts = sampleRouting(rows, 1)
	return t
}

func TestRoutingJSONLRoundTrip(t *testing.T) {
	tr := routed([]int32{1, 2, 3}, []int32{4, 5}, 4)
	tr.RoutedExperts.Experts[0] = -1 // SGLang's sentinel survives
	var buf bytes.Buffer
	require.NoError(t, WriteJSONL(&buf, []*Trajectory{tr}))
	require.Contains(t, buf.String(), `"routed_experts":{"layers":3,"topk":2,"experts":"`)
	got, err := ReadJSONL(&buf)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, tr.RoutedExperts, got[0].RoutedExperts)

	for _, bad := range []string{
		`"experts":"%%%"`, `"experts":[1,2]`, `"experts":"AAA="`,
	} {
		var b2 bytes.Buffer
		require.NoError(t, WriteJSONL(&b2, []*Trajectory{tr}))
		s := b2.String()
		i := strings.Index(s, `"experts":"`)
		j := strings.Index(s[i+11:], `"`) + i + 12
		_, err := ReadJSONL(strings.NewReader(s[:i] + bad + s[j:]))
		require.Error(t, err, bad)
	}
}

func TestRoutingValidate(t *testing.T) {
	require.NoError(t, routed([]int32{1, 2}, []int32{3}, 3).Validate())
	err := routed([]int32{1, 2}, []int32{3}, 4).Validate()
	require.ErrorContains(t, err, "routed_experts: 4 positions, the sequence has 3 tokens")
	tr := routed([]int32{1, 2}, []int32{3}, 2)
	tr.RoutedExperts.Experts = tr.RoutedExperts.Experts[:5]
	require.ErrorContains(t, tr.Validate(), "not whole rows")
	tr.RoutedExperts.TopK = 0
	require.ErrorContains(t, tr.Validate(), "must be > 0")
}

// Collate places each row's routing where its tokens stand: after the
// prompt's left padding, dropping the rows of prompt tokens a truncation
// cut and of response tokens past ResponseLen.
func TestCollateRouting(t *testing.T) {
	short := routed([]int32{1, 2}, []int32{3, 4}, 3)               // padded by 2 on the left
	long := routed([]int32{1, 2, 3, 4, 5, 6}, []int32{7, 8, 9}, 8) // prompt cut by 2, response by 1
	b, err := Collate([]*Trajectory{short, long}, CollateOptions{PromptLen: 4, ResponseLen: 2, TruncatePrompts: true})
	require.NoError(t, err)
	require.Equal(t, 3, b.RoutingLayers)
	require.Equal(t, 2, b.RoutingTopK)
	w, L := 6, 6
	row := func(i, col int) []int16 { return b.RoutedExperts[(i*L+col)*w : (i*L+col+1)*w] }
	pos := func(tr *Trajectory, p int) []int16 { return []int16(tr.RoutedExperts.Experts[p*w : (p+1)*w]) }
	require.Equal(t, make([]int16, w), row(0, 0))
	require.Equal(t, make([]int16, w), row(0, 1))
	for k := 0; k < 3; k++ {
		require.Equal(t, pos(short, k), row(0, 2+k))
	}
	require.Equal(t, make([]int16, w), row(0, 5), "the last token has no row")
	for col := 0; col < 6; col++ {
		require.Equal(t, pos(long, col+2), row(1, col))
	}

	// Routing on some rows only, or of another shape, is refused.
	plain := routed([]int32{1}, []int32{2}, 0)
	plain.RoutedExperts = nil
	_, err = Collate([]*Trajectory{short, plain}, CollateOptions{PromptLen: 4, ResponseLen: 2})
	require.ErrorIs(t, err, ErrMixedRouting)
	other := routed([]int32{1}, []int32{2}, 1)
	other.RoutedExperts = &Routing{Layers: 2, TopK: 2, Experts: make(Int16s, 4)}
	_, err = Collate([]*Trajectory{short, other}, CollateOptions{PromptLen: 4, ResponseLen: 2})
	require.ErrorIs(t, err, ErrMixedRouting)

	// The safetensors batch carries it as I16 and reads it back.
	var buf bytes.Buffer
	require.NoError(t, b.WriteSafetensors(&buf))
	back, err := ReadSafetensorsBatch(&buf)
	require.NoError(t, err)
	require.Equal(t, b.RoutedExperts, back.RoutedExperts)
	require.Equal(t, 3, back.RoutingLayers)
}
