package mcpdriver_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServeStdio() // the stdio server of the tests: this binary, re-executed
	goleak.VerifyTestMain(m)
}
