// Package log stands in for upspin.io/log, which the module proxy refuses:
// just what jocko's log package calls, written to the standard logger.
package log

import (
	"fmt"
	stdlog "log"
	"os"
	"strings"
)

type Logger interface {
	Printf(format string, v ...interface{})
	Print(v ...interface{})
	Println(v ...interface{})
	Fatal(v ...interface{})
	Fatalf(format string, v ...interface{})
}

type Level int

const (
	DebugLevel Level = iota
	InfoLevel
	ErrorLevel
	DisabledLevel
)

var current = InfoLevel

type leveled struct{ level Level }

func (l leveled) on() bool { return l.level >= current }

func (l leveled) Printf(format string, v ...interface{}) {
	if l.on() {
		stdlog.Output(3, fmt.Sprintf(format, v...))
	}
}
func (l leveled) Print(v ...interface{}) {
	if l.on() {
		stdlog.Output(3, fmt.Sprint(v...))
	}
}
func (l leveled) Println(v ...interface{}) {
	if l.on() {
		stdlog.Output(3, fmt.Sprintln(v...))
	}
}
func (l leveled) Fatal(v ...interface{}) {
	stdlog.Output(3, fmt.Sprint(v...))
	os.Exit(1)
}
func (l leveled) Fatalf(format string, v ...interface{}) {
	stdlog.Output(3, fmt.Sprintf(format, v...))
	os.Exit(1)
}

var (
	Debug Logger = leveled{DebugLevel}
	Info  Logger = leveled{InfoLevel}
	Error Logger = leveled{ErrorLevel}
)

// SetLevel takes "debug", "info", "error" or "disabled".
func SetLevel(level string) {
	switch strings.ToLower(level) {
	case "debug":
		current = DebugLevel
	case "info":
		current = InfoLevel
	case "error":
		current = ErrorLevel
	case "disabled":
		current = DisabledLevel
	}
}

type writer struct{ l Logger }

func (w writer) Write(p []byte) (int, error) {
	w.l.Print(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// NewStdLogger returns a standard logger that writes to l.
func NewStdLogger(l Logger) *stdlog.Logger { return stdlog.New(writer{l}, "", 0) }
