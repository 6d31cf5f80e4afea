#!/usr/bin/env bash
# Build the real OpenKruise and training-operator controllers from Go modules into versioned caches, beside the
# Kubernetes binaries, with the CRD and webhook manifests they need. Rebuilds a controller only when its cache
# is missing. Prints one line per controller on stdout: `<name> <cache dir>`.
set -euo pipefail

log() { printf 'build-upstream: %s\n' "$*" >&2; }
GO_BIN="${GO:-go}"
command -v "$GO_BIN" >/dev/null 2>&1 || { log "no go toolchain found (run 'make go-toolchain')"; exit 1; }
GO_VERSION="$("$GO_BIN" env GOVERSION)"
CACHE_ROOT="${AIRFLOW_BROADCAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airflow-broadcast}"
KRUISE_VERSION="${KRUISE_VERSION:-v1.9.0}"
TRAINING_OPERATOR_VERSION="${TRAINING_OPERATOR_VERSION:-v1.9.0}"
mkdir -p "$CACHE_ROOT"
export GOFLAGS="-buildvcs=false -mod=mod"
export CGO_ENABLED=0
# The checksum database has no entry for Kruise v1.9.0; everything else is still verified.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/openkruise"
case "$GO_VERSION" in go1.2[7-9]*|go1.[3-9]*) export GOEXPERIMENT=nojsonv2 ;; esac

module_dir() {
  "$GO_BIN" mod download -json "$1" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p'
}

# Kruise pins Kubernetes through a replace block in its go.mod, so `go install mod@version` refuses it:
# build its root package inside a writable copy of the downloaded module.
build_kruise() {
  local out="$CACHE_ROOT/kruise-${KRUISE_VERSION}-${GO_VERSION}"
  if [ -x "$out/bin/kruise-manager" ] && [ -d "$out/crds" ] && [ -f "$out/webhook/manifests.yaml" ]; then
    echo "kruise $out"; return
  fi
  local tmp="$out.tmp" start dir
  start=$(date +%s)
  rm -rf "$tmp"; mkdir -p "$tmp/bin" "$tmp/crds" "$tmp/webhook"
  log "downloading github.com/openkruise/kruise@$KRUISE_VERSION"
  dir="$(module_dir "github.com/openkruise/kruise@$KRUISE_VERSION")"
  [ -n "$dir" ] || { log "could not download github.com/openkruise/kruise@$KRUISE_VERSION"; exit 1; }
  cp -r "$dir" "$tmp/src"; chmod -R u+w "$tmp/src"
  log "building kruise-manager (a few minutes)"
  (cd "$tmp/src" && "$GO_BIN" build -trimpath -ldflags "-s -w" -o "$tmp/bin/kruise-manager" . >&2)
  cp "$dir"/config/crd/bases/*.yaml "$tmp/crds/"
  cp "$dir/config/webhook/manifests.yaml" "$tmp/webhook/manifests.yaml"
  chmod -R u+w "$tmp/crds" "$tmp/webhook"
  rm -rf "$tmp/src" "$out"; mv "$tmp" "$out"
  log "kruise built in $(( $(date +%s) - start )) s into $out"
  echo "kruise $out"
}

build_training_operator() {
  local out="$CACHE_ROOT/training-operator-${TRAINING_OPERATOR_VERSION}-${GO_VERSION}"
  local module="github.com/kubeflow/training-operator"
  if [ -x "$out/bin/training-operator" ] && [ -f "$out/crds/kubeflow.org_tfjobs.yaml" ]; then
    echo "training-operator $out"; return
  fi
  local tmp="$out.tmp" start dir
  start=$(date +%s)
  rm -rf "$tmp"; mkdir -p "$tmp/bin" "$tmp/crds"
  log "building $module@$TRAINING_OPERATOR_VERSION (a few minutes)"
  GOBIN="$tmp/bin" "$GO_BIN" install -trimpath -ldflags "-s -w" \
    "$module/cmd/training-operator.v1@$TRAINING_OPERATOR_VERSION" >&2
  mv "$tmp/bin/training-operator.v1" "$tmp/bin/training-operator"
  dir="$(module_dir "$module@$TRAINING_OPERATOR_VERSION")"
  cp "$dir/manifests/base/crds/kubeflow.org_tfjobs.yaml" "$tmp/crds/"
  chmod -R u+w "$tmp/crds"
  rm -rf "$out"; mv "$tmp" "$out"
  log "training-operator built in $(( $(date +%s) - start )) s into $out"
  echo "training-operator $out"
}

which="${1:-all}"
case "$which" in
  kruise) build_kruise ;;
  training-operator) build_training_operator ;;
  all) build_training_operator; build_kruise ;;
  *) log "usage: build-upstream.sh [all|kruise|training-operator]"; exit 2 ;;
esac
