package settings

import (
	"fmt"
	"strings"
)

// names spells the values of a setting as run files and flags do.
type names[T ~int | ~int8] []struct {
	v    T
	name string
}

func (n names[T]) format(v T) string {
	for _, e := range n {
		if e.v == v {
			return e.name
		}
	}
	return fmt.Sprintf("%d", int64(v))
}

func (n names[T]) parse(what, s string) (T, error) {
	for _, e := range n {
		if e.name == s {
			return e.v, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("unknown %s %q: want one of %s", what, s, strings.Join(n.list(), ", "))
}

func (n names[T]) list() []string {
	out := make([]string, len(n))
	for i, e := range n {
		out[i] = e.name
	}
	return out
}
