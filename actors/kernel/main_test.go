package kernel_test

import (
	"testing"

	"github.com/agentos-run/agentos/actors/executor"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	executor.WorkerMain() // the test binary doubles as the sandbox worker
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2/v2.runClock"))
}
