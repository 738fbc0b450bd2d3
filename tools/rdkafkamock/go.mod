module github.com/watermarkhq/watermark/tools/rdkafkamock

go 1.26.0

require github.com/confluentinc/confluent-kafka-go/v2 v2.11.1

require github.com/watermarkhq/watermark v0.0.0

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/pingcap/errors v0.11.4 // indirect
	github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86 // indirect
	github.com/twmb/franz-go v1.22.3 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/watermarkhq/watermark => ../..
