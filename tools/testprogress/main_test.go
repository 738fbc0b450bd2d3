package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newProgress() (*progress, *strings.Builder) {
	var b strings.Builder
	return &progress{out: &b, start: time.Now(), running: map[key]time.Time{}, output: map[key][]string{},
		started: map[string]bool{}, finished: map[string]bool{}}, &b
}

// A failed test's output is shown in full and the exit code says so; a
// passing package is one line.
func TestFailuresAreShownAndExitOne(t *testing.T) {
	p, out := newProgress()
	in := strings.Join([]string{
		`{"Action":"start","Package":"a"}`,
		`{"Action":"run","Package":"a","Test":"TestOK"}`,
		`{"Action":"output","Package":"a","Test":"TestOK","Output":"quiet\n"}`,
		`{"Action":"pass","Package":"a","Test":"TestOK","Elapsed":0.1}`,
		`{"Action":"pass","Package":"a","Elapsed":0.2}`,
		`{"Action":"run","Package":"b","Test":"TestBad"}`,
		`{"Action":"output","Package":"b","Test":"TestBad","Output":"    bad_test.go:9: want 1, got 2\n"}`,
		`{"Action":"fail","Package":"b","Test":"TestBad","Elapsed":0.3}`,
		`{"Action":"fail","Package":"b","Elapsed":0.4}`,
	}, "\n")
	require.NoError(t, p.read(strings.NewReader(in)))
	assert.Equal(t, 1, p.finish(nil))
	assert.Contains(t, out.String(), "ok    a")
	assert.Contains(t, out.String(), "--- FAIL: TestBad")
	assert.Contains(t, out.String(), "want 1, got 2")
	assert.NotContains(t, out.String(), "quiet", "a passing test's output is not shown")
	assert.Contains(t, out.String(), "FAIL: b")
}

// A package that started and never ended (go test killed, a timeout) is
// a failure, as is a stream with no package at all.
func TestUnfinishedPackagesFail(t *testing.T) {
	p, out := newProgress()
	require.NoError(t, p.read(strings.NewReader(`{"Action":"run","Package":"a","Test":"TestSlow"}`+"\n")))
	p.report()
	assert.Contains(t, out.String(), "a TestSlow (")
	assert.Equal(t, 1, p.finish(nil))
	assert.Contains(t, out.String(), "no result for a")

	p, _ = newProgress()
	assert.Equal(t, 1, p.finish(nil))
}

// Every package passing exits 0; lines that are not test2json (a build
// error go prints itself) are passed through.
func TestPassingRunExitsZero(t *testing.T) {
	p, out := newProgress()
	require.NoError(t, p.read(strings.NewReader("# some/pkg\nnot json\n"+`{"Action":"pass","Package":"a","Elapsed":1}`+"\n")))
	assert.Equal(t, 0, p.finish(nil))
	assert.Contains(t, out.String(), "not json")
}
