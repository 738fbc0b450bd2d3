// Package wire is the conformance kit's wire-protocol stage: before any
// semantic case, it asks a broker what it speaks and checks that it speaks
// it. ApiVersions at every version, the KIP-511 downgrade answer to one it
// does not take; then, for every API and version both the broker and
// franz-go's kmsg know, a well-formed request whose answer must decode
// with kmsg at that version, carry the request's correlation id and only
// error codes Kafka defines; then bad requests (an unknown API key, an
// unsupported version, a truncated body), each of which must get an error
// or a closed connection, with the broker answering the next connection.
//
// The result is a table, API x version: ok, malformed (with the offending
// bytes), closed, or gone (the broker stopped answering). The semantic
// cases then pin each API the harness uses to the highest version that
// passed (Pins), so a broker with one broken version is judged on what it
// does, not on how the harness failed to talk to it.
package wire

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermarkhq/watermark/impl/kafkaclient"
)

// Outcome is what one request got.
type Outcome string

// The outcomes of a request.
const (
	OK        Outcome = "ok"        // an answer that decodes and keeps the protocol's rules
	Malformed Outcome = "malformed" // an answer that does not
	Closed    Outcome = "closed"    // the connection closed with no answer
	Gone      Outcome = "gone"      // no answer in time, or no new connection after
	Skipped   Outcome = "skipped"   // not sent (Why says why)
)

// Cell is one request's result: API key and version, and what it got.
type Cell struct {
	Key     int16
	Version int16
	// Variant names a second request of the same version (Metadata with
	// an empty topic list beside null); "" for the plain one.
	Variant string
	Outcome Outcome
	// Why explains a non-ok outcome; Bytes are the first bytes of a
	// malformed answer.
	Why   string
	Bytes []byte
}

// Name is the API's name, with its version and variant: "Metadata v9
// (empty topics)".
func (c Cell) Name() string {
	if c.Key < 0 {
		return c.Variant
	}
	n := fmt.Sprintf("%s v%d", kmsg.NameForKey(c.Key), c.Version)
	if c.Variant != "" {
		n += " (" + c.Variant + ")"
	}
	return n
}

// Result is the stage's table.
type Result struct {
	Addr string
	// Versions are the broker's ApiVersions answer: key -> [min, max].
	Versions map[int16][2]int16
	// Cells are the well-formed requests, by key then version, then the
	// bad ones (Bad).
	Cells []Cell
	Bad   []Cell
	// Died, when set, says the broker stopped answering during the
	// stage: the requests after it were not sent.
	Died *Death `json:",omitempty"`
	// NodeID is the broker's own id, as its Metadata answers name it
	// (-1 when none did): what a restart command needs.
	NodeID int32
}

// Death is a broker that stopped answering during the stage: after which
// request, and how that showed.
type Death struct {
	// After is the last request sent before the broker stopped
	// answering (Cell.Name); Suspect the last one that got no answer or
	// a closed connection, when it is another (a broker can take a moment
	// to die of the request that killed it).
	After   string
	Suspect string `json:",omitempty"`
	Why     string
}

func (d *Death) String() string {
	s := fmt.Sprintf("the broker stopped answering after %s (%s)", d.After, d.Why)
	if d.Suspect != "" && d.Suspect != d.After {
		s += fmt.Sprintf("; the last request it did not answer was %s", d.Suspect)
	}
	return s
}

// Untested lists the keys the broker lists that got no cell because it
// died first.
func (r *Result) Untested() []int16 {
	if r.Died == nil {
		return nil
	}
	tested := map[int16]bool{}
	for _, c := range r.Cells {
		tested[c.Key] = true
	}
	var out []int16
	for k := range r.Versions {
		if !tested[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Summary is the stage's count in one line, the same for --wire's table
// and a full check: requests sent (skips aside), how many passed, and the
// broker's death if it died.
func (r *Result) Summary() string {
	sent := len(r.Cells) + len(r.Bad) - skips(r.Cells)
	s := fmt.Sprintf("wire stage against %s: %d of %d requests ok", r.Addr, sent-len(r.Failed()), sent)
	if r.Died != nil {
		s += "; " + r.Died.String()
		if n := len(r.Untested()); n > 0 {
			s += fmt.Sprintf(", and %d of the APIs it lists were not tested", n)
		}
	}
	return s
}

// Failed lists the cells that did not pass: any well-formed request that
// was not ok (skips aside), any bad request that was not refused (an
// error answer or a closed connection) or left the broker gone.
func (r *Result) Failed() []Cell {
	var out []Cell
	for _, c := range r.Cells {
		if c.Outcome != OK && c.Outcome != Skipped {
			out = append(out, c)
		}
	}
	for _, c := range r.Bad {
		if c.Outcome != OK {
			out = append(out, c)
		}
	}
	return out
}

// Pins is the highest version of each key whose requests all passed,
// among the versions tested; keys with no passing version are absent.
func (r *Result) Pins() map[int16]int16 {
	bad := map[[2]int16]bool{}
	for _, c := range r.Cells {
		if c.Outcome != OK {
			bad[[2]int16{c.Key, c.Version}] = true
		}
	}
	pins := map[int16]int16{}
	for _, c := range r.Cells {
		if c.Outcome == OK && !bad[[2]int16{c.Key, c.Version}] && (c.Version > pins[c.Key] || !has(pins, c.Key)) {
			pins[c.Key] = c.Version
		}
	}
	return pins
}

func has(m map[int16]int16, k int16) bool { _, ok := m[k]; return ok }

// PlainPins is Pins over the plain requests only (no Variant): the ones
// the cases send. A broker whose error answers (an unknown topic's) are
// malformed may still answer them right.
func (r *Result) PlainPins() map[int16]int16 {
	plain := &Result{}
	for _, c := range r.Cells {
		if c.Variant == "" {
			plain.Cells = append(plain.Cells, c)
		}
	}
	return plain.Pins()
}

// Options shape a stage run.
type Options struct {
	// Dial reaches the broker (nil: net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds each request (0: 10 s).
	Timeout time.Duration
	// Keys limits the well-formed requests to these API keys (nil: all).
	Keys []int16
}

// Run runs the whole stage against the broker at addr: the well-formed
// requests (WellFormed), then, if the broker still answers, the bad ones
// (BadRequests).
func Run(ctx context.Context, addr string, o Options) (*Result, error) {
	res, err := WellFormed(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	res.BadRequests(ctx, o)
	return res, nil
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Dial == nil {
		var d net.Dialer
		o.Dial = d.DialContext
	}
}

// WellFormed runs the stage's well-formed requests: ApiVersions at every
// version, then every API and version the broker lists. A broker that
// stops answering ends it (Result.Died).
func WellFormed(ctx context.Context, addr string, o Options) (*Result, error) {
	o.defaults()
	res := &Result{Addr: addr, Versions: map[int16][2]int16{}, NodeID: -1}
	p := &prober{addr: addr, o: o, res: res}
	hctx, cancel := context.WithTimeout(ctx, o.Timeout)
	versions, err := kafkaclient.Handshake(hctx, addr, o.Dial)
	cancel()
	if err != nil {
		return nil, err
	}
	mins, err := p.apiVersionsRanges(ctx)
	if err != nil {
		return nil, err
	}
	for k, max := range versions {
		res.Versions[k] = [2]int16{mins[k], max}
	}
	res.Cells = append(res.Cells, p.apiVersionsCells(ctx, versions)...)
	keys := slices.Sorted(func(yield func(int16) bool) {
		for k := range versions {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if res.Died != nil {
			break
		}
		if k == kmsg.ApiVersions.Int16() || (o.Keys != nil && !slices.Contains(o.Keys, k)) {
			continue
		}
		res.Cells = append(res.Cells, p.keyCells(ctx, k, res.Versions[k])...)
	}
	return res, nil
}

// BadRequests sends what a broker must refuse (an unknown API key, a
// version past the broker's, a cut body) and adds their cells. A broker
// may die of them, so a check sends them after its cases. Nothing is sent
// to a broker that already died.
func (r *Result) BadRequests(ctx context.Context, o Options) {
	if r.Died != nil {
		return
	}
	o.defaults()
	p := &prober{addr: r.Addr, o: o, res: r}
	versions := map[int16]int16{}
	for k, v := range r.Versions {
		versions[k] = v[1]
	}
	r.Bad = p.badCells(ctx, versions)
}

// Render is the table as text: one line per API, a column per version.
func (r *Result) Render() string {
	var b strings.Builder
	fmt.Fprintln(&b, r.Summary())
	rows := map[string][]string{}
	var order []string
	for _, c := range r.Cells {
		name := kmsg.NameForKey(c.Key)
		if c.Variant != "" {
			name += " (" + c.Variant + ")"
		}
		if _, ok := rows[name]; !ok {
			order = append(order, name)
		}
		cell := fmt.Sprintf("v%d %s", c.Version, c.Outcome)
		rows[name] = append(rows[name], cell)
	}
	for _, n := range order {
		fmt.Fprintf(&b, "  %-32s %s\n", n, strings.Join(rows[n], ", "))
	}
	for _, k := range r.Untested() {
		fmt.Fprintf(&b, "  %-32s not sent: the broker had stopped answering\n", kmsg.NameForKey(k))
	}
	for _, c := range r.Bad {
		fmt.Fprintf(&b, "  %-32s %s\n", c.Variant, c.Outcome)
	}
	for _, c := range r.Failed() {
		fmt.Fprintf(&b, "  FAILED %s: %s: %s", c.Name(), c.Outcome, c.Why)
		if len(c.Bytes) > 0 {
			fmt.Fprintf(&b, "; the answer begins % x", c.Bytes)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func skips(cells []Cell) int {
	n := 0
	for _, c := range cells {
		if c.Outcome == Skipped {
			n++
		}
	}
	return n
}

// ParseMaxVersion reads a --max-version pin, KEY=V, where KEY is an API's
// name as Kafka's protocol guide spells it (Produce, Metadata, any case)
// or its number.
func ParseMaxVersion(s string) (key, version int16, err error) {
	name, v, ok := strings.Cut(s, "=")
	if !ok {
		return 0, 0, fmt.Errorf("--max-version %q: want KEY=VERSION, e.g. Produce=9", s)
	}
	n, err := strconv.ParseInt(v, 10, 16)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("--max-version %q: %q is no version (want 0, 1, ...)", s, v)
	}
	if k, err := strconv.ParseInt(name, 10, 16); err == nil && kmsg.NameForKey(int16(k)) != "" {
		return int16(k), int16(n), nil
	}
	for k := int16(0); k < 200; k++ {
		if strings.EqualFold(kmsg.NameForKey(k), name) {
			return k, int16(n), nil
		}
	}
	return 0, 0, fmt.Errorf("--max-version %q: no API named %q (names as in Kafka's protocol guide: Produce, Fetch, Metadata, ...)", s, name)
}
