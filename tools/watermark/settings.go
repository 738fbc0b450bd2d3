package main

import (
	"reflect"
	"strings"

	"github.com/spf13/pflag"
	"github.com/watermarkhq/watermark/conformance/run"
)

// settingsFlags binds every protocol setting (run.Settings) to a flag
// named after its run-file key, with its doc line as help, for serve and
// cluster: a new setting gets its flag without a line here.
type settingsFlags struct{ s run.Settings }

func addSettingsFlags(fs *pflag.FlagSet) *settingsFlags {
	f := &settingsFlags{s: run.DefaultSettings()}
	add := func(role string, fields []run.Field) {
		for _, fld := range fields {
			help := role + ": " + fld.Doc
			if vs := fld.Values(); vs != nil {
				help += ": " + strings.Join(vs, ", ")
			}
			fs.Var(fieldValue{fld}, fld.Flag(), help)
			if fld.Value.Kind() == reflect.Bool {
				fs.Lookup(fld.Flag()).NoOptDefVal = "true"
			}
		}
	}
	add("broker", run.Fields(&f.s.Broker))
	add("controller", run.Fields(&f.s.Controller))
	return f
}

// settings checks the settings the flags gave.
func (f *settingsFlags) settings() (run.Settings, error) { return f.s, f.s.Validate() }

// fieldValue is a run.Field as a pflag.Value.
type fieldValue struct{ f run.Field }

func (v fieldValue) String() string     { return v.f.String() }
func (v fieldValue) Set(s string) error { return v.f.Set(s) }
func (v fieldValue) Type() string {
	if v.f.Values() != nil {
		return "name"
	}
	return v.f.Value.Kind().String()
}
