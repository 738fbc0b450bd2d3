#!/usr/bin/env bash
# start.sh JOCKO DIR [ID]: start a 3-broker jocko cluster on loopback, each
# broker's data and log under DIR/N, and print the bootstrap. With ID,
# start that one broker again on its data (a restart command for the kit).
# Ports: broker N listens on BASE+N (Kafka), BASE+100+N (raft) and
# BASE+200+N (serf); BASE is $JOCKO_BASE_PORT, 29090 unless set.
set -eu
[ $# -ge 2 ] || { echo "usage: start.sh JOCKO DIR [ID]" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$2
base=${JOCKO_BASE_PORT:-29090}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

start() {
	id=$1
	join=""
	for p in 1 2 3; do
		[ "$p" = "$id" ] || join="$join --join=127.0.0.1:$((base + 200 + p))"
	done
	boot=""
	[ "$id" = 1 ] && boot="--bootstrap"
	mkdir -p "$dir/$id"
	# shellcheck disable=SC2086
	nohup "$bin" broker --id="$id" --data-dir="$dir/$id/data" \
		--broker-addr="127.0.0.1:$((base + id))" \
		--raft-addr="127.0.0.1:$((base + 100 + id))" \
		--serf-addr="127.0.0.1:$((base + 200 + id))" \
		$boot $join >>"$dir/$id/log" 2>&1 </dev/null &
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

if [ $# -ge 3 ]; then
	start "$3"
	wait_port $((base + $3))
	exit 0
fi
for id in 1 2 3; do
	start "$id"
	wait_port $((base + id))
done
echo "127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
