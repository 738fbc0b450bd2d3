// Command rdkafkamock runs librdkafka's mock cluster on loopback, as a
// Kafka-compatible broker nobody here wrote, for the conformance kit to
// check: `make peer-mock` starts it and runs `watermark check --target
// kafka` against it (conformance/KIT.md has its table). librdkafka is
// linked in through confluent-kafka-go's cgo bindings, which is why this
// is a module of its own: the main module stays free of cgo.
//
// It prints the mock's bootstrap servers and the address of its fault
// controls, then runs until it is killed. The controls, over HTTP:
//
//	/down/{id}                  broker {id} stops answering (SetBrokerDown)
//	/up/{id}                    it answers again (SetBrokerUp)
//	/rtt/{id}?ms=N              every request to it takes N ms more
//	/topic?name=T&partitions=P&rf=R   create a topic (CreateTopic)
//
// Each answers 200 "ok", or 500 with librdkafka's error. The kit's fault
// commands call them with curl: --kill-cmd 'curl -fs http://ADDR/down/{id}'.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func main() {
	brokers := flag.Int("brokers", 3, "how many brokers the mock cluster has (ids 1..N)")
	control := flag.String("control", "127.0.0.1:0", "where the HTTP fault controls listen")
	flag.Parse()
	mc, err := kafka.NewMockCluster(*brokers)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdkafkamock: start the mock cluster: %v\n", err)
		os.Exit(1)
	}
	defer mc.Close()
	ln, err := net.Listen("tcp", *control)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdkafkamock: --control %s: %v\n", *control, err)
		os.Exit(2)
	}
	fmt.Printf("bootstrap: %s\ncontrol: http://%s\n", mc.BootstrapServers(), ln.Addr())
	go http.Serve(ln, handler(mc))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}

func handler(mc *kafka.MockCluster) http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	}
	id := func(w http.ResponseWriter, r *http.Request) (int, bool) {
		n, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			http.Error(w, "broker id: "+err.Error(), http.StatusBadRequest)
			return 0, false
		}
		return n, true
	}
	mux.HandleFunc("/down/{id}", func(w http.ResponseWriter, r *http.Request) {
		if n, ok := id(w, r); ok {
			answer(w, mc.SetBrokerDown(n))
		}
	})
	mux.HandleFunc("/up/{id}", func(w http.ResponseWriter, r *http.Request) {
		if n, ok := id(w, r); ok {
			answer(w, mc.SetBrokerUp(n))
		}
	})
	mux.HandleFunc("/rtt/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, ok := id(w, r)
		if !ok {
			return
		}
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 {
			http.Error(w, "ms: want a number of milliseconds >= 0", http.StatusBadRequest)
			return
		}
		answer(w, mc.SetRoundtripDuration(n, time.Duration(ms)*time.Millisecond))
	})
	mux.HandleFunc("/topic", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p, err1 := strconv.Atoi(q.Get("partitions"))
		rf, err2 := strconv.Atoi(q.Get("rf"))
		if q.Get("name") == "" || err1 != nil || err2 != nil {
			http.Error(w, "want name, partitions and rf", http.StatusBadRequest)
			return
		}
		answer(w, mc.CreateTopic(q.Get("name"), p, rf))
	})
	return mux
}
