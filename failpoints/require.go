package failpoints

import (
	"os"
	"os/exec"
	"strings"
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

// BinaryEnv names the variable that gives tests a watermark executable to
// start as real processes; `make test` builds one with failpoints compiled
// in and sets it.
const BinaryEnv = "WATERMARK_BIN"

// RequireBinary returns a watermark executable with failpoints compiled
// in, for tests that switch failpoints on in real processes (GO_FAILPOINTS,
// the HTTP endpoint). Without one it skips, saying how to get one, or
// under `make test` (RequireEnv set) fails.
func RequireBinary(t testing.TB) string {
	t.Helper()
	fail := t.Skipf
	if os.Getenv(RequireEnv) != "" {
		fail = t.Fatalf
	}
	bin := os.Getenv(BinaryEnv)
	if bin == "" {
		fail("%s is not set: run `make test`, which builds bin/watermark with failpoints and sets it", BinaryEnv)
		return ""
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s version: %v\n%s", BinaryEnv, bin, err, out)
	}
	if !strings.Contains(string(out), "failpoints compiled: yes") {
		fail("%s=%s was built without failpoints: build it with `make build`", BinaryEnv, bin)
	}
	return bin
}
