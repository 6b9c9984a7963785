#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes) and etcd (go.etcd.io/etcd/server/v3)
# from Go modules into a cache outside the work tree, once: a later call whose stamp matches this
# module (go.mod, go.sum, tools.go, this script) prints where the binaries are and builds nothing.
#
#   tests/cluster/controlplane/build.sh          # prints the binaries' folder on its last line
#
# NVCRE_CONTROL_PLANE_DIR overrides the folder; the Go caches go to $NVCRE_CACHE_HOME/go.
# Two callers at once (make dev beside make test-cluster, two clones): one builds, the other waits for
# it and prints its folder (tests/cluster/build-lock.sh); a failed build leaves nothing behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../build-lock.sh"  # build_lock, build_dir, publish
kube_version="v1.37.2"
cache_home="${NVCRE_CACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre-hooks}"
out="${NVCRE_CONTROL_PLANE_DIR:-$cache_home/control-plane/$kube_version}"
stamp_value="$(cat "$here/go.mod" "$here/go.sum" "$here/tools.go" "$here/build.sh" | sha256sum | cut -c1-16)"

built() {  # the stamp matches and every output is there
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_value" ]] \
    && [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/kube-scheduler" ]] \
    && [[ -x "$out/etcd" ]]
}

if built; then
  echo "control plane: cached in $out" >&2
  echo "$out"
  exit 0
fi

if [[ -n "${NVCRE_CONTROL_PLANE_NO_BUILD:-}" ]]; then
  echo "control plane: not built yet in $out (run make control-plane)" >&2; exit 4
fi
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "control plane: no 'go' on PATH; the cluster tier needs Go >= 1.26" >&2; exit 3; }
export GOMODCACHE="${GOMODCACHE_OVERRIDE:-$cache_home/go/mod}"
export GOCACHE="${GOCACHE_OVERRIDE:-$cache_home/go/build}"
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
build_lock "control plane" "$out"
if built; then
  echo "control plane: built meanwhile by another caller in $out" >&2
  echo "$out"
  exit 0
fi
build_dir "$out"
started=$(date +%s)
cd "$here"
version_pkg="k8s.io/component-base/version"
minor="${kube_version#v1.}"; minor="${minor%%.*}"
ldflags="-s -w -X $version_pkg.gitVersion=$kube_version -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor"
ldflags+=" -X $version_pkg.gitTreeState=clean -X $version_pkg.buildDate=1970-01-01T00:00:00Z"
echo "control plane: building $kube_version into $out (Go caches in $cache_home/go)" >&2
go_step "control plane" kube-apiserver go build -trimpath -ldflags "$ldflags" -o "$build_tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go_step "control plane" kube-controller-manager go build -trimpath -ldflags "$ldflags" -o "$build_tmp/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
go_step "control plane" kube-scheduler go build -trimpath -ldflags "$ldflags" -o "$build_tmp/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler
go_step "control plane" etcd go build -trimpath -ldflags "-s -w" -o "$build_tmp/etcd" go.etcd.io/etcd/server/v3
echo "$stamp_value" > "$build_tmp/.stamp"
publish "$out"
echo "control plane: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
