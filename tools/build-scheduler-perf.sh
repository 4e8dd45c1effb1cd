#!/usr/bin/env bash
# Builds upstream's scheduler_perf benchmark (k8s.io/kubernetes/test/integration/
# scheduler_perf at the pin of tools/kube) as a test binary, into the cache beside
# the control plane's binaries; prints its path. Its test-only dependencies are
# not in tools/kube's go.sum (they are a dependency's tests), so the module is
# resolved in a copy of tools/kube, at the versions its go.mod pins. No -trimpath:
# the harness finds its API server's test files by their source paths.
set -euo pipefail
cd "$(dirname "$0")/.."

key=$(cat tools/kube/go.mod tools/kube/go.sum tools/build-scheduler-perf.sh | sha256sum | cut -c1-16)
cache=${OPTIMIST_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/optimist/kube}
out=$cache/scheduler-perf-$key
if [ ! -x "$out/scheduler_perf.test" ]; then
	command -v go >/dev/null 2>&1 || { echo "scheduler_perf: no Go toolchain" >&2; exit 1; }
	started=$(date +%s)
	module=$(mktemp -d)
	trap 'rm -rf "$module"' EXIT
	cp tools/kube/go.mod tools/kube/go.sum tools/kube/*.go "$module/"
	mkdir -p "$cache"
	staging=$(mktemp -d "$cache/staging.XXXXXX")
	(cd "$module" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false" \
		go test -c -o "$staging/scheduler_perf.test" \
		k8s.io/kubernetes/test/integration/scheduler_perf) >&2
	rm -rf "$out"
	mv "$staging" "$out"
	echo "scheduler_perf: built in $(($(date +%s) - started)) s" >&2
fi
echo "$out/scheduler_perf.test"
