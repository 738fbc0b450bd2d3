package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/watermarkhq/watermark/conformance/run"
)

// FuzzParseFile: whatever the bytes, the parser returns a run or an error
// that names the file; it never panics, and a run it returns is valid and
// survives a round trip through Marshal.
func FuzzParseFile(f *testing.F) {
	for _, dir := range []string{"testdata", "../../failpoints/repro"} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("expect: holds\nfailpoints:\n  - name: hwCheckpointWrite\n    term: 1*retrn(\"crash\")\n"))
	f.Add([]byte("# cut mid-comm"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := run.ParseFile("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := file.Spec.Validate(); err != nil {
			t.Fatalf("parsed, but the run is invalid: %v", err)
		}
		out := file.Marshal()
		if _, err := run.ParseFile("fuzz.yaml", out); err != nil {
			t.Fatalf("its own output does not parse: %v\n%s", err, out)
		}
	})
}
