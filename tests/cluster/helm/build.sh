#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v4/cmd/helm) from its Go module into a cache outside the work tree, once,
# for the chart's tests: helm lint and helm template in the fast suite (tests/contract/test_helm_chart.py),
# helm install on the cluster tier (tests/cluster/test_helm.py). A later call whose stamp matches this
# module (go.mod, go.sum, tools.go, this script) builds nothing.
#
#   tests/cluster/helm/build.sh          # prints the folder (helm) on its last line
#
# NVCRE_HELM_DIR overrides the folder; NVCRE_HELM_NO_BUILD=1 fails (exit 4) instead of building.
# The Go caches are the control plane's: $NVCRE_CACHE_HOME/go/{mod,build}.
# Two callers at once (make helm beside the fast suite, two clones): one builds, the other waits for
# it and prints its folder (tests/cluster/build-lock.sh); a failed build leaves nothing behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../build-lock.sh"  # build_lock, build_dir, publish
helm_version="v4.3.2"
cache_home="${NVCRE_CACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre-hooks}"
out="${NVCRE_HELM_DIR:-$cache_home/helm/$helm_version}"
stamp_value="$(cat "$here/go.mod" "$here/go.sum" "$here/tools.go" "$here/build.sh" | sha256sum | cut -c1-16)"

built() {  # the stamp matches and the binary is there
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_value" ]] && [[ -x "$out/helm" ]]
}

if built; then
  echo "helm: cached in $out" >&2
  echo "$out"
  exit 0
fi

if [[ -n "${NVCRE_HELM_NO_BUILD:-}" ]]; then
  echo "helm: not built yet in $out (run make helm)" >&2; exit 4
fi
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "helm: no 'go' on PATH; building helm needs Go >= 1.26" >&2; exit 3; }
export GOMODCACHE="${GOMODCACHE_OVERRIDE:-$cache_home/go/mod}"
export GOCACHE="${GOCACHE_OVERRIDE:-$cache_home/go/build}"
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
build_lock "helm" "$out"
if built; then
  echo "helm: built meanwhile by another caller in $out" >&2
  echo "$out"
  exit 0
fi
build_dir "$out"
started=$(date +%s)
cd "$here"
echo "helm: building $helm_version into $out (Go caches in $cache_home/go)" >&2
# helm's own Makefile stamps its version with this flag (the source alone says v4.3): `helm version`
# then names the release built.
go_step "helm" helm go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version" \
  -o "$build_tmp/helm" helm.sh/helm/v4/cmd/helm
echo "$stamp_value" > "$build_tmp/.stamp"
publish "$out"
echo "helm: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
