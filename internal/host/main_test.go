package host

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/actors/executor"
	"github.com/agentos-run/agentos/internal/leaktest"
)

func TestMain(m *testing.M) {
	executor.WorkerMain()
	if path := os.Getenv("AGENTOS_DIAL_CHILD"); path != "" { // another user dialing the node socket
		dialChild(path)
	}
	goleak.VerifyTestMain(m, leaktest.Options...)
}
