package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// bugsYAML is the planted-bug list, compiled in so that the runner and its
// test read the same one.
//
//go:embed bugs.yaml
var bugsYAML []byte

// Bug is one planted bug: a single-point change of impl/ (or of the kit's
// own client, conformance/kitclient) that breaks one protocol rule.
type Bug struct {
	// ID names the bug, short and kebab-case; unique in the list.
	ID string `yaml:"id"`
	// File is the source file it changes, relative to the repository root.
	File string `yaml:"file"`
	// Find is an exact snippet of the current source, occurring exactly
	// once in File; Replace is what it becomes.
	Find    string `yaml:"find"`
	Replace string `yaml:"replace"`
	// Why is the protocol rule the change breaks and where the rule comes
	// from (a KIP, a JIRA, a section of spec/SEMANTICS.md).
	Why string `yaml:"why"`
	// Catcher is the conformance case, invariant or anomaly that must
	// catch it, whether it does today or not.
	Catcher string `yaml:"catcher"`
	// Unit says what impl/'s own unit tests of File's package do on the
	// mutant: "fails" (they catch it) or "passes" (they miss it, and Why
	// argues that it is a real bug all the same). `--unit` checks it.
	Unit string `yaml:"unit"`
	// Check holds more arguments for watermark check that this bug needs,
	// after the runner's own: a bug below the simulator (the Kafka wire
	// codec, the node process) runs its catcher on real processes,
	// "--target cluster --case NAME".
	Check string `yaml:"check,omitempty"`
	// Equivalent, when set, argues that no run can tell the mutant from
	// the reference: the change sits behind another rule that keeps the
	// state it guards from ever arising (an equivalent mutant, in
	// mutation testing's terms). Such a bug is still run, so the claim is
	// tested: a miss is EQUIVALENT and left out of the score; a catch
	// counts and says the claim was wrong.
	Equivalent string `yaml:"equivalent,omitempty"`
}

// The values of Bug.Unit.
const (
	unitFails  = "fails"
	unitPasses = "passes"
)

// parseBugs reads a bug list, refusing unknown keys, missing fields and
// repeated ids.
func parseBugs(data []byte) ([]Bug, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var bugs []Bug
	if err := dec.Decode(&bugs); err != nil {
		return nil, fmt.Errorf("bugs.yaml: %w", err)
	}
	seen := map[string]bool{}
	var errs []error
	for i, b := range bugs {
		name := b.ID
		if name == "" {
			name = fmt.Sprintf("entry %d", i+1)
		}
		for _, f := range []struct{ key, val string }{
			{"id", b.ID}, {"file", b.File}, {"find", b.Find}, {"replace", b.Replace},
			{"why", b.Why}, {"catcher", b.Catcher}, {"unit", b.Unit},
		} {
			if strings.TrimSpace(f.val) == "" {
				errs = append(errs, fmt.Errorf("%s: %s is empty", name, f.key))
			}
		}
		if b.Unit != "" && b.Unit != unitFails && b.Unit != unitPasses {
			errs = append(errs, fmt.Errorf("%s: unit is %q, want %q or %q", name, b.Unit, unitFails, unitPasses))
		}
		if b.Find == b.Replace {
			errs = append(errs, fmt.Errorf("%s: replace equals find", name))
		}
		if seen[b.ID] {
			errs = append(errs, fmt.Errorf("%s: id used twice", name))
		}
		seen[b.ID] = true
	}
	if len(bugs) == 0 {
		errs = append(errs, errors.New("no bugs"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bugs.yaml: %w", err)
	}
	return bugs, nil
}

// Errors of apply.
var (
	errAnchorMissing  = errors.New("anchor not found")
	errAnchorRepeated = errors.New("anchor occurs more than once")
)

// apply replaces the one occurrence of find in src with replace. An anchor
// that occurs 0 or 2+ times is an error: the bug no longer says where it
// goes.
func apply(src []byte, find, replace string) ([]byte, error) {
	switch n := bytes.Count(src, []byte(find)); {
	case n == 0:
		return nil, errAnchorMissing
	case n > 1:
		return nil, fmt.Errorf("%w (%d times)", errAnchorRepeated, n)
	}
	return bytes.Replace(src, []byte(find), []byte(replace), 1), nil
}

// selectBugs returns the bugs named by ids, in list order, or all of them
// when ids is empty.
func selectBugs(all []Bug, ids []string) ([]Bug, error) {
	if len(ids) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []Bug
	for _, b := range all {
		if want[b.ID] {
			out = append(out, b)
			delete(want, b.ID)
		}
	}
	if len(want) > 0 {
		var unknown []string
		for _, id := range ids {
			if want[id] {
				unknown = append(unknown, id)
			}
		}
		return nil, fmt.Errorf("unknown bug id %s (--list shows them)", strings.Join(unknown, ", "))
	}
	return out, nil
}
