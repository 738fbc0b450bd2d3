package run

import (
	"os/exec"
	"strings"
	"testing"
)

// A run description compiles none of the reference's cores: a kit that
// reads and checks run files need not build the broker. From impl/ it
// takes the settings (impl/settings), the failpoint names (impl/fpname)
// and Kafka's vocabulary (impl/kafka, impl/record), nothing else.
func TestRunCompilesNoCore(t *testing.T) {
	const module = "github.com/watermarkhq/watermark/"
	allowed := map[string]bool{"impl/settings": true, "impl/fpname": true, "impl/kafka": true, "impl/record": true}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module)
		if ok && strings.HasPrefix(rel, "impl/") && !allowed[rel] {
			t.Errorf("conformance/run depends on %s (go list -deps): the run description must not compile the reference's cores", rel)
		}
	}
}
