# Keelson's images: one final stage per controller, tini as PID 1, the binary, user 65532, nothing else.
#   docker build --target daemonset-controller -t keelson/daemonset-controller:dev .
# The same layout is assembled offline (no registry needed) by tools/image; tools/image/image_test.go keeps
# the two in step.

ARG GO_VERSION=1.26
ARG DEBIAN_VERSION=bookworm

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY apis/go.mod apis/go.sum apis/
RUN go mod download
COPY . .
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
ARG BUILD_DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/keelson-dev/keelson/cmd/internal/version.Version=${VERSION} -X github.com/keelson-dev/keelson/cmd/internal/version.GitCommit=${GIT_COMMIT} -X github.com/keelson-dev/keelson/cmd/internal/version.BuildDate=${BUILD_DATE}" \
      -o /out/ ./cmd/daemonset-controller ./cmd/workload-sizer ./cmd/pipeline-controller ./e2e/echo

FROM debian:${DEBIAN_VERSION}-slim AS tini
RUN apt-get update && apt-get install -y --no-install-recommends tini && cp /usr/bin/tini-static /tini

FROM scratch AS base
COPY --from=tini /tini /tini
USER 65532:65532

# The end-to-end suites' workload (make e2e loads it into kind): an HTTP server that names the pod it runs in.
FROM scratch AS e2e-echo
COPY --from=build /out/echo /echo
USER 65532:65532
ENTRYPOINT ["/echo"]

# The same server as another image (another user, so another image config and ID), for the in-place update suite.
FROM e2e-echo AS e2e-echo-next
USER 65533:65533

FROM base AS daemonset-controller
COPY --from=build /out/daemonset-controller /daemonset-controller
ENTRYPOINT ["/tini", "--", "/daemonset-controller"]

FROM base AS workload-sizer
COPY --from=build /out/workload-sizer /workload-sizer
ENTRYPOINT ["/tini", "--", "/workload-sizer"]

FROM base AS pipeline-controller
COPY --from=build /out/pipeline-controller /pipeline-controller
ENTRYPOINT ["/tini", "--", "/pipeline-controller"]
