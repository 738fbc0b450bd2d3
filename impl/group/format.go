package group

import (
	"fmt"
	"strings"
)

// String renders r on several lines, for scenario tests and traces.
func (r Ready) String() string {
	var b strings.Builder
	for _, e := range r.Events {
		fmt.Fprintf(&b, "event %s\n", e)
	}
	for _, a := range r.Appends {
		keys := make([]string, len(a.Records))
		for i, rec := range a.Records {
			keys[i] = strings.ReplaceAll(string(rec.Key), "\x00", "/")
		}
		fmt.Fprintf(&b, "append %d %v\n", a.ID, keys)
	}
	for _, a := range r.Answers {
		fmt.Fprintf(&b, "answer %d: %v\n", a.ID, a.Msg)
	}
	return b.String()
}
