package capture_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Capture starts no goroutine of its own; the tests' servers, clients and
// concurrent calls must all be gone when they end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
