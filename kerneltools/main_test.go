package kerneltools_test

import (
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/internal/leaktest"
)

func TestMain(m *testing.M) {
	executor.WorkerMain() // the test binary doubles as the sandbox worker
	goleak.VerifyTestMain(m, leaktest.Options...)
}
