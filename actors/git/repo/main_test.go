package repo_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/internal/leaktest"
)

// TestMain verifies that no test leaks a goroutine. When the crash test
// re-executes the test binary as its child, it runs crashChild instead
// (fetchChild for the fetching test).
func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	if os.Getenv(fetchChildEnv) != "" {
		fetchChild()
		return
	}
	goleak.VerifyTestMain(m, leaktest.Options...)
}
