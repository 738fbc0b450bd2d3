package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/watermarkhq/watermark/impl/fpname"
)

// BinaryEnv names the variable that gives tests a watermark executable;
// `make test` sets it to bin/watermark (built with failpoints).
const BinaryEnv = "WATERMARK_BIN"

// TestBinary returns a watermark executable for tests that start real
// processes: $WATERMARK_BIN if set, else one built now from this module
// into a temporary directory (with failpoints when the calling test binary
// has them). Call cleanup when done; it removes what was built.
func TestBinary() (path string, cleanup func(), err error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "watermark-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	fail := func(err error) (string, func(), error) {
		cleanup()
		return "", nil, err
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fail(fmt.Errorf("go env GOMOD: %w", err))
	}
	path = filepath.Join(dir, "watermark")
	args := []string{"build", "-o", path}
	if fpname.Compiled() {
		// The test was built with failpoints (make test): so are the
		// nodes, with the same tool.
		gopath, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			return fail(fmt.Errorf("go env GOPATH: %w", err))
		}
		args = append(args, "-toolexec="+filepath.Join(strings.TrimSpace(string(gopath)), "bin", "failpoint-toolexec"))
	}
	build := exec.Command("go", append(args, "./tools/watermark")...)
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	// failpoint-toolexec rewrites sources under $TMPDIR/failpoint-toolexec:
	// a private TMPDIR keeps this build from colliding with the go test
	// that compiles the same packages at the same time.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fail(err)
	}
	build.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("build the watermark binary (or set %s): %v\n%s", BinaryEnv, err, out))
	}
	return path, cleanup, nil
}
