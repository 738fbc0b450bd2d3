package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The GitHub Actions workflow in conformance/KIT.md cannot be run here (no
// Docker, no Kafka), so these tests check what can be checked without it:
// the workflow and the Compose file it starts are well-formed, and every
// `watermark check` line in the workflow is accepted by the real command,
// with fault commands that name the Compose file's containers.

const kitPath = "../../conformance/KIT.md"

// ghWorkflow is the part of GitHub's workflow syntax the kit's workflow
// may use; decoding with KnownFields rejects a misspelt key.
type ghWorkflow struct {
	Name string           `yaml:"name"`
	On   yaml.Node        `yaml:"on"`
	Jobs map[string]ghJob `yaml:"jobs"`
}

type ghJob struct {
	Name           string   `yaml:"name"`
	RunsOn         string   `yaml:"runs-on"`
	TimeoutMinutes int      `yaml:"timeout-minutes"`
	Needs          []string `yaml:"needs"`
	If             string   `yaml:"if"`
	Strategy       struct {
		FailFast bool             `yaml:"fail-fast"`
		Matrix   map[string][]int `yaml:"matrix"`
	} `yaml:"strategy"`
	Env      map[string]string `yaml:"env"`
	Services map[string]any    `yaml:"services"`
	Steps    []ghStep          `yaml:"steps"`
}

type ghStep struct {
	ID    string            `yaml:"id"`
	Name  string            `yaml:"name"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	With  map[string]string `yaml:"with"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	Env   map[string]string `yaml:"env"`
}

// composeFile is the part of a Compose file the kit's cluster uses.
type composeFile struct {
	Services map[string]struct {
		ContainerName string            `yaml:"container_name"`
		Ports         []string          `yaml:"ports"`
		Environment   map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

// kitYAML returns KIT.md's text and its ```yaml blocks.
func kitYAML(t *testing.T) (string, []string) {
	t.Helper()
	data, err := os.ReadFile(kitPath)
	require.NoError(t, err)
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	return string(data), blocks
}

// decodeStrict decodes one YAML document into v, rejecting keys v lacks.
func decodeStrict(text string, v any) error {
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// kitWorkflow returns KIT.md's workflow (the yaml block with jobs), the
// Compose file (the block with services) and the path KIT.md says to save
// the Compose file at.
func kitWorkflow(t *testing.T) (ghWorkflow, composeFile, string) {
	t.Helper()
	text, blocks := kitYAML(t)
	var wf, cf []string
	for _, b := range blocks {
		if regexp.MustCompile(`(?m)^jobs:`).MatchString(b) {
			wf = append(wf, b)
		}
		if regexp.MustCompile(`(?m)^services:`).MatchString(b) {
			cf = append(cf, b)
		}
	}
	require.Len(t, wf, 1, "KIT.md should hold one workflow")
	require.Len(t, cf, 1, "KIT.md should hold one Compose file")
	var w ghWorkflow
	require.NoError(t, decodeStrict(wf[0], &w), "the workflow")
	var c composeFile
	// The x- extension fields are Compose's own: no KnownFields here.
	require.NoError(t, yaml.Unmarshal([]byte(cf[0]), &c), "the Compose file")
	m := regexp.MustCompile("Save the cluster as `([^`]+)`").FindStringSubmatch(text)
	require.NotNil(t, m, "KIT.md should say where to save the Compose file")
	return w, c, m[1]
}

// TestKitWorkflowIsWellFormed: the workflow has a trigger and jobs, every
// job a runner and steps, and every step does one thing (run a script or
// use an action at a pinned version); the Compose file it starts gives
// every broker a container name, a published port and a node id.
func TestKitWorkflowIsWellFormed(t *testing.T) {
	w, c, composePath := kitWorkflow(t)
	require.NotEmpty(t, w.Name)
	require.NotZero(t, w.On.Kind, "the workflow needs an `on` trigger")
	require.NotEmpty(t, w.Jobs)
	for name, j := range w.Jobs {
		assert.NotEmpty(t, j.RunsOn, "job %s: runs-on", name)
		require.NotEmpty(t, j.Steps, "job %s: steps", name)
		for i, s := range j.Steps {
			assert.True(t, (s.Run == "") != (s.Uses == ""), "job %s step %d: exactly one of run and uses", name, i)
			if s.Uses != "" {
				assert.Regexp(t, `^[\w.-]+/[\w.-]+@v\d+$`, s.Uses, "job %s step %d", name, i)
			}
			if s.With != nil {
				assert.NotEmpty(t, s.Uses, "job %s step %d: with goes with uses", name, i)
			}
			for _, f := range regexp.MustCompile(`docker compose -f (\S+)`).FindAllStringSubmatch(s.Run, -1) {
				assert.Equal(t, composePath, f[1], "job %s step %d starts a Compose file KIT.md does not give", name, i)
			}
		}
	}
	require.NotEmpty(t, c.Services)
	for name, s := range c.Services {
		assert.NotEmpty(t, s.ContainerName, "service %s", name)
		assert.NotEmpty(t, s.Ports, "service %s", name)
		assert.NotEmpty(t, s.Environment["KAFKA_NODE_ID"], "service %s", name)
	}
}

// TestKitWorkflowCommandsParse: every `watermark check` line in the
// workflow is accepted by the command itself: its flags parse (with --help
// added, it stops there), and run as given, against a bootstrap address
// where nothing listens, it gets past every usage check to the probe of the
// cluster. Its bootstrap address is a port the Compose file publishes, and
// each fault command, with {id} replaced, names the container of that
// broker.
func TestKitWorkflowCommandsParse(t *testing.T) {
	w, c, _ := kitWorkflow(t)
	ports := map[string]bool{}
	containerOf := map[string]string{} // node id -> container name
	for _, s := range c.Services {
		for _, p := range s.Ports {
			ports[strings.SplitN(p, ":", 2)[0]] = true
		}
		containerOf[s.Environment["KAFKA_NODE_ID"]] = s.ContainerName
	}
	var lines, merges []string
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			script := strings.ReplaceAll(s.Run, "\\\n", " ")
			// A matrix job's lines, for its first value of each key.
			for key, values := range j.Strategy.Matrix {
				require.NotEmpty(t, values, "matrix %s", key)
				script = strings.ReplaceAll(script, "${{ matrix."+key+" }}", strconv.Itoa(values[0]))
			}
			require.NotContains(t, script, "${{ matrix.", "a matrix value the job does not define")
			for _, l := range strings.Split(script, "\n") {
				l = strings.TrimSpace(l)
				switch {
				case strings.HasPrefix(l, "watermark check"):
					lines = append(lines, l)
				case strings.HasPrefix(l, "watermark merge"):
					merges = append(merges, l)
				}
			}
		}
	}
	for _, l := range merges {
		args, err := shellWords(l)
		require.NoError(t, err, l)
		code, _, errOut := runCLI(append(args[1:], "--help")...)
		require.Equal(t, exitOK, code, "%s: %s", l, errOut)
	}
	require.NotEmpty(t, lines, "the workflow runs no `watermark check`")
	for _, l := range lines {
		args, err := shellWords(l)
		require.NoError(t, err, l)
		require.Equal(t, []string{"watermark", "check"}, args[:2])
		args = args[1:]

		code, _, errOut := runCLI(append(slices.Clone(args), "--help")...)
		require.Equal(t, exitOK, code, "%s: %s", l, errOut)

		// As given, but with nothing at the bootstrap address and the
		// outputs in a temporary directory.
		dir := t.TempDir()
		var bootstrap string
		var faultCmds []string
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--bootstrap":
				bootstrap = args[i+1]
				args[i+1] = "127.0.0.1:1"
			case "--junit":
				args[i+1] = filepath.Join(dir, "report.xml")
			case "--kill-cmd", "--restart-cmd", "--pause-cmd", "--resume-cmd", "--isolate-cmd":
				faultCmds = append(faultCmds, args[i+1])
			}
		}
		code, _, errOut = runCLI(append(args, "--report-dir", dir)...)
		require.Equal(t, exitViolated, code, "%s: %s", l, errOut)
		require.Contains(t, errOut, "no Kafka broker answered", l)

		for _, b := range strings.Split(bootstrap, ",") {
			_, port, _ := strings.Cut(b, ":")
			assert.True(t, ports[port], "%s: bootstrap %s is not a port the Compose file publishes", l, b)
		}
		require.NotEmpty(t, containerOf)
		for _, cmd := range faultCmds {
			require.Contains(t, cmd, "{id}", cmd)
			for id, container := range containerOf {
				fields := strings.Fields(strings.ReplaceAll(cmd, "{id}", id))
				assert.Contains(t, fields, container, "%q for broker %s should name its container", cmd, id)
			}
		}
	}
}

// shellWords splits one sh command line into words, with single and
// double quotes, up to the first redirection, pipe or separator.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur bytes.Buffer
	inWord := false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case ch == '\'' || ch == '"':
			end := strings.IndexByte(line[i+1:], ch)
			if end < 0 {
				return nil, errUnclosedQuote
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.IndexByte("><|;&", ch) >= 0:
			if inWord {
				words = append(words, cur.String())
			}
			return words, nil
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var errUnclosedQuote = errors.New("unclosed quote")

func TestShellWords(t *testing.T) {
	got, err := shellWords(`watermark check --kill-cmd 'docker kill kafka{id}' --x "a b"c --json > result.json`)
	require.NoError(t, err)
	require.Equal(t, []string{"watermark", "check", "--kill-cmd", "docker kill kafka{id}", "--x", "a bc", "--json"}, got)
	_, err = shellWords(`watermark check --kill-cmd 'docker`)
	require.Error(t, err)
}
