# Images for the two programs, from one build stage:
#   docker build --target vrrpd    -t ghcr.io/vrrp-operator/vrrpd:dev .
#   docker build --target operator -t ghcr.io/vrrp-operator/operator:dev .
# Both binaries are static (CGO_ENABLED=0), so the runtime stage is distroless/static.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -o /out/vrrpd ./cmd/vrrpd \
 && CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -o /out/operator ./cmd/operator

# vrrpd runs as uid 0 but without privilege: the DaemonSet drops every capability except
# NET_ADMIN (addresses) and NET_RAW (VRRP, ARP and NDP sockets), and mounts its state
# directory (/run/vrrpd) as an emptyDir under a read-only root filesystem. Kubernetes grants
# added capabilities only to uid 0 (non-root users would need ambient capabilities).
FROM gcr.io/distroless/static-debian12 AS vrrpd
COPY --from=build /out/vrrpd /vrrpd
EXPOSE 9650
ENTRYPOINT ["/vrrpd"]

FROM gcr.io/distroless/static-debian12:nonroot AS operator
COPY --from=build /out/operator /operator
USER 65532:65532
ENTRYPOINT ["/operator"]
