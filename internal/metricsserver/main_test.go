package metricsserver_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start loopback HTTP servers; none of their goroutines may outlive
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
