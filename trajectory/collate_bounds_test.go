package trajectory

import (
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCollateBoundsWidths is issue 35's widths of 1<<40 (the process ran
// out of memory in make): a batch over MaxCollateElements, or widths whose
// sum overflows, is an error naming the sizes, before anything is
// allocated.
func TestCollateBoundsWidths(t *testing.T) {
	rows := []*Trajectory{build(t, []int32{1, 2}, []int32{3}), build(t, []int32{4}, []int32{5, 6})}
	for _, opts := range []CollateOptions{
		{PromptLen: 1 << 40, ResponseLen: 1 << 40},
		{PromptLen: 4, ResponseLen: 1 << 40},
		{PromptLen: math.MaxInt, ResponseLen: math.MaxInt},
		{PromptLen: MaxCollateElements / 2, ResponseLen: MaxCollateElements / 2}, // fits one row, not two
	} {
		_, err := Collate(rows, opts)
		require.ErrorContains(t, err, "MaxCollateElements", "%+v", opts)
	}
	for _, opts := range []CollateOptions{{PromptLen: -2, ResponseLen: 4}, {PromptLen: 4}} {
		_, err := Collate(rows, opts)
		require.ErrorContains(t, err, "must be > 0 or FitLongest")
	}
}

// TestCollateFitLongest: FitLongest widths are the longest prompt and
// response of the batch, so nothing is truncated and the batch is what a
// fixed width of that size gives.
func TestCollateFitLongest(t *testing.T) {
	rows := []*Trajectory{
		build(t, []int32{1, 2, 3}, []int32{7}),
		build(t, []int32{4}, []int32{8, 9}, []int32{10, 11}),
	}
	fit, err := Collate(rows, CollateOptions{PromptLen: FitLongest, ResponseLen: FitLongest, PadTokenID: 99})
	require.NoError(t, err)
	require.Equal(t, 3, fit.PromptLen)
	require.Equal(t, 4, fit.ResponseLen)
	fixed, err := Collate(rows, CollateOptions{PromptLen: 3, ResponseLen: 4, PadTokenID: 99})
	require.NoError(t, err)
	require.Equal(t, fixed, fit)
	require.Zero(t, fit.PromptsTruncated+fit.ResponsesTruncated)

	// One width fixed, the other fitted.
	half, err := Collate(rows, CollateOptions{PromptLen: 8, ResponseLen: FitLongest})
	require.NoError(t, err)
	require.Equal(t, 8, half.PromptLen)
	require.Equal(t, 4, half.ResponseLen)

	// Empty responses still give a width of 1, as Batch requires.
	empty, err := Collate([]*Trajectory{build(t, []int32{1})}, CollateOptions{PromptLen: FitLongest, ResponseLen: FitLongest})
	require.NoError(t, err)
	require.Equal(t, 1, empty.ResponseLen)

	_, err = Collate([]*Trajectory{rows[0], nil}, CollateOptions{PromptLen: FitLongest, ResponseLen: FitLongest})
	require.ErrorIs(t, err, ErrInvalid)
}

// TestNilArguments: nil trajectories, writers, readers and batches are
// errors, never panics (issue 35).
func TestNilArguments(t *testing.T) {
	var nilT *Trajectory
	require.ErrorIs(t, nilT.Validate(), ErrInvalid)
	require.ErrorContains(t, nilT.Validate(), "trajectory: nil")
	one := []*Trajectory{build(t, []int32{1}, []int32{2})}
	require.ErrorIs(t, WriteJSONL(nil, one), ErrNilIO)
	jw := NewJSONLWriter(nil)
	require.NoError(t, jw.Write(one[0])) // buffered
	require.ErrorIs(t, jw.Flush(), ErrNilIO)
	_, err := ReadJSONL(nil)
	require.ErrorIs(t, err, ErrNilIO)
	_, err = ReadSafetensorsBatch(nil)
	require.ErrorIs(t, err, ErrNilIO)
	var nilB *Batch
	require.ErrorIs(t, nilB.WriteSafetensors(io.Discard), ErrSafetensors)
	b, err := Collate(one, CollateOptions{PromptLen: 2, ResponseLen: 2})
	require.NoError(t, err)
	require.ErrorIs(t, b.WriteSafetensors(nil), ErrNilIO)
}
