package fpname

import (
	"sync"

	"github.com/pingcap/failpoint"
)

// Compiled reports whether this binary was built with the failpoint
// markers rewritten (failpoint-toolexec); in a plain build they are inert
// and every failpoint-driven scenario would silently do nothing.
// failpoint-toolexec rewrites every package of the module alike, so the
// probe marker here answers for the broker's markers too, and a harness
// asks without compiling the broker. The answer never changes within a
// process; it is probed once, because the probe enables a process-wide
// failpoint and concurrent probes would switch each other's off.
func Compiled() bool {
	compiledOnce.Do(func() {
		const path = probePath + "/probe"
		if failpoint.Enable(path, `return(true)`) != nil {
			return
		}
		defer func() { _ = failpoint.Disable(path) }()
		compiled = probe()
	})
	return compiled
}

// probePath prefixes the failpoints of this package's own markers: the
// probe's.
const probePath = "github.com/watermarkhq/watermark/impl/fpname"

// probe fires only when its marker was rewritten.
func probe() (fired bool) {
	failpoint.Inject("probe", func() { fired = true })
	return fired
}

var (
	compiledOnce sync.Once
	compiled     bool
)
