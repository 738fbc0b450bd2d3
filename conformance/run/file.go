package run

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is a run file (failpoints/RUNFILE.md): a Spec in YAML, with what
// the run must show. Every field a file leaves out keeps DefaultFile's
// value.
type File struct {
	// Path is the file the run was read from ("" if built in memory); it
	// is not part of the format.
	Path string `yaml:"-"`

	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Spec        `yaml:",inline"`

	// Expect is what the run must show; Allowed the anomalies and
	// invariant failures it may show besides (consequences of the expected
	// ones, or what a case tolerates); LossAllowed and DuplicatesAllowed
	// are the case flags of the same names.
	Expect            Expect   `yaml:"expect"`
	Allowed           []string `yaml:"allowed" one_of:"expect"`
	LossAllowed       bool     `yaml:"loss_allowed"`
	DuplicatesAllowed bool     `yaml:"duplicates_allowed"`
}

// Expect is a run file's expected outcome: Holds, or the anomalies and
// invariant failures that must all be found.
type Expect struct {
	Holds bool
	Found []string
}

// MarshalYAML writes `holds` or the list of names.
func (e Expect) MarshalYAML() (any, error) {
	if e.Holds || len(e.Found) == 0 {
		return "holds", nil
	}
	return e.Found, nil
}

// DefaultFile is what a run file's unset fields default to: DefaultSpec(0)
// as the harness runs it, with continue_after_violation on (so the history
// shows what an invariant failure did), and no expectation.
func DefaultFile() *File {
	spec := DefaultSpec(0)
	spec.ContinueAfterViolation = true
	return &File{Spec: spec, Allowed: []string{}}
}

// Marshal writes the file in the run-file format, every field explicit.
func (f *File) Marshal() []byte {
	c := *f
	c.Faults = nonNil(c.Faults)
	c.Failpoints = nonNil(c.Failpoints)
	c.Nemesis.Kinds = nonNil(c.Nemesis.Kinds)
	c.Allowed = nonNil(c.Allowed)
	c.Topics = nonNil(c.Topics)
	var b bytes.Buffer
	b.WriteString("# watermark run file: the format is failpoints/RUNFILE.md.\n")
	b.WriteString("# Replay it with: watermark repro FILE\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&c); err != nil {
		// Only plain fields: encoding cannot fail.
		panic(fmt.Sprintf("run file: %v", err))
	}
	_ = enc.Close()
	return b.Bytes()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// LoadFile reads and checks a run file.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFile(path, data)
}

// ParseFile parses a run file; name is used in errors. Every error names
// the file, the line and the field, and says what the field accepts.
func ParseFile(name string, data []byte) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		what := "empty run file"
		if len(bytes.TrimSpace(data)) > 0 {
			what = "no run in it, only comments (is the file cut short?)"
			if !bytes.HasSuffix(data, []byte("\n")) {
				line := bytes.Count(data, []byte("\n")) + 1
				col := len(data) - bytes.LastIndexByte(data, '\n') - 1
				what = fmt.Sprintf("no run in it, only comments, and it stops in the middle of line %d, after column %d: the file looks cut short there", line, col)
			}
		}
		return nil, fmt.Errorf("%s: %s: want a mapping with at least `expect` (see failpoints/RUNFILE.md)", name, what)
	}
	root := doc.Content[0]
	f := DefaultFile()
	f.Path = name
	if base := filepath.Base(name); base != "" {
		f.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	d := &decoder{file: name, seen: map[string]bool{}}
	d.decode(root, reflect.ValueOf(f).Elem(), "", "")
	if len(d.errs) == 0 {
		if !d.seen["expect"] {
			d.errorf(root, "expect", "missing: want `holds` or a list of names from %s", strings.Join(ExpectNames(), ", "))
		}
		if f.Expect.Holds {
			for _, n := range f.Expect.Found {
				d.errorf(root, "expect", "%q next to holds: want one or the other", n)
			}
		}
	}
	if len(d.errs) > 0 {
		return nil, errors.New(strings.Join(d.errs, "\n"))
	}
	for i := range f.Topics {
		if f.Topics[i].Name == "" {
			f.Topics[i].Name = "t"
		}
		if f.Topics[i].ReplicationFactor == 0 {
			f.Topics[i].ReplicationFactor = f.Brokers
		}
	}
	if err := f.Spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return f, nil
}

// Set changes the field at a dotted path of run-file keys
// ("broker.truncation") to value, read as a run file reads it: the
// `--set` flag of check and repro.
func (s *Spec) Set(path, value string) error {
	if to := moved[path]; to != "" {
		return fmt.Errorf("%s: no such field: it moved to %s", path, to)
	}
	f, err := Lookup(s, path)
	if err != nil {
		return err
	}
	if err := f.Set(value); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}
