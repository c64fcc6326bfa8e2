#!/usr/bin/env bash
# envtest-assets.sh DIR: puts kube-apiserver, kubectl and etcd into DIR for envtest, and
# kube-proxy for the lab's nodes (its Service health check server answers vrrpd's checks).
# K8S_VERSION picks the Kubernetes release and K8S_BINARIES the commands built from it: the
# Makefile's envtest-floor target builds only kube-apiserver of the oldest release we support
# (README, "Install on Kubernetes") into a directory of its own, for test/install's floor test.
#
# The envtest binaries cannot be downloaded here, so kube-apiserver and kubectl are built from
# the k8s.io/kubernetes Go module and etcd comes from Debian's etcd-server package. Kubernetes'
# own go.mod points its staging repositories at ./staging, which a consumer cannot use, so a
# throwaway module replaces each of them with the matching published v0.x release.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.36.3}
K8S_BINARIES=${K8S_BINARIES:-kube-apiserver kubectl kube-proxy}
dir=${1:?usage: envtest-assets.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

built=true
for b in $K8S_BINARIES etcd; do
  [ -x "$dir/$b" ] || built=false
done
# The binaries must say their version (earlier builds of this script did not stamp it).
if $built && [ "$(cat "$dir/.version" 2>/dev/null)" = "$K8S_VERSION" ] \
   && [ "$("$dir/kube-apiserver" --version 2>/dev/null)" = "Kubernetes v$K8S_VERSION" ]; then
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
{
  printf '//go:build tools\n\npackage envtestassets\n\nimport (\n'
  for b in $K8S_BINARIES; do
    printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$b"
  done
  printf ')\n'
} > tools.go
GOFLAGS=-mod=mod go mod download k8s.io/kubernetes@v$K8S_VERSION
k8smod=$(GOFLAGS=-mod=mod go list -m -f '{{.GoMod}}' k8s.io/kubernetes@v$K8S_VERSION)
# Every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.N.M".
grep -oE 'k8s\.io/[A-Za-z0-9._-]+ => \./staging/src/k8s\.io/[A-Za-z0-9._-]+' "$k8smod" \
  | awk '{print $1}' | sort -u | while read -r m; do
    go mod edit -replace "$m=$m@$staging_version"
  done
GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
echo "envtest-assets: building $K8S_BINARIES v$K8S_VERSION (a few minutes, cached afterwards)" >&2
# Stamp the version as Kubernetes' own build does (hack/lib/version.sh): unstamped, the
# binaries call themselves v0.0.0-master, which is what /version, kubectl version and Helm's
# kubeVersion check would see.
minor=${K8S_VERSION#*.}
minor=${minor%%.*}
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=${K8S_VERSION%%.*} -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
for b in $K8S_BINARIES; do
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$dir/$b" "k8s.io/kubernetes/cmd/$b"
done
echo "$K8S_VERSION" > "$dir/.version"
