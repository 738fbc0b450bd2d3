package broker

import "github.com/watermarkhq/watermark/impl/kafka"

// The control plane's messages of this package, one row each
// (kafka.Register); the client plane's are impl/clientmsg's.
func init() {
	kafka.Register(
		kafka.Row{Kind: "register", Proto: RegisterBroker{}, Answer: "state-update", Wire: true},
		kafka.Row{Kind: "heartbeat", Proto: Heartbeat{}, Wire: true},
		kafka.Row{Kind: "shutdown-answer", Proto: ShutdownAnswer{}, Wire: true},
		kafka.Row{Kind: "state-update", Proto: StateUpdate{}, Wire: true},
		kafka.Row{Kind: "heartbeat-answer", Proto: HeartbeatAnswer{}, Wire: true},
		kafka.Row{Kind: "not-controller", Proto: NotController{}, Wire: true},
	)
}

// Kind implements kafka.Message.
func (RegisterBroker) Kind() kafka.Kind { return "register" }

// Kind implements kafka.Message.
func (Heartbeat) Kind() kafka.Kind { return "heartbeat" }

// Kind implements kafka.Message.
func (ShutdownAnswer) Kind() kafka.Kind { return "shutdown-answer" }

// Kind implements kafka.Message.
func (StateUpdate) Kind() kafka.Kind { return "state-update" }

// Kind implements kafka.Message.
func (HeartbeatAnswer) Kind() kafka.Kind { return "heartbeat-answer" }

// Kind implements kafka.Message.
func (NotController) Kind() kafka.Kind { return "not-controller" }
