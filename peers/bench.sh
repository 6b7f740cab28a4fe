#!/bin/sh
# bench.sh reproduces the measurements in README.md: cmd/dbbench twice at
# 1M keys and records (every workload), then once at 10M keys (fillrandom
# and readrandom). It writes each run's markdown tables and JSON into the
# directory given (default: the current one) and prints how long each took.
#
#	cd peers && ./bench.sh /tmp/results
set -eu
out=$(realpath "${1:-.}")
mkdir -p "$out"
cd "$(dirname "$0")"
bin=$(mktemp -d)/dbbench
go build -o "$bin" ./cmd/dbbench
run() {
	name=$1
	shift
	start=$(date +%s)
	"$bin" "$@" -json "$out/$name.json" >"$out/$name.md"
	echo "$name: $(($(date +%s) - start)) s"
}
run 1M-a -keys 1000000
run 1M-b -keys 1000000
run 10M -keys 10000000 -workloads fillrandom,readrandom
