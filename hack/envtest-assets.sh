#!/usr/bin/env bash
# envtest-assets.sh DIR: puts kube-apiserver, kubectl and etcd into DIR for envtest, and
# kube-proxy for the lab's nodes (its Service health check server answers vrrpd's checks).
#
# The envtest binaries cannot be downloaded here, so kube-apiserver and kubectl are built from
# the k8s.io/kubernetes Go module and etcd comes from Debian's etcd-server package. Kubernetes'
# own go.mod points its staging repositories at ./staging, which a consumer cannot use, so a
# throwaway module replaces each of them with the matching published v0.x release.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.36.3}
dir=${1:?usage: envtest-assets.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kubectl" ] && [ -x "$dir/kube-proxy" ] && [ -x "$dir/etcd" ] \
   && [ "$(cat "$dir/.version" 2>/dev/null)" = "$K8S_VERSION" ]; then
  exit 0
fi

if [ ! -x "$dir/etcd" ]; then
  etcd=$(command -v etcd || true)
  if [ -z "$etcd" ]; then
    echo "envtest-assets: etcd not found; install Debian's etcd-server (apt-get install -y etcd-server)" >&2
    exit 1
  fi
  ln -sf "$etcd" "$dir/etcd"
fi

work="$dir/.build"
mkdir -p "$work"
cd "$work"
staging_version="v0.${K8S_VERSION#1.}"
cat > go.mod <<MOD
module envtestassets

go 1.26

require k8s.io/kubernetes v$K8S_VERSION
MOD
cat > tools.go <<'GO'
//go:build tools

package envtestassets

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
GO
GOFLAGS=-mod=mod go mod download k8s.io/kubernetes@v$K8S_VERSION
k8smod=$(GOFLAGS=-mod=mod go list -m -f '{{.GoMod}}' k8s.io/kubernetes@v$K8S_VERSION)
# Every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.N.M".
grep -oE 'k8s\.io/[A-Za-z0-9._-]+ => \./staging/src/k8s\.io/[A-Za-z0-9._-]+' "$k8smod" \
  | awk '{print $1}' | sort -u | while read -r m; do
    go mod edit -replace "$m=$m@$staging_version"
  done
GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
echo "envtest-assets: building kube-apiserver, kubectl and kube-proxy v$K8S_VERSION (a few minutes, cached afterwards)" >&2
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$dir/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$dir/kubectl" k8s.io/kubernetes/cmd/kubectl
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$dir/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy
echo "$K8S_VERSION" > "$dir/.version"
