package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendIDsMatchesEncodingJSON(t *testing.T) {
	for _, ids := range [][]int32{{}, {0}, {1, -2, 2147483647, -2147483648}} {
		want, err := json.Marshal(ids)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendIDs([]byte("x"), ids))[1:])
	}
}

func TestSkipSpace(t *testing.T) {
	tests := []struct {
		in   string
		from int
		want int
	}{
		{"", 0, 0},
		{" \t\r\n1", 0, 4},
		{"1 ", 1, 2},
		{"a b", 0, 0},
		{"\v1", 0, 0}, // not JSON white space
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, SkipSpace([]byte(tc.in), tc.from), "%q", tc.in)
	}
}
