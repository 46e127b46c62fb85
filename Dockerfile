# The broker image: a wheel with the compiled Cython twin, built offline from
# a wheelhouse, installed into a venv on a slim Debian bookworm runtime.
#
# Build with deploy/container/build-image.sh (makes the base images with
# mmdebstrap, fills the wheelhouse, runs `podman build --network none`);
# docs/operations.md has the details, the environment variables and volumes.
ARG BUILDER_IMAGE=localhost/broker-builder-base:bookworm
ARG RUNTIME_IMAGE=localhost/broker-runtime-base:bookworm

# ---- build: the wheel (setup.py compiles every broker/**/_*_c.pyx) and its venv ----
FROM ${BUILDER_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# no network here: every wheel, build requirements included, comes from the wheelhouse
ENV PIP_NO_INDEX=1 \
    PIP_FIND_LINKS=/wheelhouse \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
COPY deploy/container/wheelhouse/ /wheelhouse/
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY broker/ broker/
# pip and setuptools leave the runtime venv (nothing imports them at run time);
# the last command fails the build unless every compiled twin (each
# broker/**/_*_c.pyx) imports from the venv (-I: the installed package, not ./broker)
RUN python3 -m venv /opt/broker \
    && /opt/broker/bin/pip wheel --no-deps --wheel-dir /dist . \
    && /opt/broker/bin/pip install /dist/broker-*.whl \
    && /opt/broker/bin/pip uninstall --yes --quiet setuptools pip \
    && /opt/broker/bin/python -I -c "import importlib, pathlib; \
twins = ['.'.join(p.relative_to('/src').with_suffix('').parts) for p in pathlib.Path('/src/broker').rglob('_*_c.pyx')]; \
assert twins; [importlib.import_module(t) for t in twins]; print('compiled twins:', *twins)"

# ---- runtime ----
FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="broker" \
      org.opencontainers.image.description="Kafka-compatible append and validation broker" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"

# a fixed numeric uid/gid: Kubernetes' runAsNonRoot can verify it, volumes can be chowned to it
RUN groupadd --gid 10001 broker \
    && useradd --no-log-init --no-create-home --uid 10001 --gid 10001 \
       --home-dir /var/lib/broker --shell /usr/sbin/nologin broker \
    && mkdir -p /var/lib/broker/data /etc/broker \
    && chown -R 10001:10001 /var/lib/broker

COPY --from=build /opt/broker /opt/broker
COPY deploy/container/server.properties /etc/broker/server.properties

ENV PATH=/opt/broker/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# log.dirs of the default server.properties; a relative log.dir lands here too
WORKDIR /var/lib/broker
VOLUME ["/var/lib/broker/data"]
# Kafka protocol, then /metrics /healthz /readyz (metrics.listener)
EXPOSE 9092 9404
USER 10001:10001

HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-m", "broker.app_env", "healthcheck", "/etc/broker/server.properties"]

# tini is PID 1 and forwards SIGTERM to the broker. `broker serve` shuts down
# cleanly on SIGTERM, as PID 1 too, but only once its handler is installed
# (after start-up); a PID 1 without a handler loses the signal, so tini covers
# start-up and reaps orphaned processes (docs/operations.md, "Running").
# broker.app_env maps BROKER_* variables to --override flags and execs it.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "python", "-m", "broker.app_env"]
CMD ["serve", "/etc/broker/server.properties"]
