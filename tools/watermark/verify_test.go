package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeHistory(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "history.jsonl")
	data := ""
	for _, l := range lines {
		data += l + "\n"
	}
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

// A clean history holds; one where an acknowledged acks=all write is
// replaced at its offset is violated, with the anomaly and porcupine's
// verdict, and the HTML is written when asked.
func TestVerify(t *testing.T) {
	clean := writeHistory(t,
		`{"id":0,"client":0,"kind":"produce","topic":"t","partition":0,"call":1,"return":2,"outcome":"ok","value":"a","acks":-1,"offset":0}`,
		`{"id":1,"client":1,"kind":"fetch","topic":"t","partition":0,"call":3,"return":4,"outcome":"ok","offset":0,"records":[{"offset":0,"value":"a"}],"hw":1}`,
	)
	code, out, errOut := runCLI("verify", clean)
	require.Equal(t, exitOK, code, out+errOut)
	assert.Contains(t, out, "verdict: holds")

	bad := writeHistory(t,
		`{"id":0,"client":0,"kind":"produce","topic":"t","partition":0,"call":1,"return":2,"outcome":"ok","value":"a","acks":-1,"offset":0}`,
		`{"id":1,"client":1,"kind":"fetch","topic":"t","partition":0,"call":3,"return":4,"outcome":"ok","offset":0,"records":[{"offset":0,"value":"b"}],"hw":1}`,
	)
	html := filepath.Join(t.TempDir(), "h.html")
	code, out, _ = runCLI("verify", "--html", html, bad)
	require.Equal(t, exitViolated, code, out)
	assert.Contains(t, out, "lost-write")
	assert.Contains(t, out, "inconsistent-offsets")
	assert.Contains(t, out, "porcupine: illegal")
	st, err := os.Stat(html)
	require.NoError(t, err)
	assert.Positive(t, st.Size())

	code, out, _ = runCLI("verify", "--json", bad)
	require.Equal(t, exitViolated, code)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "violated", rep["verdict"])
}

func TestVerifyBadInput(t *testing.T) {
	code, _, errOut := runCLI("verify")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "want exactly one history file")

	broken := writeHistory(t, `{"id":0,"kind":"produce","outcome":"maybe","value":"a"}`)
	code, _, errOut = runCLI("verify", broken)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `unknown outcome "maybe"`)
	assert.Contains(t, errOut, "line 1")

	code, _, errOut = runCLI("verify", "--allow", "nonsense", broken)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "not an anomaly name")

	// An empty history is an error, never "holds".
	code, out, errOut := runCLI("verify", writeHistory(t, ""))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "no operations in it")
	assert.NotContains(t, out, "holds")
}
