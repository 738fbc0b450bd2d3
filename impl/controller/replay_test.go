package controller

import (
	"fmt"

	"github.com/stretchr/testify/assert"
)

// shadows holds, for every controller a test has taken a Ready from, the
// image its records built: a follower of that controller.
var shadows = map[*Controller]*Image{}

// shadow returns c's shadow image, made on first sight from the state c
// had recorded by then (none for a new controller; what it was restored
// from for a restored one). Call it before c.Ready.
func shadow(c *Controller) *Image {
	m, ok := shadows[c]
	if !ok {
		var err error
		m, err = ImageOf(c.recorded.Snapshot())
		if err != nil {
			panic(fmt.Sprintf("replay: the recorded state of a controller is no image: %v", err))
		}
		shadows[c] = m
	}
	return m
}

// replay applies rd's records to m, then compares m with c's state, as
// a follower that missed nothing would hold it.
func replay(m *Image, c *Controller, rd Ready) error {
	for _, r := range rd.Records {
		if err := m.Apply(r); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	var e errorT
	if !assert.Equal(&e, c.Snapshot(), m.Snapshot(), "replay: the image of the records is not the controller's state") {
		return e.err
	}
	return nil
}

// mustReplay is replay from a driver that has no *testing.T (drain): it
// panics on the first difference, which fails the test.
func mustReplay(m *Image, c *Controller, rd Ready) {
	if err := replay(m, c, rd); err != nil {
		panic(err)
	}
}

// errorT keeps what testify's assertions report, with their diff.
type errorT struct{ err error }

func (e *errorT) Errorf(format string, args ...any) { e.err = fmt.Errorf(format, args...) }
