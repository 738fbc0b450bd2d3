package conformance

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A third party that calls Run compiles the kit and none of the reference:
// not its broker, node, replicas, controller, group coordinator, storage or
// the client that used to be impl/client, nor the simulator (nor
// conformance/targets or conformance/search, which run it). From impl/ the
// kit takes only what a client shares with a broker: the harness's Kafka
// client and the frames it shares with the wire server, the messages it
// speaks, Kafka's vocabulary, the settings and failpoint names a run
// description holds, and the names of a broker's files on disk (which
// conformance/cluster damages from outside). Any other package of impl/,
// the reference's ones above or a new one, fails this test until it is
// allowed here with its reason.
func TestKitCompilesNoReference(t *testing.T) {
	const module = "github.com/watermarkhq/watermark/"
	forbidden := []string{
		"impl/broker", "impl/node", "impl/partition", "impl/controller",
		"impl/group", "impl/storage", "impl/client",
		// The simulator, and the packages that hold it.
		"conformance/sim", "conformance/targets", "conformance/search",
	}
	allowed := map[string]bool{
		"impl/kafkaclient": true, "impl/wireformat": true, // the harness's Kafka client
		"impl/clientmsg": true, "impl/groupmsg": true, // the messages it speaks
		"impl/kafka": true, "impl/record": true, // Kafka's vocabulary
		"impl/settings": true, "impl/fpname": true, // what a run description names
		"impl/layout": true, // a broker's files, for conformance/cluster's damage
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := map[string]bool{}
	for _, pkg := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(pkg, module); ok {
			deps[rel] = true
		}
	}
	if !deps["impl/kafkaclient"] {
		t.Fatalf("go list -deps . does not list impl/kafkaclient: not the kit's dependencies?\n%s", out)
	}
	for _, pkg := range forbidden {
		if deps[pkg] {
			t.Errorf("conformance depends on %s (go list -deps): a third party's build of the kit must not compile the reference", pkg)
		}
	}
	for pkg := range deps {
		if strings.HasPrefix(pkg, "impl/") && !allowed[pkg] && !slices.Contains(forbidden, pkg) {
			t.Errorf("conformance depends on %s (go list -deps), which this test does not allow: the kit takes from impl/ only what a client shares with a broker", pkg)
		}
	}
}
