#!/usr/bin/env bash
# Builds the newest Kubernetes release the bench and the tests run beside v1.30:
# kube-apiserver, kube-scheduler and kube-controller-manager, pinned by
# tools/kube-newest, into a cache outside the checkout keyed by the pin and this
# script; build/kube-newest points at them, beside links to v1.30's etcd, kubectl and
# KWOK (tools/build-kube.sh, which runs first). Without Go it says so and leaves the
# tests to skip, except under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v1.37.2 # benchmarks/controlplane/releases.py's NEWEST
link=build/kube-newest
if ! command -v go >/dev/null 2>&1; then
	echo "control plane $version: no Go toolchain (Go 1.26 or newer);" \
		"the tests that need a real API server will be skipped" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 0
fi
key=$(cat tools/kube-newest/go.mod tools/kube-newest/go.sum tools/build-kube-newest.sh |
	sha256sum | cut -c1-16)
cache=${OPTIMIST_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/optimist/kube}
out=$cache/newest-$key
binaries=(kube-apiserver kube-scheduler kube-controller-manager)

built() {
	for b in "${binaries[@]}"; do [ -x "$out/$b" ] || return 1; done
}

if ! built; then
	started=$(date +%s)
	mkdir -p "$cache"
	staging=$(mktemp -d "$cache/newest.XXXXXX")
	trap 'rm -rf "$staging"' EXIT
	export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
	echo "control plane: building Kubernetes $version from source (cold: see README)"
	minor=$(echo "$version" | cut -d. -f2)
	version_flags=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		version_flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		version_flags+=" -X $pkg.gitTreeState=clean"
	done
	(cd tools/kube-newest && go build -trimpath -tags=providerless -ldflags "-s -w $version_flags" \
		-o "$staging/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kube-controller-manager)
	rm -rf "$out"
	mv "$staging" "$out"
	trap - EXIT
	echo "control plane: built $version in $(($(date +%s) - started)) s into $out"
fi
"$out/kube-apiserver" --version | grep -q "$version" ||
	{ echo "control plane: $out/kube-apiserver does not report $version" >&2; exit 1; }
# the release's own binaries, and v1.30's etcd, kubectl and KWOK (build/kube)
pinned=$(readlink -f build/kube)
rm -rf "$link.new"
mkdir -p "$link.new"
for b in "${binaries[@]}"; do ln -s "$out/$b" "$link.new/$b"; done
for b in etcd kubectl kwok; do ln -s "$pinned/$b" "$link.new/$b"; done
rm -rf "$link"
mv "$link.new" "$link"
