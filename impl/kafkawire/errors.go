package kafkawire

import "github.com/watermarkhq/watermark/impl/kafka"

// errTimedOut: no answer from the broker within the request's wait.
var errTimedOut = kafka.With(kafka.ErrRequestTimedOut, "no answer from the broker in time")

// errorMessage is err's text for the responses that carry one, nil for nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
