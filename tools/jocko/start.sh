#!/usr/bin/env bash
# start.sh JOCKO DIR: start a 3-broker jocko cluster on loopback (JOCKO is
# the binary build.sh made), each broker's data, log and pid under DIR/N;
# write DIR/target.yaml for `watermark check --target kafka --target-file`
# and print the bootstrap.
# start.sh JOCKO DIR ID: start broker ID again on its data (the restart
# command in target.yaml).
# start.sh JOCKO DIR create TOPIC PARTITIONS RF: create a topic with jocko's
# own CLI, asking each broker until the controller (raft leader) takes it
# (the create-topic command in target.yaml).
# Ports: broker N listens on BASE+N (Kafka), BASE+100+N (raft) and
# BASE+200+N (serf); BASE is $JOCKO_BASE_PORT, 29090 unless set.
set -eu
[ $# -ge 2 ] || { echo "usage: start.sh JOCKO DIR [ID | create TOPIC PARTITIONS RF]" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
dir=$2
base=${JOCKO_BASE_PORT:-29090}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

start() {
	id=$1
	join=()
	for p in 1 2 3; do
		[ "$p" = "$id" ] || join+=("--join=127.0.0.1:$((base + 200 + p))")
	done
	boot=()
	[ "$id" = 1 ] && boot=(--bootstrap)
	mkdir -p "$dir/$id"
	nohup "$bin" broker --id="$id" --data-dir="$dir/$id/data" \
		--broker-addr="127.0.0.1:$((base + id))" \
		--raft-addr="127.0.0.1:$((base + 100 + id))" \
		--serf-addr="127.0.0.1:$((base + 200 + id))" \
		"${boot[@]}" "${join[@]}" >>"$dir/$id/log" 2>&1 </dev/null &
	echo $! >"$dir/$id/pid"
}

wait_port() {
	i=0
	while ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "start.sh: nothing listens on 127.0.0.1:$1 after 10s; see $dir/*/log" >&2; exit 1; }
		sleep 0.1
	done
}

if [ $# -ge 3 ] && [ "$3" = create ]; then
	[ $# -ge 6 ] || { echo "usage: start.sh JOCKO DIR create TOPIC PARTITIONS RF" >&2; exit 2; }
	for try in 1 2 3 4 5; do
		for p in 1 2 3; do
			if "$bin" topic create --broker-addr="127.0.0.1:$((base + p))" --topic="$4" \
				--partitions="$5" --replication-factor="$6" 2>/dev/null; then
				exit 0
			fi
		done
		sleep 1
	done
	echo "start.sh: no broker created topic $4" >&2
	exit 1
fi

if [ $# -ge 3 ]; then
	start "$3"
	wait_port $((base + $3))
	exit 0
fi

for id in 1 2 3; do
	start "$id"
	wait_port $((base + id))
done
boot="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
q() { printf "'%s'" "$1"; }
cat >"$dir/target.yaml" <<YAML
bootstrap: [127.0.0.1:$((base + 1)), 127.0.0.1:$((base + 2)), 127.0.0.1:$((base + 3))]
kill_cmd: kill -9 \$(cat $(q "$dir")/{id}/pid)
restart_cmd: >-
  $(q "$self") $(q "$bin") $(q "$dir") {id}
pause_cmd: kill -STOP \$(cat $(q "$dir")/{id}/pid)
resume_cmd: kill -CONT \$(cat $(q "$dir")/{id}/pid)
create_topic_cmd: >-
  $(q "$self") $(q "$bin") $(q "$dir") create {topic} {partitions} {rf}
YAML
# serf gossip and the raft election take a few seconds
sleep 5
echo "$boot"
