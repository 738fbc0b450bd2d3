#!/bin/sh
# Runs watermark check --target kafka against librdkafka's mock cluster
# (make peer-mock): builds the mock (a module of its own, cgo), starts it,
# points the kit at it with fault commands through its HTTP controls, and
# stops it. Arguments go to watermark check (e.g. --case no-faults).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
(cd "$root/tools/rdkafkamock" && go build -o "$root/bin/rdkafkamock" .)
out=$(mktemp)
"$root/bin/rdkafkamock" >"$out" 2>"$out.log" &
mock=$!
trap 'kill $mock 2>/dev/null; rm -f "$out" "$out.log"' EXIT
for _ in 1 2 3 4 5 6 7 8 9 10; do
	grep -q '^control:' "$out" && break
	sleep 0.5
done
bootstrap=$(sed -n 's/^bootstrap: //p' "$out")
control=$(sed -n 's/^control: //p' "$out")
echo "librdkafka mock cluster at $bootstrap, controls at $control"
"$root/bin/watermark" check --target kafka --bootstrap "$bootstrap" \
	--kill-cmd "curl -fsS $control/down/{id}" --restart-cmd "curl -fsS $control/up/{id}" \
	--create-topic-cmd "curl -fsS '$control/topic?name={topic}&partitions={partitions}&rf={rf}'" "$@" || status=$?
if ! kill -0 $mock 2>/dev/null; then
	wait $mock || echo "the mock cluster's process died (exit $?); its log: $out.log"
fi
exit ${status:-0}
