// Package settings holds the settings of the reference's cores and broker
// as plain values: a replica's (Partition, with its Truncation, Acks and
// ProducerState), a group coordinator's (Group), the controller's
// (Controller, with its RecoveryStrategy), a broker's (Broker, which holds
// a Partition and a Group inline, and the shape of its logs, Log), and the
// reference clients' (Producer, Consumer). It is the one place their yaml
// names (run-file keys and `watermark serve` flags), doc tags (help lines),
// Kafka's defaults and validation live.
//
// It imports no core: the cores take these types under their own names
// (partition.Settings, group.Config, controller.Config, broker.Settings,
// kitclient.Config and kitclient.ConsumerConfig are aliases; impl/storage checks
// its LogConfig as a Log), and a run description (conformance/run) holds
// them without compiling a core.
package settings
