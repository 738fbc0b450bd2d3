package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermarkhq/watermark/conformance/cases"
	wmrun "github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/linearizability"
)

// TestBugsApplyToTheTree keeps the list from rotting as the code changes:
// it parses, its ids are unique, every field is set, every anchor occurs
// exactly once in its file as the tree is now, and every catcher names a
// case, an invariant or an anomaly.
func TestBugsApplyToTheTree(t *testing.T) {
	bugs, err := parseBugs(bugsYAML)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(bugs), 45, "the suite promises at least 45 planted bugs")
	catchers := map[string]bool{}
	for _, c := range cases.Cases {
		catchers[c.Name] = true
	}
	for _, inv := range wmrun.Invariants {
		catchers[inv] = true
	}
	for _, a := range linearizability.AnomalyNames {
		catchers[a] = true
	}
	root := filepath.Join("..", "..")
	sources := map[string][]byte{}
	for _, b := range bugs {
		src, ok := sources[b.File]
		if !ok {
			src, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(b.File)))
			if !assert.NoError(t, err, "%s: its file", b.ID) {
				continue
			}
			sources[b.File] = src
		}
		_, err := apply(src, b.Find, b.Replace)
		assert.NoError(t, err, "%s: its anchor in %s", b.ID, b.File)
		assert.True(t, catchers[b.Catcher], "%s: catcher %q is no case (watermark cases), invariant (run.Invariants) or anomaly", b.ID, b.Catcher)
	}
}

func TestParseBugsRefusesBadLists(t *testing.T) {
	const good = `
- id: a
  file: f.go
  find: x < y
  replace: x <= y
  why: because
  catcher: LogMatching
  unit: fails
`
	_, err := parseBugs([]byte(good))
	require.NoError(t, err)
	for name, list := range map[string]string{
		"repeated id":     good + good[1:],
		"missing field":   "- id: a\n  file: f.go\n  find: x\n  replace: y\n  why: w\n  unit: fails\n",
		"unknown key":     good + "  severity: high\n",
		"replace is find": "- {id: a, file: f.go, find: x, replace: x, why: w, catcher: c, unit: fails}\n",
		"bad unit":        "- {id: a, file: f.go, find: x, replace: y, why: w, catcher: c, unit: maybe}\n",
		"empty":           "[]\n",
	} {
		_, err := parseBugs([]byte(list))
		assert.Error(t, err, name)
	}
}

func TestApply(t *testing.T) {
	src := []byte("if a < b {\n\treturn a\n}\n")
	got, err := apply(src, "a < b", "a <= b")
	require.NoError(t, err)
	assert.Equal(t, "if a <= b {\n\treturn a\n}\n", string(got))
	assert.Equal(t, "if a < b {\n\treturn a\n}\n", string(src), "apply must not change its input")

	_, err = apply(src, "a > b", "a >= b")
	assert.ErrorIs(t, err, errAnchorMissing)

	_, err = apply(src, "a", "c")
	assert.ErrorIs(t, err, errAnchorRepeated)
}

func TestSelectBugs(t *testing.T) {
	all := []Bug{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	got, err := selectBugs(all, []string{"c", "a"})
	require.NoError(t, err)
	assert.Equal(t, []Bug{{ID: "a"}, {ID: "c"}}, got, "list order, not flag order")
	got, err = selectBugs(all, nil)
	require.NoError(t, err)
	assert.Len(t, got, 3)
	_, err = selectBugs(all, []string{"a", "nope"})
	assert.ErrorContains(t, err, "nope")
}

func TestTreeWriteReplacesOneFile(t *testing.T) {
	tr := &tree{files: []file{{path: "a/x.go", mode: 0o644, data: []byte("x")}, {path: "y.txt", mode: 0o600, data: []byte("y")}}}
	dir := t.TempDir()
	require.NoError(t, tr.write(dir, "a/x.go", []byte("mutated")))
	got, err := os.ReadFile(filepath.Join(dir, "a", "x.go"))
	require.NoError(t, err)
	assert.Equal(t, "mutated", string(got))
	got, err = os.ReadFile(filepath.Join(dir, "y.txt"))
	require.NoError(t, err)
	assert.Equal(t, "y", string(got))
}

func TestCheckReportParsing(t *testing.T) {
	assert.Equal(t, "TestFoo", firstFailure("=== RUN TestFoo\n--- FAIL: TestFoo (0.00s)\nFAIL\n"))
	assert.Equal(t, "a test failed", firstFailure("panic: boom\nFAIL\n"))
	assert.Equal(t, "      why: one two\n      three\n", wrap("why: one two three", "      ", 20))
}

// A bug argued equivalent that is missed is left out of the score; one
// that is caught counts, and the line says the argument is wrong.
func TestEquivalentBugsAreNotScored(t *testing.T) {
	var out bytes.Buffer
	r := &runner{out: &out}
	done := []outcome{
		{bug: Bug{ID: "a"}, status: caught, cases: []string{"x"}},
		{bug: Bug{ID: "b", Why: "w", Catcher: "c"}, status: missed},
		{bug: Bug{ID: "c", Equivalent: "because"}, status: equiv},
	}
	r.summary(done, len(done), time.Second)
	assert.Contains(t, out.String(), "planted bugs caught: 1 of 2\n")
	assert.Contains(t, out.String(), "argued equivalent and missed, not counted: c\n")

	out.Reset()
	r.report(outcome{bug: Bug{ID: "d", Equivalent: "because"}, status: caught, cases: []string{"x"}})
	assert.Contains(t, out.String(), "the argument is wrong")
}
