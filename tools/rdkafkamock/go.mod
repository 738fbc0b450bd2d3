module github.com/watermarkhq/watermark/tools/rdkafkamock

go 1.26

require github.com/confluentinc/confluent-kafka-go/v2 v2.11.1
