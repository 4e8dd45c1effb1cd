#!/usr/bin/env bash
# Builds the test control plane from source, pinned by tools/kube, tools/etcd and
# tools/kwok: etcd, kube-apiserver, kube-scheduler, kubectl, kube-controller-manager
# and KWOK. The binaries go to a cache
# outside the checkout, keyed by the pins and this script, so a new clone on the
# same machine (CI's) links them in seconds; build/kube points at them.
# Without a Go toolchain it says what to install and leaves the tests to skip,
# except under CI=true, where a missing control plane is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

kube_version=v1.30.4
link=build/kube
if ! command -v go >/dev/null 2>&1; then
	echo "control plane: no Go toolchain (https://go.dev/doc/install, Go 1.24 or newer);" \
		"the tests that need a real API server will be skipped" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 0
fi

key=$(cat tools/kube/go.mod tools/kube/go.sum tools/etcd/go.mod tools/etcd/go.sum \
	tools/kwok/go.mod tools/kwok/go.sum tools/build-kube.sh | sha256sum | cut -c1-16)
cache=${OPTIMIST_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/optimist/kube}
out=$cache/$key
binaries=(etcd kube-apiserver kube-scheduler kubectl kube-controller-manager kwok)

built() {
	for b in "${binaries[@]}"; do [ -x "$out/$b" ] || return 1; done
}

if ! built; then
	started=$(date +%s)
	staging=$(mktemp -d "$cache.XXXXXX" 2>/dev/null || { mkdir -p "$cache" && mktemp -d "$cache.XXXXXX"; })
	trap 'rm -rf "$staging"' EXIT
	export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
	echo "control plane: building etcd and Kubernetes $kube_version from source (cold: see README)"
	(cd tools/etcd && go build -trimpath -o "$staging/etcd" go.etcd.io/etcd/server/v3)
	version_flags=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		version_flags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=30"
		version_flags+=" -X $pkg.gitTreeState=clean"
	done
	(cd tools/kube && go build -trimpath -tags=providerless -ldflags "-s -w $version_flags" \
		-o "$staging/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kube-controller-manager)
	(cd tools/kwok && go build -trimpath -ldflags "-s -w" -o "$staging/" sigs.k8s.io/kwok/cmd/kwok)
	mkdir -p "$cache"
	rm -rf "$out"
	mv "$staging" "$out"
	trap - EXIT
	echo "control plane: built in $(($(date +%s) - started)) s into $out"
fi
"$out/kube-apiserver" --version | grep -q "$kube_version" ||
	{ echo "control plane: $out/kube-apiserver does not report $kube_version" >&2; exit 1; }
mkdir -p "$(dirname "$link")"
ln -sfn "$out" "$link"
