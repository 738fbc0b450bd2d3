package group

import "github.com/watermarkhq/watermark/impl/groupmsg"

// The consumer protocol's subscriptions and assignments, as members encode
// them in their metadata, are impl/groupmsg's: the coordinator reads them
// only to describe groups and check that no partition is assigned twice.

// EncodeConsumerSubscription is groupmsg.EncodeConsumerSubscription.
func EncodeConsumerSubscription(topics []string) []byte {
	return groupmsg.EncodeConsumerSubscription(topics)
}

// DecodeConsumerSubscription is groupmsg.DecodeConsumerSubscription.
func DecodeConsumerSubscription(data []byte) ([]string, error) {
	return groupmsg.DecodeConsumerSubscription(data)
}

// EncodeConsumerAssignment is groupmsg.EncodeConsumerAssignment.
func EncodeConsumerAssignment(a map[string][]int32) []byte {
	return groupmsg.EncodeConsumerAssignment(a)
}

// DecodeConsumerAssignment is groupmsg.DecodeConsumerAssignment.
func DecodeConsumerAssignment(data []byte) (map[string][]int32, error) {
	return groupmsg.DecodeConsumerAssignment(data)
}
