// Package settings holds the settings of the reference's cores and broker
// as plain values: a replica's (Partition, with its Truncation, Acks and
// ProducerState), a group coordinator's (Group), the controller's
// (Controller, with its RecoveryStrategy), and a broker's (Broker, which
// holds a Partition and a Group inline, and the shape of its logs, Log).
// It is the one place their yaml names (run-file keys and `watermark
// serve` flags), doc tags (help lines), Kafka's defaults and validation
// live.
//
// It imports no core: the cores take these types under their own names
// (partition.Settings, group.Config, controller.Config and broker.Settings
// are aliases; impl/storage checks its LogConfig as a Log), and a run
// description (conformance/run) can hold them without compiling a core.
package settings
