package broker

import "github.com/watermarkhq/watermark/impl/clientmsg"

// A node's id, the envelope every message travels in, and the client
// plane's messages are impl/clientmsg's (which see), under this package's
// names: the broker, the controller node and the simulator use them as
// they did, and a client compiles them without the broker.
type (
	NodeID   = clientmsg.NodeID
	Envelope = clientmsg.Envelope
	Request  = clientmsg.Request

	ProduceRequest          = clientmsg.ProduceRequest
	ProduceResponse         = clientmsg.ProduceResponse
	LeaderHint              = clientmsg.LeaderHint
	InitProducerIDRequest   = clientmsg.InitProducerIDRequest
	InitProducerIDResponse  = clientmsg.InitProducerIDResponse
	FetchRequest            = clientmsg.FetchRequest
	FetchResponse           = clientmsg.FetchResponse
	FetchManyRequest        = clientmsg.FetchManyRequest
	FetchPartition          = clientmsg.FetchPartition
	FetchManyResponse       = clientmsg.FetchManyResponse
	ListOffsetsRequest      = clientmsg.ListOffsetsRequest
	ListOffsetsResponse     = clientmsg.ListOffsetsResponse
	EpochEndRequest         = clientmsg.EpochEndRequest
	EpochEndResponse        = clientmsg.EpochEndResponse
	MetadataRequest         = clientmsg.MetadataRequest
	MetadataResponse        = clientmsg.MetadataResponse
	FindCoordinatorRequest  = clientmsg.FindCoordinatorRequest
	FindCoordinatorResponse = clientmsg.FindCoordinatorResponse
	GroupRequest            = clientmsg.GroupRequest
	GroupResponse           = clientmsg.GroupResponse
)

// ControllerID is the address of the active controller, which a broker
// resolves to the voter it follows (follow.go). Brokers are 1..N; clients
// use ids from ClientIDBase up (clientmsg.ControllerID, ClientIDBase).
const (
	ControllerID = clientmsg.ControllerID
	ClientIDBase = clientmsg.ClientIDBase
)

// VoterNode is the node id of controller voter v (clientmsg.VoterNode).
func VoterNode(v int) NodeID { return clientmsg.VoterNode(v) }
