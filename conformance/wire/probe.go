package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/kafkaclient"
	"github.com/watermarkhq/watermark/impl/wireformat"
)

// skip names the API keys the stage does not send, and why: a default
// request of theirs is not harmless, or needs more than one request.
var skip = map[int16]string{
	4: "inter-broker API", 5: "inter-broker API", 6: "inter-broker API", 7: "inter-broker API",
	17: "needs a SASL exchange", 36: "needs a SASL exchange",
	27: "inter-broker API", 38: "creates a delegation token",
	52: "controller API", 53: "controller API", 54: "controller API", 56: "controller API",
	57: "changes cluster features", 58: "controller API", 62: "controller API", 63: "controller API",
	64: "controller API", 67: "controller API", 80: "controller API", 81: "controller API", 82: "controller API",
}

// prepare makes a default request of key safe and well formed: answers
// expected (acks), nothing held, nothing changed in the cluster.
func prepare(req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		r.Acks, r.TimeoutMillis = -1, 1000
	case *kmsg.FetchRequest:
		r.ReplicaID, r.MaxWaitMillis, r.SessionEpoch = -1, 0, -1
	case *kmsg.ElectLeadersRequest:
		r.Topics = []kmsg.ElectLeadersRequestTopic{} // null would elect everywhere
	case *kmsg.InitProducerIDRequest:
		r.TransactionTimeoutMillis = 60000
	case *kmsg.JoinGroupRequest:
		// As a consumer joins, with one protocol; the empty group id is
		// INVALID_GROUP_ID at once on Kafka, and a broker that holds the
		// join anyway may hold it for the rebalance timeout.
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = 6000, 1000, "consumer"
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"watermark-wire"}
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	}
}

type prober struct {
	addr string
	o    Options
	corr int32
	res  *Result
	// last is the last request sent; suspect the last one that got no
	// answer or a closed connection: what a death is put down to.
	last, suspect string
}

// after notes that cell's request was sent and, when it got no answer or
// a closed connection, whether the broker still answers a new connection.
// It reports whether the broker is alive.
func (p *prober) after(ctx context.Context, cell Cell) bool {
	p.last = cell.Name()
	if cell.Outcome != Closed && cell.Outcome != Gone {
		return true
	}
	p.suspect = cell.Name()
	return p.alive(ctx)
}

// alive asks for ApiVersions on a new connection; if none comes, the
// broker died, and the death is put down to the last request sent.
func (p *prober) alive(ctx context.Context) bool {
	hctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	_, err := kafkaclient.Handshake(hctx, p.addr, p.o.Dial)
	if err == nil {
		return true
	}
	p.died("a new connection got no ApiVersions answer: " + err.Error())
	return false
}

func (p *prober) died(why string) {
	if p.res.Died == nil && p.last != "" {
		p.res.Died = &Death{After: p.last, Suspect: p.suspect, Why: why}
	}
}

// conn is one connection of the stage.
type conn struct {
	nc net.Conn
}

func (p *prober) dial(ctx context.Context) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	nc, err := p.o.Dial(dctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc}, nil
}

// send writes frame and reads one answer frame: the answer, or the outcome
// that there was none (Closed, Gone).
func (p *prober) send(c *conn, frame []byte) ([]byte, Outcome, string) {
	c.nc.SetDeadline(time.Now().Add(p.o.Timeout))
	if _, err := c.nc.Write(frame); err != nil {
		return nil, Closed, fmt.Sprintf("write: %v", err)
	}
	answer, err := wireformat.ReadFrame(c.nc, wireformat.DefaultMaxFrameBytes)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return nil, Gone, fmt.Sprintf("no answer within %s", p.o.Timeout)
	case err != nil:
		return nil, Closed, fmt.Sprintf("the connection closed with no answer (%v)", err)
	}
	return answer, OK, ""
}

// request sends req at its version on c and checks the answer.
func (p *prober) request(c *conn, req kmsg.Request) (kmsg.Response, Cell) {
	p.corr++
	corr := p.corr
	cell := Cell{Key: req.Key(), Version: req.GetVersion()}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("watermark-wire")).AppendRequest(nil, req, corr)
	answer, out, why := p.send(c, frame)
	if out != OK {
		cell.Outcome, cell.Why = out, why
		return nil, cell
	}
	resp, why := decode(answer, corr, req)
	if why != "" {
		cell.Outcome, cell.Why, cell.Bytes = Malformed, why, answer[:min(len(answer), 48)]
		return nil, cell
	}
	cell.Outcome = OK
	return resp, cell
}

// decode checks an answer: its correlation id, its header's tagged fields
// (none for ApiVersions), its body at the request's version, and that
// every error code in it is one Kafka defines.
func decode(answer []byte, corr int32, req kmsg.Request) (kmsg.Response, string) {
	if len(answer) < 4 {
		return nil, fmt.Sprintf("a %d-byte answer", len(answer))
	}
	if got := int32(binary.BigEndian.Uint32(answer)); got != corr {
		return nil, fmt.Sprintf("correlation id %d, want %d", got, corr)
	}
	body := answer[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		r := kbin.Reader{Src: body}
		for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
		if !r.Ok() {
			return nil, "the answer header's tagged fields run past its end"
		}
		body = r.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Sprintf("does not decode as %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if why := trailing(body, resp); why != "" {
		return nil, why
	}
	if code, ok := unknownCode(reflect.ValueOf(resp)); ok {
		return nil, fmt.Sprintf("error code %d, which Kafka does not define", code)
	}
	return resp, ""
}

// unknownCode walks an answer for an ErrorCode that kerr does not know.
func unknownCode(v reflect.Value) (int16, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0, false
		}
		return unknownCode(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				if code := int16(f.Int()); code != 0 && code != -1 && kerr.ErrorForCode(code) == kerr.UnknownServerError {
					return code, true
				}
				continue
			}
			if code, ok := unknownCode(f); ok {
				return code, true
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if code, ok := unknownCode(v.Index(i)); ok {
				return code, true
			}
		}
	}
	return 0, false
}

// apiVersionsRanges asks ApiVersions v0 for every key's lowest version.
func (p *prober) apiVersionsRanges(ctx context.Context) (map[int16]int16, error) {
	c, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.nc.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	resp, cell := p.request(c, req)
	if cell.Outcome != OK {
		return nil, fmt.Errorf("%s: ApiVersions v0: %s: %s", p.addr, cell.Outcome, cell.Why)
	}
	mins := map[int16]int16{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		mins[k.ApiKey] = k.MinVersion
	}
	return mins, nil
}

// apiVersionsCells asks ApiVersions at every version kmsg knows, each on a
// connection of its own (it is the first request of one): a version the
// broker takes must be answered at it; one it does not, with
// UNSUPPORTED_VERSION in the v0 layout (KIP-511).
func (p *prober) apiVersionsCells(ctx context.Context, versions map[int16]int16) []Cell {
	var cells []Cell
	max := versions[kmsg.ApiVersions.Int16()]
	for v := int16(0); v <= kmsg.NewPtrApiVersionsRequest().MaxVersion() && p.res.Died == nil; v++ {
		c, err := p.dial(ctx)
		if err != nil {
			p.died("a new connection was refused: " + err.Error())
			break
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "watermark", "1"
		if v <= max {
			resp, cell := p.request(c, req)
			if cell.Outcome == OK && resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
				cell.Outcome, cell.Why = Malformed, fmt.Sprintf("error %v at a version it lists", kerr.ErrorForCode(resp.(*kmsg.ApiVersionsResponse).ErrorCode))
			}
			cells = append(cells, cell)
		} else {
			cells = append(cells, p.downgrade(c, req))
		}
		c.nc.Close()
		p.after(ctx, cells[len(cells)-1])
	}
	return cells
}

// downgrade checks KIP-511's answer to an ApiVersions version the broker
// does not take: UNSUPPORTED_VERSION, in the v0 layout, listing its own
// range of ApiVersions.
func (p *prober) downgrade(c *conn, req *kmsg.ApiVersionsRequest) Cell {
	p.corr++
	cell := Cell{Key: 18, Version: req.Version, Variant: "unsupported: KIP-511 downgrade"}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("watermark-wire")).AppendRequest(nil, req, p.corr)
	answer, out, why := p.send(c, frame)
	if out != OK {
		cell.Outcome, cell.Why = out, why
		return cell
	}
	v0 := kmsg.NewPtrApiVersionsRequest()
	resp, why := decode(answer, p.corr, v0)
	switch {
	case why != "":
		cell.Outcome, cell.Why, cell.Bytes = Malformed, "not in the v0 layout: "+why, answer[:min(len(answer), 48)]
	case resp.(*kmsg.ApiVersionsResponse).ErrorCode != kerr.UnsupportedVersion.Code:
		cell.Outcome, cell.Why = Malformed, fmt.Sprintf("error code %d, want UNSUPPORTED_VERSION (35)", resp.(*kmsg.ApiVersionsResponse).ErrorCode)
	default:
		cell.Outcome = OK
	}
	return cell
}

// keyCells sends a well-formed request of key at every version in rng
// that kmsg knows, on one connection, dialed again after a close.
func (p *prober) keyCells(ctx context.Context, key int16, rng [2]int16) []Cell {
	probe := kmsg.RequestForKey(key)
	switch {
	case probe == nil:
		return []Cell{{Key: key, Version: rng[1], Outcome: Skipped, Why: "kmsg does not know this key"}}
	case skip[key] != "":
		return []Cell{{Key: key, Version: rng[1], Outcome: Skipped, Why: skip[key]}}
	}
	var cells []Cell
	var c *conn
	defer func() {
		if c != nil {
			c.nc.Close()
		}
	}()
	hi := min(rng[1], probe.MaxVersion())
	for v := rng[0]; v <= hi; v++ {
		for _, variant := range variants(key, v) {
			if p.res.Died != nil {
				return cells
			}
			if c == nil {
				var err error
				if c, err = p.dial(ctx); err != nil {
					p.died("a new connection was refused: " + err.Error())
					return cells
				}
			}
			req := kmsg.RequestForKey(key)
			prepare(req)
			variant.set(req)
			req.SetVersion(v)
			resp, cell := p.request(c, req)
			cell.Variant = variant.name
			if cell.Outcome == OK && variant.check != nil {
				if why := variant.check(req, resp); why != "" {
					cell.Outcome, cell.Why = Malformed, why
				}
			}
			if cell.Outcome != OK {
				c.nc.Close()
				c = nil
			}
			if m, ok := resp.(*kmsg.MetadataResponse); ok && cell.Outcome == OK {
				p.learnNodeID(m)
			}
			cells = append(cells, cell)
			p.after(ctx, cell)
		}
	}
	return cells
}

// learnNodeID takes the broker's own id from a Metadata answer: the broker
// listed at the stage's address, or the only one.
func (p *prober) learnNodeID(m *kmsg.MetadataResponse) {
	if p.res.NodeID >= 0 {
		return
	}
	for _, b := range m.Brokers {
		if net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) == p.addr {
			p.res.NodeID = b.NodeID
			return
		}
	}
	if len(m.Brokers) == 1 {
		p.res.NodeID = m.Brokers[0].NodeID
	}
}

// variant is one shape of a request, and what its answer must keep.
type variant struct {
	name  string
	set   func(kmsg.Request)
	check rule // nil: decoding is enough
}

// badCells sends what a broker must refuse: an unknown API key, a version
// past what it lists, a truncated body. Each passes when it gets an
// answer (an error) or a closed connection, and a new connection is
// answered after it.
func (p *prober) badCells(ctx context.Context, versions map[int16]int16) []Cell {
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(min(versions[kmsg.Metadata.Int16()], meta.MaxVersion()))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("watermark-wire"))
	unknown := f.AppendRequest(nil, &rawRequest{key: 9999}, 1)
	tooNew := f.AppendRequest(nil, meta, 2)
	binary.BigEndian.PutUint16(tooNew[6:], uint16(versions[kmsg.Metadata.Int16()]+1))
	truncated := f.AppendRequest(nil, meta, 3)
	truncated = truncated[:len(truncated)-1]
	binary.BigEndian.PutUint32(truncated, uint32(len(truncated)-4))
	var cells []Cell
	for _, bad := range []struct {
		name  string
		frame []byte
	}{
		{"bad: unknown API key 9999", unknown},
		{fmt.Sprintf("bad: Metadata v%d, past the broker's", versions[kmsg.Metadata.Int16()]+1), tooNew},
		{"bad: Metadata with its body cut short", truncated},
	} {
		if p.res.Died != nil {
			break
		}
		cell := Cell{Key: -1, Variant: bad.name, Outcome: OK}
		c, err := p.dial(ctx)
		if err != nil {
			p.died("a new connection was refused: " + err.Error())
			break
		}
		if _, out, why := p.send(c, bad.frame); out == Gone {
			cell.Outcome, cell.Why = Gone, why+": neither an error nor a closed connection"
		}
		c.nc.Close()
		if cell.Outcome == OK {
			hctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
			if _, err := kafkaclient.Handshake(hctx, p.addr, p.o.Dial); err != nil {
				cell.Outcome, cell.Why = Gone, "the broker died of it: the next connection got no ApiVersions answer: "+err.Error()
				p.last = cell.Name()
				p.died(cell.Why)
			}
			cancel()
		}
		cells = append(cells, cell)
		p.last = cell.Name()
	}
	return cells
}

// rawRequest is a request of a key no broker has, with an empty body.
type rawRequest struct{ key int16 }

func (r *rawRequest) Key() int16                  { return r.key }
func (r *rawRequest) MaxVersion() int16           { return 0 }
func (r *rawRequest) SetVersion(int16)            {}
func (r *rawRequest) GetVersion() int16           { return 0 }
func (r *rawRequest) IsFlexible() bool            { return false }
func (r *rawRequest) AppendTo(b []byte) []byte    { return b }
func (r *rawRequest) ReadFrom([]byte) error       { return nil }
func (r *rawRequest) ResponseKind() kmsg.Response { return nil }
func (r *rawRequest) RequestWith(context.Context, kmsg.Requestor) (kmsg.Response, error) {
	return nil, errors.New("not sent through a client")
}
