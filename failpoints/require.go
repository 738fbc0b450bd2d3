package failpoints

import (
	"os"
	"testing"

	"github.com/watermarkhq/watermark/impl/broker"
)

// RequireEnv names the variable that turns a missing failpoint build from a
// skip into a failure; `make test` sets it, so CI can never skip silently.
const RequireEnv = "WATERMARK_REQUIRE_FAILPOINTS"

// Require is for tests that drive failpoints: in a plain `go test` build,
// where the markers are inert, it skips the test and says how to run it;
// under `make test` (RequireEnv set) it fails it instead.
func Require(t testing.TB) {
	t.Helper()
	if broker.FailpointsCompiled() {
		return
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("failpoints are not compiled in, but %s is set: build with failpoint-toolexec (make test)", RequireEnv)
	}
	t.Skip("failpoints are not compiled in: run `make test` to build with failpoint-toolexec")
}
