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
// The flags start from Kafka's timeouts (run.KafkaSettings); --fast starts
// from the harness's (run.DefaultSettings) instead, and the flags given
// still win.
type settingsFlags struct {
	s    run.Settings
	fs   *pflag.FlagSet
	fast *bool
}

func addSettingsFlags(fs *pflag.FlagSet) *settingsFlags {
	f := &settingsFlags{s: run.KafkaSettings(), fs: fs}
	f.fast = fs.Bool("fast", false, "start from the harness's timeouts, shrunk for runs of seconds on one machine (heartbeat 200 ms, session 1500 ms, replica lag 3000 ms, ...) instead of Kafka's; flags given still win")
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
	add("quorum", run.Fields(&f.s.Quorum))
	return f
}

// settings checks the settings the flags gave.
func (f *settingsFlags) settings() (run.Settings, error) {
	if !*f.fast {
		return f.s, f.s.Validate()
	}
	s := run.DefaultSettings()
	byFlag := map[string]run.Field{}
	for _, fld := range append(append(run.Fields(&s.Broker), run.Fields(&s.Controller)...), run.Fields(&s.Quorum)...) {
		byFlag[fld.Flag()] = fld
	}
	var err error
	f.fs.Visit(func(fl *pflag.Flag) {
		if fld, ok := byFlag[fl.Name]; ok && err == nil {
			err = fld.Set(fl.Value.String())
		}
	})
	if err != nil {
		return s, err
	}
	return s, s.Validate()
}

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
