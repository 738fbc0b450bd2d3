# watermark — build, test and check with failpoints compiled in.
#
# Failpoints are github.com/pingcap/failpoint markers. A plain `go build ./...`
# leaves them inert; every target below compiles them in with
# failpoint-toolexec, which rewrites the markers into a temporary copy at
# compile time and never touches the work tree. The rewritten build gets a
# cache of its own so it never mixes with plain builds.

GO            ?= go
GOBIN         := $(shell $(GO) env GOPATH)/bin
TOOLEXEC      := $(GOBIN)/failpoint-toolexec
STATICCHECK   := $(GOBIN)/staticcheck
FP_CACHE      := $(shell $(GO) env GOCACHE)-failpoint
FP_GO         := GOCACHE=$(FP_CACHE) $(GO)
FP_FLAGS      := -toolexec=$(TOOLEXEC)
FAILPOINT_VER := v0.0.0-20240528011301-b51a646c7c86
STATICCHECK_VER := v0.8.2
# Tests that need failpoints fail, instead of skipping, when this is set.
export WATERMARK_REQUIRE_FAILPOINTS := 1

.PHONY: all build test check random mutate lint bench fuzz tools clean peer-mock peer-jocko peer-self logbench

all: lint test

tools: $(TOOLEXEC) $(STATICCHECK)

$(TOOLEXEC):
	$(GO) install github.com/pingcap/failpoint/failpoint-toolexec@$(FAILPOINT_VER)

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VER)

## build: bin/watermark with failpoints compiled in, stamped with the
## commit it was built from (`watermark version`)
build: $(TOOLEXEC)
	$(FP_GO) build $(FP_FLAGS) -buildvcs=auto -o bin/watermark ./tools/watermark

## test: every test, with failpoints compiled in; tests that start real
## processes run bin/watermark (WATERMARK_BIN), built with failpoints too.
## Progress: each package as it finishes, and every 30 s the tests still
## running (tools/testprogress reads go test -json; it fails the target
## when a test, a package or the build failed). Then the slice of the
## peer suite that needs a module of its own: the wire table and two
## cases on librdkafka's mock cluster (tools/rdkafkamock, cgo).
test: build
	$(GO) build -o bin/testprogress ./tools/testprogress
	WATERMARK_BIN=$(CURDIR)/bin/watermark $(FP_GO) test $(FP_FLAGS) -json -count=1 -timeout 20m ./... | bin/testprogress
	@echo "tools/rdkafkamock: the kit against librdkafka's mock cluster (its own module, cgo; about 90 s)"
	cd tools/rdkafkamock && $(GO) test -count=1 -timeout 10m .

## check: the main job, `watermark check` on the embedded simulated cluster
check: build
	./bin/watermark check $(ARGS)

## random: the standing random check, a long budget: 2000 random schedules
## of every fault kind on the safe settings on the simulator, then 20 on
## real processes, a fresh local cluster each (make test runs 24 and 2)
random: build
	./bin/watermark check --random 2000 $(ARGS)
	./bin/watermark check --random 20 --target cluster --report-dir watermark-report/random-cluster $(ARGS)

## mutate: the planted-bug suite (tools/mutate/bugs.yaml): each bug applied
## to a scratch copy of the tree, built with failpoints and run through
## `watermark check`; prints how many the cases catch. Not part of test.
## ARGS go to the runner, e.g. ARGS="--bug ID --seeds 1 --jobs 2"; each
## check stops at its first failed run (--fail-fast), so a caught bug names
## the first case that caught it (ARGS='--check-args ""' runs them all)
mutate: build
	$(GO) run ./tools/mutate --check-args "--fail-fast" $(ARGS)

## peer-mock: the kit against librdkafka's mock cluster (tools/rdkafkamock,
## a module of its own: cgo, confluent-kafka-go's bundled librdkafka),
## with fault commands through its HTTP controls; ARGS go to watermark
## check (e.g. ARGS="--case no-faults"). Not part of test.
peer-mock: build
	tools/rdkafkamock/check.sh $(ARGS)

## peer-jocko: the kit against jocko (tools/jocko: built from JOCKO_SRC, a
## git checkout of github.com/travisjeffery/jocko, which the module proxy
## refuses), three brokers on loopback with kill, restart and pause
## commands; ARGS go to watermark check. Not part of test.
peer-jocko: build
	JOCKO_SRC=$(JOCKO_SRC) tools/jocko/check.sh $(ARGS)

## peer-self: the kit against the reference itself, from outside
## (--target kafka on `watermark cluster --control`): every case, each on
## a cluster with the settings it needs (tools/selfcheck/check.sh); with
## ARGS="--case NAME", one cluster with CLUSTER_FLAGS. Not part of test.
peer-self: build
	tools/selfcheck/check.sh $(ARGS)

## lint: gofmt, go vet, staticcheck
lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

## bench: the benchmarks whose numbers the closing notes quote
bench: $(TOOLEXEC)
	$(FP_GO) test $(FP_FLAGS) -run='^$$' -bench=. -benchmem ./...

## logbench: a broker's memory, produce and fetch throughput and restart
## time on a real local cluster as LOGBENCH_BYTES (2GiB) of 1 KiB records go through
LOGBENCH_BYTES ?= 2GiB
logbench:
	$(GO) build -o bin/watermark-plain ./tools/watermark
	$(GO) run ./tools/logbench --binary bin/watermark-plain --bytes $(LOGBENCH_BYTES) $(ARGS)

## fuzz: a short run of every fuzz target
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzRecover$$' -fuzztime=30s ./impl/storage
	$(GO) test -run='^$$' -fuzz='^FuzzRecoverSegments$$' -fuzztime=30s ./impl/storage
	$(GO) test -run='^$$' -fuzz=FuzzParseRequest -fuzztime=30s ./impl/kafkawire
	$(GO) test -run='^$$' -fuzz=FuzzParseFile -fuzztime=30s ./conformance/run
	$(GO) test -run='^$$' -fuzz=FuzzReadFrame -fuzztime=30s ./impl/node

clean:
	rm -rf bin
