# zkfarm's container image (docs/install.md, "The container"; docs/kubernetes.md).
#
#   docker build -t zkfarm:0.1.0 .
#   docker run -d --name zkfarm --gpus all --ulimit memlock=-1:-1 --stop-timeout 780 \
#       -v zkfarm-state:/var/lib/zkfarm -v /srv/zkfarm:/data -p 127.0.0.1:17100:17100 zkfarm:0.1.0
#   docker exec zkfarm zkfarmctl status
#
# Two stages. "build" compiles the farm on Debian 12 and makes the Debian
# package from debian/ (dpkg-buildpackage, as docs/install.md says); the runtime stage installs that same package on
# debian:12-slim, so the image runs exactly what the .deb ships (/usr/bin,
# the zkfarm user, /etc/zkfarm/zkfarmd.toml).
#
# CUDA: Debian 12 has no nvcc, so the default image has the CPU backend only.
# To build the CUDA backend, pass a Debian 12 based image with CUDA's compiler
# in /usr/local/cuda (e.g. debian:12 plus nvcc and cudart from NVIDIA's
# "debian12" CUDA repository; NVIDIA publishes no Debian devel image):
#   docker build --build-arg BUILD_IMAGE=registry.example.com/debian12-cuda:12.6 \
#       --build-arg ZKFARM_CUDA_ARCHS=90 -t zkfarm:0.1.0-cuda .
# CMake finds /usr/local/cuda/bin/nvcc by itself. The CUDA runtime is linked
# statically, so the runtime image needs only the driver (libcuda.so.1,
# libnvidia-ml.so.1), which the NVIDIA Container Toolkit mounts into the
# container (docker run --gpus, or the device plugin on Kubernetes).

ARG BUILD_IMAGE=debian:12
ARG RUNTIME_IMAGE=debian:12-slim

FROM ${BUILD_IMAGE} AS build
ARG ZKFARM_CUDA_ARCHS=90
ENV DEBIAN_FRONTEND=noninteractive
# The package's Build-Depends (debian/control: the libraries, cmake,
# debhelper, help2man, bash-completion), installed by apt from that file.
WORKDIR /src/zkfarm
COPY debian/control debian/changelog debian/
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && apt-get build-dep -y ./ \
 && rm -rf /var/lib/apt/lists/*
COPY . .
# debian/rules builds in /build as configured here (CUDA architectures
# included) and puts the package in the parent folder, /src.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DZKFARM_TESTS=OFF \
      -DZKFARM_CUDA_ARCHS="${ZKFARM_CUDA_ARCHS}" \
 && ZKFARM_BUILD_DIR=/build DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -us -uc \
 && mkdir /pkg && mv /src/zkfarm_*.deb /pkg/ \
 && ls -l /pkg/zkfarm_*.deb

FROM ${RUNTIME_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
# A fixed uid/gid (10001, the one docs/kubernetes.md runs as) made before the
# package is installed: its postinst then keeps this user (it creates zkfarm
# only when there is none), and USER can be numeric, which Kubernetes needs
# to check runAsNonRoot.
RUN groupadd --system --gid 10001 zkfarm \
 && useradd --system --uid 10001 --gid zkfarm --home-dir /var/lib/zkfarm --no-create-home \
      --shell /usr/sbin/nologin --comment "zkfarm proving farm" zkfarm
COPY --from=build /pkg/zkfarm_*.deb /tmp/
# apt resolves the package's Depends (the runtime libraries, adduser) from
# Debian. (The zkfarm-dbgsym package of debug symbols stays in the build stage.)
RUN apt-get update \
 && apt-get install -y --no-install-recommends /tmp/zkfarm_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/zkfarm_*.deb \
 && zkfarmd --version
# The NVIDIA Container Toolkit mounts the driver's compute and NVML libraries
# (and the GPUs asked for) when these are set; without a GPU they do nothing.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    ZKFARM_STATE_DIR=/var/lib/zkfarm
USER 10001:10001
WORKDIR /var/lib/zkfarm
# The journal (accepted jobs, proofs) must outlive the container: mount a
# volume here (Docker initialises a new named volume with zkfarm as owner).
VOLUME ["/var/lib/zkfarm"]
# docs/configuration.md: http_address, suggested port 17100.
EXPOSE 17100
# SIGTERM is zkfarmd's graceful stop (drain, stop workers, release GPU memory,
# up to 780 s with the defaults): give docker stop that long (--stop-timeout
# 780 or docker stop -t 780). zkfarmd reaps its own workers and works as PID 1.
STOPSIGNAL SIGTERM
# Healthy = alive: the supervisor's event loop answers on the control socket
# (what /healthz says; no HTTP client in the image), also while it drains or
# stops. Not "ready": Docker (a restart policy, Swarm) restarts an unhealthy
# container, and a farm drained for maintenance must not be restarted in the
# middle of it. Readiness stays "zkfarmctl ready" and /readyz. Docker reads
# exit 1 as unhealthy (2 is reserved): every failure of zkfarmctl becomes 1.
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
  CMD zkfarmctl --state-dir /var/lib/zkfarm --timeout-ms 5000 status --json >/dev/null || exit 1
ENTRYPOINT ["zkfarmd", "--state-dir", "/var/lib/zkfarm"]
# The package's configuration, with HTTP on every address of the container
# (probes and scrapes come from outside it; publish the port with -p).
CMD ["--config", "/etc/zkfarm/zkfarmd.toml", "--http", "0.0.0.0:17100"]
