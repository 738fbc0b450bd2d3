package run

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Field is one field of a description, as run files and flags name it.
type Field struct {
	// Key is the field's name in run files (its yaml tag); its flag is
	// Key with dashes for underscores (Flag).
	Key string
	// Doc is the field's help line (its doc tag).
	Doc       string
	Value     reflect.Value // addressable
	Tag       reflect.StructTag
	OmitEmpty bool
}

// Flag is the field's command-line flag name, without the dashes.
func (f Field) Flag() string { return strings.ReplaceAll(f.Key, "_", "-") }

// Fields lists the fields of the struct v points to, the fields of inline
// structs (yaml:",inline") in their place, skipping yaml:"-". A field
// without a yaml tag is named by its Go name in lower case, as yaml.v3
// names it.
func Fields(v any) []Field {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("run.Fields: %T is not a pointer to a struct", v))
	}
	return fields(rv.Elem())
}

func fields(v reflect.Value) []Field {
	var out []Field
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			out = append(out, fields(v.Field(i))...)
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out = append(out, Field{Key: name, Doc: sf.Tag.Get("doc"), Value: v.Field(i), Tag: sf.Tag,
			OmitEmpty: strings.Contains(opts, "omitempty")})
	}
	return out
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// Set parses s into the field the way a run file's scalar is read: a
// name for a setting with named values (encoding.TextUnmarshaler), a
// number, true or false.
func (f Field) Set(s string) error {
	v := f.Value
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshaler) {
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q: want true or false", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v.OverflowInt(x) {
			return fmt.Errorf("%q: want a whole number", s)
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v.OverflowUint(x) {
			return fmt.Errorf("%q: want a whole number >= 0", s)
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q: want a number", s)
		}
		v.SetFloat(x)
	default:
		return fmt.Errorf("cannot be set from text (a %s)", v.Type())
	}
	return nil
}

// String renders the field's value as Set reads it.
func (f Field) String() string {
	if m, ok := f.Value.Interface().(encoding.TextMarshaler); ok {
		b, err := m.MarshalText()
		if err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(f.Value.Interface())
}

// Values lists the names a field with named values takes, nil for others.
func (f Field) Values() []string {
	if n, ok := f.Value.Interface().(interface{ Values() []string }); ok {
		return n.Values()
	}
	return nil
}

// Args renders every field of the struct v points to as --flag=value, in
// order: the command line that gives a `watermark serve` process those
// settings.
func Args(v any) []string {
	var out []string
	for _, f := range Fields(v) {
		out = append(out, "--"+f.Flag()+"="+f.String())
	}
	return out
}

// Lookup finds the field at a dotted path of run-file keys in the struct
// v points to ("broker.truncation", "workload.acks").
func Lookup(v any, path string) (Field, error) {
	fs := Fields(v)
	key, rest, nested := strings.Cut(path, ".")
	for _, f := range fs {
		if f.Key != key {
			continue
		}
		if !nested {
			if f.Value.Kind() == reflect.Struct && !f.Value.Addr().Type().Implements(textUnmarshaler) {
				return Field{}, fmt.Errorf("%s is a section: name one of its fields (%s)", path, strings.Join(keys(fields(f.Value)), ", "))
			}
			return f, nil
		}
		if f.Value.Kind() != reflect.Struct {
			return Field{}, fmt.Errorf("%s: %s has no fields", path, key)
		}
		g, err := Lookup(f.Value.Addr().Interface(), rest)
		if err != nil {
			return Field{}, fmt.Errorf("%s.%w", key, err)
		}
		return g, nil
	}
	return Field{}, fmt.Errorf("%s: no such field: want one of %s", key, strings.Join(keys(fs), ", "))
}

func keys(fs []Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Key
	}
	return out
}

// Setting is one protocol setting by its run-file key, with a value as
// Field.Set reads it and its doc line.
type Setting struct {
	Key, Value, Doc string
}

// String is key=value.
func (s Setting) String() string { return s.Key + "=" + s.Value }

// Flag is the setting as the flag of watermark serve and cluster that
// gives it: --key-with-dashes=value.
func (s Setting) Flag() string { return "--" + strings.ReplaceAll(s.Key, "_", "-") + "=" + s.Value }

// Diff lists the broker and controller settings of s that differ from
// base, in run-file order.
func (s Settings) Diff(base Settings) []Setting {
	mine := append(append(Fields(&s.Broker), Fields(&s.Controller)...), Fields(&s.Quorum)...)
	theirs := append(append(Fields(&base.Broker), Fields(&base.Controller)...), Fields(&base.Quorum)...)
	var out []Setting
	for i, f := range mine {
		if v := f.String(); v != theirs[i].String() {
			out = append(out, Setting{Key: f.Key, Value: v, Doc: f.Doc})
		}
	}
	return out
}
