package group

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/watermarkhq/watermark/impl/kafka"
)

// The offsets topic holds two kinds of record, told apart by the key's
// first byte; a nil value is a tombstone that deletes the key.
//
//	offset: key "o\x00<group>\x00<topic>\x00<partition in decimal>"
//	        value JSON {"offset":N,"metadata":"..."}
//	group:  key "g\x00<group>"
//	        value JSON of GroupMetadata
//
// Group ids hold no NUL (JoinGroup and OffsetCommit refuse them), so the
// group is the key up to the first NUL after the prefix, the partition is
// after the last NUL, and the topic is what lies between. Kafka uses its
// own versioned binary schemas (OffsetCommitKey/Value, GroupMetadataKey/
// Value); JSON keeps the reference readable in a log dump.
const (
	offsetPrefix = "o\x00"
	groupPrefix  = "g\x00"
)

// OffsetValue is a committed offset as persisted.
type OffsetValue struct {
	Offset   int64  `json:"offset"`
	Metadata string `json:"metadata"`
}

// MemberMetadata is one member as persisted in its group's record.
type MemberMetadata struct {
	MemberID           string `json:"memberId"`
	ClientID           string `json:"clientId"`
	SessionTimeoutMs   int64  `json:"sessionTimeoutMs"`
	RebalanceTimeoutMs int64  `json:"rebalanceTimeoutMs"`
	Metadata           []byte `json:"metadata"`   // for the group's protocol
	Assignment         []byte `json:"assignment"` // as the leader sent it
}

// GroupMetadata is a group as persisted when it becomes Stable (with its
// members) or Empty (without).
//
// Invariants (Decode checks them):
//  1. Generation >= 0.
//  2. Member ids are non-empty and distinct.
//  3. Members non-empty implies Protocol != "".
type GroupMetadata struct {
	ProtocolType string           `json:"protocolType"`
	Generation   int32            `json:"generation"`
	Protocol     string           `json:"protocol"`
	Leader       string           `json:"leader"`
	Members      []MemberMetadata `json:"members"`
}

func (gm *GroupMetadata) validate() error {
	if gm.Generation < 0 {
		return fmt.Errorf("negative generation %d", gm.Generation)
	}
	seen := make(map[string]bool, len(gm.Members))
	for _, m := range gm.Members {
		if m.MemberID == "" || seen[m.MemberID] {
			return fmt.Errorf("member id %q empty or repeated", m.MemberID)
		}
		seen[m.MemberID] = true
	}
	if len(gm.Members) > 0 && gm.Protocol == "" {
		return fmt.Errorf("members without a protocol")
	}
	return nil
}

// EncodeOffset returns the record that commits v for group's tp, or a
// tombstone that deletes it when v is nil.
func EncodeOffset(group string, tp kafka.TopicPartition, v *OffsetValue) Record {
	key := offsetPrefix + group + "\x00" + tp.Topic + "\x00" + strconv.FormatInt(int64(tp.Partition), 10)
	return Record{Key: []byte(key), Value: marshal(v)}
}

// EncodeGroup returns the record that stores gm for group, or a tombstone
// that deletes the group when gm is nil.
func EncodeGroup(group string, gm *GroupMetadata) Record {
	return Record{Key: []byte(groupPrefix + group), Value: marshal(gm)}
}

func marshal[T any](v *T) []byte {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("group: marshal %T: %v", v, err)) // plain structs always marshal
	}
	return b
}

// EntryKind says which kind of record an Entry was decoded from.
type EntryKind int8

// The kinds of Entry.
const (
	OffsetEntry EntryKind = iota + 1
	GroupEntry
)

// Entry is a decoded record.
//
// Invariants:
//  1. Kind == OffsetEntry: kafka.TopicPartition is set; Offset is nil for a
//     tombstone. GroupValue is nil.
//  2. Kind == GroupEntry: GroupValue is nil for a tombstone; Offset is nil.
type Entry struct {
	Kind  EntryKind
	Group string
	kafka.TopicPartition
	Offset     *OffsetValue
	GroupValue *GroupMetadata
}

// IsGroup reports whether e is a group record.
func (e Entry) IsGroup() bool { return e.Kind == GroupEntry }

// Decode parses a record of the offsets topic. It returns an error wrapping
// ErrBadRecord, and never panics, on anything EncodeOffset or EncodeGroup
// could not have produced.
func Decode(r Record) (Entry, error) {
	key := string(r.Key)
	switch {
	case strings.HasPrefix(key, offsetPrefix):
		rest := key[len(offsetPrefix):]
		first, last := strings.IndexByte(rest, 0), strings.LastIndexByte(rest, 0)
		if first <= 0 || last == first {
			return Entry{}, fmt.Errorf("%w: offset key %q", ErrBadRecord, key)
		}
		p, err := strconv.ParseInt(rest[last+1:], 10, 32)
		if err != nil || p < 0 || strconv.FormatInt(p, 10) != rest[last+1:] {
			return Entry{}, fmt.Errorf("%w: offset key %q: partition", ErrBadRecord, key)
		}
		e := Entry{Kind: OffsetEntry, Group: rest[:first],
			TopicPartition: kafka.TopicPartition{Topic: rest[first+1 : last], Partition: int32(p)}}
		if e.Topic == "" {
			return Entry{}, fmt.Errorf("%w: offset key %q: empty topic", ErrBadRecord, key)
		}
		if r.Value != nil {
			e.Offset = new(OffsetValue)
			if err := unmarshal(r.Value, e.Offset); err != nil {
				return Entry{}, fmt.Errorf("%w: offset value of %q: %v", ErrBadRecord, key, err)
			}
		}
		return e, nil
	case strings.HasPrefix(key, groupPrefix):
		e := Entry{Kind: GroupEntry, Group: key[len(groupPrefix):]}
		if !validGroupID(e.Group) {
			return Entry{}, fmt.Errorf("%w: group key %q", ErrBadRecord, key)
		}
		if r.Value != nil {
			e.GroupValue = new(GroupMetadata)
			if err := unmarshal(r.Value, e.GroupValue); err != nil {
				return Entry{}, fmt.Errorf("%w: group value of %q: %v", ErrBadRecord, key, err)
			}
			if err := e.GroupValue.validate(); err != nil {
				return Entry{}, fmt.Errorf("%w: group value of %q: %v", ErrBadRecord, key, err)
			}
		}
		return e, nil
	}
	return Entry{}, fmt.Errorf("%w: key %q", ErrBadRecord, key)
}

// unmarshal decodes one JSON object into v, refusing unknown fields,
// anything but an object, and trailing data.
func unmarshal(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(data[d.InputOffset():])) > 0 {
		return fmt.Errorf("trailing data")
	}
	return nil
}
