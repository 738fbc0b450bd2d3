#!/usr/bin/env bash
# build.sh OUT [SOURCE]: build jocko (github.com/travisjeffery/jocko, a
# Kafka broker in Go) into OUT/jocko, patched to run as a local 3-broker
# cluster and to survive the kit's requests (patches/, README.md says why
# each). OUT also gets the source tree (OUT/src) and the stub of upspin.io
# (OUT/upspin).
#
# SOURCE is jocko's source: a git directory (a clone or mirror, its
# $JOCKO_COMMIT or HEAD is taken), a source folder, or a .tar/.tar.gz/.zip
# of one. Without it, the Go module proxy is asked for
# github.com/travisjeffery/jocko@$JOCKO_VERSION (latest unless set); the
# proxy refuses this module at the time of writing, so pass SOURCE.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: build.sh OUT [SOURCE]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
src=$out/src
rm -rf "$src" "$out/upspin"
mkdir -p "$src"

# 1. jocko's source.
if [ $# -ge 2 ]; then
	s=$2
	if [ -d "$s" ] && git --git-dir="$s" rev-parse --verify -q "${JOCKO_COMMIT:-HEAD}^{commit}" >/dev/null 2>&1; then
		echo "build.sh: jocko from git $s at $(git --git-dir="$s" rev-parse "${JOCKO_COMMIT:-HEAD}")"
		git --git-dir="$s" archive "${JOCKO_COMMIT:-HEAD}" | tar -x -C "$src"
	elif [ -d "$s/.git" ]; then
		echo "build.sh: jocko from git $s at $(git -C "$s" rev-parse "${JOCKO_COMMIT:-HEAD}")"
		git -C "$s" archive "${JOCKO_COMMIT:-HEAD}" | tar -x -C "$src"
	elif [ -d "$s" ]; then
		echo "build.sh: jocko from folder $s"
		cp -R "$s/." "$src"
	else
		case "$s" in
		*.zip) tmp=$(mktemp -d); unzip -q "$s" -d "$tmp" ;;
		*) tmp=$(mktemp -d); tar -xf "$s" -C "$tmp" ;;
		esac
		top=$(find "$tmp" -name go.mod -path '*/go.mod' | awk '{ print length, $0 }' | sort -n | head -1 | cut -d' ' -f2-)
		cp -R "$(dirname "$top")/." "$src"
		rm -rf "$tmp"
	fi
else
	v=${JOCKO_VERSION:-latest}
	echo "build.sh: asking the Go module proxy for github.com/travisjeffery/jocko@$v"
	dl=$(mktemp -d)
	(cd "$dl" && go mod init tmp >/dev/null 2>&1 &&
		GOFLAGS=-mod=mod go mod download -json "github.com/travisjeffery/jocko@$v") >"$dl/dl.json" || {
		sed -n 's/.*"Error": //p' "$dl/dl.json" >&2
		echo "build.sh: the module proxy refused jocko; pass its source as SOURCE (see README.md)" >&2
		exit 1
	}
	dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' "$dl/dl.json")
	cp -R "$dir/." "$src"
	chmod -R u+w "$src"
	rm -rf "$dl"
fi
[ -f "$src/go.mod" ] && grep -q '^module github.com/travisjeffery/jocko' "$src/go.mod" || {
	echo "build.sh: $src has no go.mod of github.com/travisjeffery/jocko" >&2
	exit 1
}

# 2. upspin.io, which jocko's log package wraps, is refused by the module
# proxy: a stub module with what jocko calls stands in for it.
mkdir -p "$out/upspin"
cp -R "$here/upspin/." "$out/upspin"
(cd "$src" && go mod edit -replace "upspin.io=$out/upspin")

# 3. The patches (README.md says why each).
for p in "$here"/patches/*.patch; do
	echo "build.sh: applying $(basename "$p")"
	patch -s -p1 -d "$src" <"$p"
done

# 4. Build. GOFLAGS=-mod=mod lets go fill in the go.sum entries of the
# stub's replacement; every other dependency comes from the module proxy
# at the versions in jocko's go.mod.
(cd "$src" && GOFLAGS=-mod=mod go build -o "$out/jocko" ./cmd/jocko)
echo "build.sh: built $out/jocko"
