package admin_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentos-run/agentos/internal/leaktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leaktest.Options...)
}
