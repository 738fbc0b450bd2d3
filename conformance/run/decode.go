package run

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pingcap/failpoint"
	"gopkg.in/yaml.v3"

	"github.com/watermarkhq/watermark/impl/fpname"
	"github.com/watermarkhq/watermark/linearizability"
)

// The values plain string fields accept, by the name their one_of tag
// gives. Fields of a type with named values (encoding.TextUnmarshaler)
// check themselves.
var enums = map[string]func() []string{
	"assignor":  func() []string { return Assignors },
	"failpoint": func() []string { return fpname.All },
	"expect":    ExpectNames,
}

// The checks plain string fields take, by the name their one_of tag gives,
// for values too open to list.
var checks = map[string]func(string) error{
	"failpoint-term": checkTerm,
}

// checkTerm checks a failpoint term, a leading "P%" and all.
func checkTerm(term string) error {
	_, rest, err := SplitPercent(term)
	if err != nil {
		return err
	}
	if err := parseTerm(rest); err != nil {
		return fmt.Errorf("%q is not a failpoint term (%v): want e.g. 1*return(\"crash\"), 50%%return(\"pause:2\") or off (failpoints/RUNFILE.md)", term, err)
	}
	return nil
}

// parseTerm reports whether term parses as a pingcap/failpoint term, on a
// failpoint of its own: nothing process-wide is switched on. The
// library's parser panics on some malformed terms (an argument cut short,
// "(0"); that is an error here too.
func parseTerm(term string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("failpoint: the term parser gave up on it (%v)", p)
		}
	}()
	var fp failpoint.Failpoint
	if err := fp.Enable(term); err != nil {
		return err
	}
	fp.Disable()
	return nil
}

// ExpectNames are the names a run file's expect and allowed take: the
// anomalies the checkers name and the simulator's invariants.
func ExpectNames() []string {
	return append(slices.Clone(linearizability.AnomalyNames), Invariants...)
}

// moved says where a field of an earlier run-file format went.
var moved = map[string]string{
	"broker.session_timeout_ms":      "controller.session_timeout_ms",
	"broker.unclean_leader_election": "controller.unclean_leader_election",
	"broker.auto_leader_rebalance":   "controller.auto_leader_rebalance",
	"broker.keep_isr_on_restart":     "controller.keep_isr_on_restart",
}

// decoder fills a struct from a YAML node tree, strictly: an unknown or
// repeated key, a value of the wrong type and a value outside a field's
// values are errors with their file, line and field path.
type decoder struct {
	file string
	errs []string
	seen map[string]bool // top-level keys given
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, fmt.Sprintf("%s:%d: %s: %s", d.file, n.Line, path, fmt.Sprintf(format, args...)))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var expectType = reflect.TypeFor[Expect]()

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("%q", n.Value)
}

// decode fills v from n; oneOf names the values v's strings must be one of,
// or the check they must pass (checks), or is "" for any.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path, oneOf string) {
	if n.Kind == yaml.AliasNode {
		d.errorf(n, path, "aliases are not supported: write the value out")
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // `key:` with no value keeps the default
	}
	if v.Type() == expectType {
		d.decodeExpect(n, v.Addr().Interface().(*Expect), path)
		return
	}
	if v.Addr().Type().Implements(textUnmarshaler) {
		d.decodeScalar(n, v, path, oneOf)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Pointer:
		nv := reflect.New(v.Type().Elem())
		d.decode(n, nv.Elem(), path, oneOf)
		v.Set(nv)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, path, "got %s: want a list", kindName(n))
			return
		}
		if len(n.Content) == 0 {
			v.Set(reflect.Zero(v.Type())) // [] is no items, as nil is
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), oneOf)
		}
		v.Set(s)
	default:
		d.decodeScalar(n, v, path, oneOf)
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "got %s: want a mapping", kindName(n))
		return
	}
	fs := fields(v)
	byKey := map[string]Field{}
	for _, f := range fs {
		byKey[f.Key] = f
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		key := kn.Value
		f, ok := byKey[key]
		switch {
		case !ok && moved[join(path, key)] != "":
			d.errorf(kn, join(path, key), "unknown field: it moved to %s", moved[join(path, key)])
			continue
		case !ok:
			d.errorf(kn, join(path, key), "unknown field: want one of %s", strings.Join(keys(fs), ", "))
			continue
		case seen[key]:
			d.errorf(kn, join(path, key), "given twice")
			continue
		}
		seen[key] = true
		if path == "" && d.seen != nil {
			d.seen[key] = true
		}
		d.decode(vn, f.Value, join(path, key), f.Tag.Get("one_of"))
	}
}

func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path, oneOf string) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, "got %s: want a single value", kindName(n))
		return
	}
	if err := (Field{Value: v}).Set(n.Value); err != nil {
		d.errorf(n, path, "%v", err)
		return
	}
	if check := checks[oneOf]; check != nil {
		if err := check(n.Value); err != nil {
			d.errorf(n, path, "%v", err)
		}
		return
	}
	if oneOf != "" && v.Kind() == reflect.String {
		if allowed := enums[oneOf](); !slices.Contains(allowed, n.Value) {
			d.errorf(n, path, "%q is not allowed: want one of %s", n.Value, listAllowed(allowed))
		}
	}
}

// listAllowed names the allowed values for an error message; an empty value
// (the field's default) is named as such.
func listAllowed(allowed []string) string {
	var named []string
	var empty bool
	for _, a := range allowed {
		if a == "" {
			empty = true
			continue
		}
		named = append(named, a)
	}
	s := strings.Join(named, ", ")
	if empty {
		s += " (or empty, the default)"
	}
	return s
}

func (d *decoder) decodeExpect(n *yaml.Node, e *Expect, path string) {
	allowed := ExpectNames()
	*e = Expect{}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == "holds" {
			e.Holds = true
			return
		}
		d.errorf(n, path, "%q: want `holds` or a list of names from %s", n.Value, strings.Join(allowed, ", "))
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.errorf(n, path, "empty list: want `holds`, or at least one name from %s", strings.Join(allowed, ", "))
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case item.Kind != yaml.ScalarNode:
				d.errorf(item, p, "got %s: want a name from %s", kindName(item), strings.Join(allowed, ", "))
			case item.Value == "holds":
				e.Holds = true
			case !slices.Contains(allowed, item.Value):
				d.errorf(item, p, "%q is not allowed: want one of %s", item.Value, strings.Join(allowed, ", "))
			default:
				e.Found = append(e.Found, item.Value)
			}
		}
	default:
		d.errorf(n, path, "got %s: want `holds` or a list of names from %s", kindName(n), strings.Join(allowed, ", "))
	}
}
