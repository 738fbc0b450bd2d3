package group

// Request is a request to a group coordinator. Every one names its group,
// which picks the coordinator (PartitionFor); a new request type that does
// not say which group it is for does not compile where a Request is
// wanted.
type Request interface {
	GroupName() string
}

// GroupName implements Request.
func (r JoinRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r SyncRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r HeartbeatRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r LeaveRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r CommitRequest) GroupName() string { return r.Group }

// GroupName implements Request.
func (r FetchOffsetsRequest) GroupName() string { return r.Group }
