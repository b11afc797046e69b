package agentloop

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A YAML syntax error in an agent or interaction config names the line it
// is on (the YAML library reports the line before a block collection's
// error) and the document it is in, not another one's.
func TestConfigYAMLErrorLine(t *testing.T) {
	_, err := NewRegistry().LoadConfigs(strings.NewReader("- name: a\n  agent: b\nx: 1\n"))
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "agent configs: yaml: line 3:")
	require.NotContains(t, err.Error(), "tool config")

	_, err = LoadInteractions(strings.NewReader("interaction:\n- name: a\n b: [\n"))
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "interaction config: yaml: line 3:")
	require.NotContains(t, err.Error(), "tool config")
}
