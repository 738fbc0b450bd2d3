#!/bin/sh
# Checks the reference itself from outside (make peer-self): watermark
# check --target kafka against `watermark cluster --fast --proxies
# --control`, through the target file the cluster writes (its bootstrap,
# its settings, and every fault command through its HTTP controls).
#
# Without --case among the arguments, every case runs: first on a
# cluster with the harness's settings, where cases that need others are
# skipped, then each group of those on a cluster started with what the
# group needs (watermark cases --cluster-flags), so every case runs as on
# --target cluster. With --case, one cluster with CLUSTER_FLAGS runs
# what is asked. Arguments go to watermark check.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${WATERMARK:-$root/bin/watermark}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0

# pass FLAGS CHECK-ARGS...: one cluster with FLAGS, one check on it.
pass() {
	flags=$1
	shift
	rm -rf "$dir/cluster" "$dir/target.yaml"
	# shellcheck disable=SC2086
	"$bin" cluster --fast --proxies --control 127.0.0.1:0 --dir "$dir/cluster" \
		--target-file "$dir/target.yaml" $flags >"$dir/out" 2>"$dir/err" &
	cluster=$!
	for _ in $(seq 1 60); do
		grep -q '^target file:' "$dir/out" && break
		kill -0 $cluster 2>/dev/null || { cat "$dir/out" "$dir/err"; exit 1; }
		sleep 0.5
	done
	echo "== the reference (watermark cluster --fast $flags) at $(sed -n 's/^bootstrap: //p' "$dir/out")"
	if ! "$bin" check --target kafka --target-file "$dir/target.yaml" "$@"; then
		status=1
		echo "(that cluster and its target file go when this pass ends: replay a run above with"
		echo " CLUSTER_FLAGS='$flags' $0 --case NAME --seed N)"
	fi
	kill $cluster 2>/dev/null || true
	wait $cluster 2>/dev/null || true
}

case " $* " in
*" --case"*)
	pass "${CLUSTER_FLAGS:-}" "$@"
	;;
*)
	pass "" "$@"
	"$bin" cases --cluster-flags | cut -f2 | sort -u >"$dir/groups"
	while read -r flags; do
		names=$("$bin" cases --cluster-flags | awk -F'\t' -v f="$flags" '$2 == f { printf "--case %s ", $1 }')
		# shellcheck disable=SC2086
		pass "$flags" $names "$@"
	done <"$dir/groups"
	;;
esac
exit $status
