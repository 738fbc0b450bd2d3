package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckKafkaTargetFailsFastWithoutABroker(t *testing.T) {
	start := time.Now()
	code, _, errOut := runCLI("check", "--target", "kafka", "--bootstrap", "127.0.0.1:1", "--report-dir", t.TempDir())
	require.Equal(t, exitViolated, code)
	require.Contains(t, errOut, "no Kafka broker answered at 127.0.0.1:1")
	require.Contains(t, errOut, "--bootstrap")
	require.Less(t, time.Since(start), 15*time.Second)

	code, _, errOut = runCLI("check", "--target", "kafka")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--target kafka needs --bootstrap")

	code, _, errOut = runCLI("check", "--target", "nowhere")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "want sim, cluster or kafka")
}

func TestCheckWritesJUnit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.xml")
	code, _, errOut := runCLI("check", "--case", "lost-answers", "--seeds", "1", "--quiet", "--junit", path, "--report-dir", dir)
	require.Equal(t, exitOK, code, errOut)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var suites struct {
		Suites []struct {
			Tests int `xml:"tests,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(data, &suites))
	require.Len(t, suites.Suites, 1)
	require.Equal(t, 1, suites.Suites[0].Tests)
	require.Equal(t, "lost-answers", suites.Suites[0].Cases[0].Name)
}
