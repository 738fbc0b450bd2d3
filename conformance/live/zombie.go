package live

import (
	"github.com/watermarkhq/watermark/conformance/run"
	"github.com/watermarkhq/watermark/impl/clientmsg"
	"github.com/watermarkhq/watermark/impl/kafka"
)

// answer is a broker's answer, its request, and what the runner knew of
// its partition's leadership when the request was sent.
type answer struct {
	env   clientmsg.Envelope
	req   kafka.Message // the request it answers
	known kafka.PartitionState
	// sentAt is when the request went out (ms into the run).
	sentAt int64
}

// zombieMarginMs is how long after the runner saw a newer leader an
// answer from the old one must arrive to count as a zombie's: long past
// any answer that was merely in flight as the election happened.
const zombieMarginMs = 1000

// noteZombie marks the situation a zombie leader answered, as seen from
// outside: a produce or fetch answered with success by the broker that
// led when it was sent, more than zombieMarginMs after the runner saw
// another broker lead in a newer epoch (a leader paused across its own
// replacement, answering what it held as it wakes). The simulator sees
// it from inside (sim coverage); this is the live runner's view of it.
func (l *live) noteZombie(a answer) {
	_, produced := a.env.Msg.(clientmsg.ProduceResponse)
	_, fetched := a.env.Msg.(clientmsg.FetchResponse)
	ans, isAnswer := a.env.Msg.(kafka.Answer)
	p, isPartitioned := a.env.Msg.(kafka.Partitioned)
	if !(produced || fetched) || !isAnswer || !isPartitioned || ans.Failure() != nil || a.known.Leader != int32(a.env.From) {
		return
	}
	tp := p.Subject()
	now, seen := l.leaders[tp]
	at, elected := l.electedAt[tp]
	if seen && elected && now.LeaderEpoch > a.known.LeaderEpoch && now.Leader != int32(a.env.From) && l.Now-at > zombieMarginMs {
		l.Reached(run.SitZombieAnswer)
	}
}
