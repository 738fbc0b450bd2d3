package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/watermarkhq/watermark/conformance"
	"github.com/watermarkhq/watermark/conformance/cluster"
	"github.com/watermarkhq/watermark/conformance/run"
	"gopkg.in/yaml.v3"
)

// controlHandler is `watermark cluster --control`'s HTTP endpoint: the
// faults the kit's --target kafka commands ask for, on this cluster's
// processes, so that the cluster can be checked from outside exactly as
// any Kafka-compatible cluster is:
//
//	/kill/{id}     SIGKILL broker {id}        (--kill-cmd)
//	/stop/{id}     SIGTERM it and wait until it is down: a controlled
//	               shutdown, a flush and a clean-shutdown marker (--stop-cmd)
//	/restart/{id}  start it again on its data (--restart-cmd)
//	/pause/{id}    SIGSTOP it                 (--pause-cmd)
//	/resume/{id}   SIGCONT it                 (--resume-cmd)
//	/isolate/{id}  cut its links (--proxies)  (--isolate-cmd)
//	/heal          end every isolation        (--heal-cmd)
//	/slow/{id}?ms=N  delay its links to the other brokers and the
//	               controller by N ms, 0 for none (--proxies; --slow-cmd)
//
// Each answers 200 "ok", or 500 with what went wrong.
func controlHandler(ctx context.Context, c *cluster.Cluster) http.Handler {
	mux := http.NewServeMux()
	withID := func(fn func(int) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.Atoi(r.PathValue("id"))
			if err == nil {
				err = fn(id)
			}
			answer(w, err)
		}
	}
	mux.HandleFunc("/kill/{id}", withID(c.Kill))
	mux.HandleFunc("/stop/{id}", withID(func(id int) error { return c.Terminate(id, 0) }))
	mux.HandleFunc("/restart/{id}", withID(func(id int) error {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return c.Restart(rctx, id)
	}))
	mux.HandleFunc("/pause/{id}", withID(c.Pause))
	mux.HandleFunc("/resume/{id}", withID(c.Resume))
	mux.HandleFunc("/isolate/{id}", withID(c.Isolate))
	mux.HandleFunc("/heal", func(w http.ResponseWriter, _ *http.Request) { answer(w, c.Heal()) })
	mux.HandleFunc("/slow/{id}", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 {
			http.Error(w, "ms: want a number of milliseconds >= 0", http.StatusBadRequest)
			return
		}
		withID(func(id int) error { return c.SetPeerLatency(id, time.Duration(ms)*time.Millisecond) })(w, r)
	})
	return mux
}

func answer(w http.ResponseWriter, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "ok")
}

// serveControl listens on addr and serves the control endpoint until ctx
// ends; it returns the address it listens on.
func serveControl(ctx context.Context, addr string, c *cluster.Cluster) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: controlHandler(ctx, c), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return ln.Addr().String(), nil
}

// writeTargetFile writes what watermark check --target kafka needs to
// check this cluster from outside: its bootstrap, every setting it runs
// with (so cases that need others are skipped with the flag to give),
// and, with the HTTP controls, a fault command for each (isolation only
// with proxies).
func writeTargetFile(path string, bootstrap []string, control string, proxies bool, s run.Settings) error {
	f := conformance.TargetFile{Bootstrap: bootstrap, Settings: map[string]string{}}
	if control != "" {
		c := "curl -fsS http://" + control
		f.KillCmd, f.RestartCmd = c+"/kill/{id}", c+"/restart/{id}"
		f.PauseCmd, f.ResumeCmd = c+"/pause/{id}", c+"/resume/{id}"
		f.StopCmd = c + "/stop/{id}"
		if proxies {
			f.IsolateCmd, f.HealCmd = c+"/isolate/{id}", c+"/heal"
			f.SlowCmd = "curl -fsS 'http://" + control + "/slow/{id}?ms={ms}'"
		}
	}
	for _, fld := range append(run.Fields(&s.Broker), run.Fields(&s.Controller)...) {
		f.Settings[fld.Key] = fld.String()
	}
	data, err := yaml.Marshal(&f)
	if err != nil {
		return err
	}
	head := "# watermark cluster's target file: watermark check --target kafka --target-file " + path + "\n"
	return os.WriteFile(path, append([]byte(head), data...), 0o644)
}
