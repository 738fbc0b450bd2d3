#!/usr/bin/env bash
# check.sh [watermark check ARGS]: build jocko (build.sh, from $JOCKO_SRC
# if set, else the module proxy), start a 3-broker cluster (start.sh),
# run the kit at it with the fault commands of the target file start.sh
# writes, and stop the cluster. ARGS go to watermark check (e.g. --case
# no-faults). The build and the cluster live in $JOCKO_WORK, a new
# folder under $TMPDIR unless set; it is kept, with each broker's log.
# $WATERMARK is the watermark command, bin/watermark (make build) unless set.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tools/jocko
work=${JOCKO_WORK:-$(mktemp -d -t jocko.XXXXXX)}
mkdir -p "$work"
if [ ! -x "$work/build/jocko" ]; then
	"$here/build.sh" "$work/build" ${JOCKO_SRC:+"$JOCKO_SRC"}
fi
rm -rf "$work/cluster"
stop() {
	for id in 1 2 3; do
		[ -f "$work/cluster/$id/pid" ] && kill -9 "$(cat "$work/cluster/$id/pid")" 2>/dev/null || true
	done
}
trap stop EXIT
bootstrap=$("$here/start.sh" "$work/build/jocko" "$work/cluster")
echo "jocko cluster at $bootstrap (logs: $work/cluster/N/log)"
"${WATERMARK:-$root/bin/watermark}" check --target kafka --target-file "$work/cluster/target.yaml" "$@"
