# Images for the two programs, from one build stage, for any platform of `make cross`
# (linux/amd64, arm64, ppc64le, s390x):
#   docker buildx build --platform linux/amd64,linux/arm64,linux/ppc64le,linux/s390x \
#     --build-arg VERSION=v0.2.0 --target operator -t ghcr.io/vrrp-operator/operator:v0.2.0 .
#   docker buildx build --platform ... --build-arg VERSION=v0.2.0 --target vrrpd -t ghcr.io/vrrp-operator/vrrpd:v0.2.0 .
# Tag both with the VERSION they are built with: the operator runs vrrpd:<its VERSION>
# unless --vrrpd-image says otherwise (without VERSION both are "dev", and vrrpd:dev).
# Without a registry or Docker engine, make release VERSION=... builds images of the same
# binaries (from make cross) as OCI archives, on an empty base rather than distroless'
# (hack/ociimage says what that leaves out).
# The build stage runs on the builder's own platform ($BUILDPLATFORM) and cross-compiles
# for $TARGETARCH, so no stage runs under emulation. Both binaries are static
# (CGO_ENABLED=0), so the runtime stage is distroless/static, which exists for all four.
# A plain `docker build` (no BuildKit platform arguments) builds for the host. vrrpd's tags
# are the Makefile's VRRPD_TAGS.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
# --build-arg VERSION=$(git describe --tags --always) sets what --version prints.
ARG VERSION=dev
RUN LDFLAGS="-X github.com/vrrp-operator/vrrp-operator/internal/version.Version=$VERSION" \
 && CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -tags nethttpomithttp2 -ldflags "$LDFLAGS" -o /out/vrrpd ./cmd/vrrpd \
 && CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "$LDFLAGS" -o /out/operator ./cmd/operator

# vrrpd runs as uid 0 but without privilege: the DaemonSet drops every capability except
# NET_ADMIN (addresses) and NET_RAW (VRRP, ARP and NDP sockets), and mounts its state
# directory (/run/vrrpd) as an emptyDir under a read-only root filesystem. Kubernetes grants
# added capabilities only to uid 0 (non-root users would need ambient capabilities).
FROM gcr.io/distroless/static-debian12 AS vrrpd
COPY --from=build /out/vrrpd /vrrpd
EXPOSE 9650
ENTRYPOINT ["/vrrpd"]

# The operator runs as distroless' nonroot user; numeric, so that runAsNonRoot can verify it.
FROM gcr.io/distroless/static-debian12:nonroot AS operator
COPY --from=build /out/operator /operator
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/operator"]
