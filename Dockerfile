# syntax=docker/dockerfile:1
# spotpool container image: the controller for in-cluster use
# (conf/kubernetes/deployment.yaml).
#
#   docker build -t spotpool:0.1.0 .
#   docker run --rm spotpool:0.1.0 version
#
# No credentials are baked in: the controller reads a pool's
# spec.credentialsSecretRef, or TENCENTCLOUD_SECRET_ID / TENCENTCLOUD_SECRET_KEY
# (/ TENCENTCLOUD_SESSION_TOKEN) from its environment. In a cluster it uses the
# pod's ServiceAccount; outside one, mount a kubeconfig and pass --kubeconfig.

ARG DEBIAN_RELEASE=bookworm

# --- build ----------------------------------------------------------------------
FROM debian:${DEBIAN_RELEASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config \
        libcurl4-openssl-dev libcjson-dev libssl-dev libyaml-dev \
        libsystemd-dev libmicrohttpd-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make -j"$(nproc)" BUILD=/out \
 && /out/spotpool version

# --- runtime --------------------------------------------------------------------
FROM debian:${DEBIAN_RELEASE}-slim
# Exactly the shared libraries the binary links against (plus their own
# dependencies, pulled in by apt) and the CA bundle for TLS to the apiserver
# and the Tencent Cloud API.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libcurl4 libcjson1 libssl3 libyaml-0-2 libsystemd0 libmicrohttpd12 zlib1g \
        ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && echo 'spotpool:x:65532:65532:spotpool:/nonexistent:/usr/sbin/nologin' >>/etc/passwd \
 && echo 'spotpool:x:65532:' >>/etc/group
COPY --from=build /out/spotpool /usr/local/bin/spotpool
# Fails the build if a runtime library is missing.
RUN ["/usr/local/bin/spotpool", "version"]

LABEL org.opencontainers.image.title="spotpool" \
      org.opencontainers.image.description="Keeps Tencent Cloud GPU spot instance pools (Spotpool resources) at their declared size"

# Metrics and health (/metrics, /healthz, /readyz). The daemon's default listen
# address is 127.0.0.1:9464, which probes cannot reach: pass
# --listen 0.0.0.0:9464 (the Deployment does).
EXPOSE 9464
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/spotpool"]
CMD ["run"]
