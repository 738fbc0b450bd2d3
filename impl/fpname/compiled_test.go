package fpname_test

import (
	"os"
	"testing"

	"github.com/watermarkhq/watermark/impl/fpname"
)

// Compiled answers as the build was made: true under failpoint-toolexec
// (make test sets WATERMARK_REQUIRE_FAILPOINTS), and the same on every
// call. (An external test package: an in-package test variant would be
// rewritten into the same temporary files as the package, concurrently.)
func TestCompiled(t *testing.T) {
	got := fpname.Compiled()
	if os.Getenv("WATERMARK_REQUIRE_FAILPOINTS") != "" && !got {
		t.Fatal("Compiled() is false in a build that must have failpoints")
	}
	if fpname.Compiled() != got {
		t.Fatal("Compiled changed its answer")
	}
}
