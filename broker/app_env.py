"""Broker configuration from the process environment, and the container entrypoint.

Container images take configuration the way the Kafka images do: every
environment variable ``BROKER_<NAME>`` becomes the Kafka key derived from
``<NAME>``::

    BROKER_LOG_DIRS=/var/lib/broker/data        -> log.dirs=/var/lib/broker/data
    BROKER_ADVERTISED_LISTENERS=PLAINTEXT://h:9092 -> advertised.listeners=...
    BROKER_METRICS_LISTENER=127.0.0.1:9404      -> metrics.listener=127.0.0.1:9404

``<NAME>`` is lower-cased and each run of underscores is one character of the
key (Confluent's convention, ``cp-base`` ``env_to_props``)::

    _    -> .        BROKER_LOG_RETENTION_HOURS -> log.retention.hours
    __   -> _        BROKER_SOME__KEY           -> some_key
    ___  -> -        BROKER_SOME___KEY          -> some-key

Not configuration, never mapped:

* the process switches the broker reads itself (:data:`PROCESS_SWITCHES`:
  ``BROKER_NO_EXTENSIONS``, ``BROKER_EVENT_LOOP``, ``BROKER_LOG_LEVEL``,
  ``BROKER_EXPECT_COMPILED``, ``BROKER_SPARK_CACHE``, ``BROKER_CLEANER_FAULT``);
* the service-link variables Kubernetes injects for a Service named ``broker``
  (``BROKER_SERVICE_HOST``, ``BROKER_SERVICE_PORT[_<name>]``, ``BROKER_PORT``,
  ``BROKER_PORT_<n>_<TCP|UDP|SCTP>[_PROTO|_PORT|_ADDR]``); the same trap made
  Confluent's image fail with ``KAFKA_PORT`` in clusters with a ``kafka``
  Service. The manifests in ``deploy/k8s`` also set ``enableServiceLinks: false``.

A variable whose key is not declared stops ``serve`` here, before the exec,
so the message names the variable and not only the key it became, with the
nearest declared key as a variable (:func:`check_names`, through the key
table's own :func:`broker.config.broker_key` and
:func:`broker.config.suggest_key`)::

    environment variable BROKER_NUM_PARTITION sets num.partition, which is not a
    configuration key: did you mean BROKER_NUM_PARTITIONS (num.partitions)?

The entrypoint (``python -m broker.app_env``, the image's ENTRYPOINT after tini):

* ``serve [server.properties] [args...]`` checks the variables' names, then
  execs ``python -m broker serve`` with one ``--override key=value`` per mapped
  variable, placed before the caller's own arguments: precedence is file <
  environment < command-line overrides.
* ``healthcheck [server.properties]`` resolves ``metrics.listener`` from the
  file and the environment and GETs ``/healthz`` on it over loopback; exit 0
  when it answers 200 (the image's HEALTHCHECK).
* anything else is passed to ``python -m broker`` unchanged.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from broker.config import broker_key, parse_properties, suggest_key
from broker.errors import InvalidConfigError

DEFAULT_PREFIX = "BROKER_"

#: variables the broker reads as process switches (not Kafka configuration)
PROCESS_SWITCHES = frozenset(
    {
        "BROKER_NO_EXTENSIONS",  # broker.records.twins: force the pure-Python twins
        "BROKER_EVENT_LOOP",  # uvloop | asyncio
        "BROKER_LOG_LEVEL",  # broker.app: logging level (INFO)
        "BROKER_EXPECT_COMPILED",  # test guard: fail if the compiled twin did not load
        "BROKER_SPARK_CACHE",  # broker.spark.session: where the JVM's CDS archive is kept
        "BROKER_CLEANER_FAULT",  # broker.log.cleaner_faults: crash tests kill at a cleaning step
    }
)

# Kubernetes "service links" (docker-links style) for a Service named like the prefix
_SERVICE_LINK = re.compile(
    r"SERVICE_HOST|SERVICE_PORT(_\w+)?|PORT|PORT_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?"
)
_UNDERSCORES = re.compile(r"_+")
_RUN_TO_CHAR = {1: ".", 2: "_", 3: "-"}

HEALTH_TIMEOUT_S = 3.0


def key_from_env_name(name: str, prefix: str = DEFAULT_PREFIX) -> str:
    """``BROKER_LOG_DIRS`` -> ``log.dirs`` (see the module docstring)."""
    if not name.startswith(prefix) or len(name) == len(prefix):
        raise InvalidConfigError(f"Environment variable {name} does not name a key after {prefix}")
    rest = name[len(prefix) :]
    if rest.startswith("_") or rest.endswith("_"):
        raise InvalidConfigError(
            f"Environment variable {name}: a key cannot start or end with a separator"
        )

    def one_char(m: re.Match[str]) -> str:
        char = _RUN_TO_CHAR.get(len(m.group(0)))
        if char is None:
            raise InvalidConfigError(
                f"Environment variable {name}: {len(m.group(0))} underscores in a row"
                " (use _ for '.', __ for '_', ___ for '-')"
            )
        return char

    return _UNDERSCORES.sub(one_char, rest.lower())


def env_name_for_key(key: str, prefix: str = DEFAULT_PREFIX) -> str:
    """``num.partitions`` -> ``BROKER_NUM_PARTITIONS``: the inverse of :func:`key_from_env_name`."""
    return prefix + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def check_names(environ: Mapping[str, str], prefix: str = DEFAULT_PREFIX) -> None:
    """Every configuration variable in ``environ`` names a declared key;
    InvalidConfigError naming the variable (and the nearest one) otherwise."""
    for name in sorted(environ):
        if not is_configuration(name, prefix):
            continue
        key = key_from_env_name(name, prefix)
        if broker_key(key) is not None:
            continue
        close = suggest_key(key)
        if close is not None:
            hint = f"did you mean {env_name_for_key(close, prefix)} ({close})?"
        else:
            switch = difflib.get_close_matches(name, sorted(PROCESS_SWITCHES), n=1)
            hint = (
                f"did you mean the process switch {switch[0]}?"
                if switch
                else "unset it (docs/operations.md, Environment variables, lists how names map)"
            )
        raise InvalidConfigError(
            f"environment variable {name} sets {key}, which is not a configuration key: {hint}"
        )


def is_configuration(name: str, prefix: str = DEFAULT_PREFIX) -> bool:
    """Whether the variable ``name`` is broker configuration under ``prefix``."""
    if not name.startswith(prefix) or name in PROCESS_SWITCHES:
        return False
    return _SERVICE_LINK.fullmatch(name[len(prefix) :]) is None


def overrides_from_env(environ: Mapping[str, str], prefix: str = DEFAULT_PREFIX) -> dict[str, str]:
    """Kafka key -> value for every configuration variable in ``environ``.

    Sorted by variable name, so the result (and the command line built from
    it) does not depend on the order of the environment. Two variables that
    differ only in the case of the key part (``BROKER_LOG_DIRS``,
    ``BROKER_log_dirs``) name the same key: that is refused, not resolved
    by whichever comes last.
    """
    out: dict[str, str] = {}
    source: dict[str, str] = {}
    for name in sorted(environ):
        if not is_configuration(name, prefix):
            continue
        key = key_from_env_name(name, prefix)
        if key in source:
            raise InvalidConfigError(
                f"Environment variables {source[key]} and {name} both set {key}"
            )
        source[key] = name
        out[key] = environ[name]
    return out


def serve_argv(
    args: Sequence[str], environ: Mapping[str, str], prefix: str = DEFAULT_PREFIX
) -> list[str]:
    """Arguments for ``python -m broker``: ``serve`` gets the environment's overrides.

    They go after the properties file (the first argument when it is not an
    option) and before the remaining arguments, so an explicit
    ``--override`` on the command line still wins.
    """
    argv = list(args)
    if not argv or argv[0] != "serve":
        return argv
    head = ["serve"]
    rest = argv[1:]
    if rest and not rest[0].startswith("-"):
        head.append(rest.pop(0))
    env_flags: list[str] = []
    for key, value in overrides_from_env(environ, prefix).items():
        env_flags += ["--override", f"{key}={value}"]
    return head + env_flags + rest


def metrics_listener(properties: Path | None, environ: Mapping[str, str]) -> str:
    """The effective ``metrics.listener``: declared default < file < environment."""
    key = broker_key("metrics.listener")
    value = str(key.default) if key is not None else ""
    if properties is not None and properties.is_file():
        value = parse_properties(properties.read_text()).get("metrics.listener", value)
    return overrides_from_env(environ).get("metrics.listener", value)


def probe_url(listener: str, path: str = "/healthz") -> str:
    """``host:port`` of a listener -> a loopback-reachable URL (wildcards become loopback)."""
    host, sep, port = listener.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise InvalidConfigError(f"metrics.listener {listener!r} is not host:port")
    host = host.strip("[]")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}{path}"


def healthcheck(args: Sequence[str], environ: Mapping[str, str]) -> int:
    """GET /healthz on the metrics listener; 0 when it answers 200."""
    properties = Path(args[0]) if args else None
    try:
        listener = metrics_listener(properties, environ)
        if not listener.strip():
            print("healthcheck: metrics.listener is empty, nothing to probe", file=sys.stderr)
            return 1
        url = probe_url(listener)
    except InvalidConfigError as e:
        print(f"healthcheck: {e}", file=sys.stderr)
        return 1
    try:
        with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT_S) as response:
            status: int = response.status
    except urllib.error.HTTPError as e:
        status = e.code
    except (OSError, ValueError) as e:
        print(f"healthcheck: {url}: {e}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"healthcheck: {url}: HTTP {status}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["healthcheck"]:
        return healthcheck(args[1:], os.environ)
    try:
        if args[:1] == ["serve"]:
            check_names(os.environ)
        broker_args = serve_argv(args, os.environ)
    except InvalidConfigError as e:
        print(f"broker: configuration error: {e}", file=sys.stderr)
        return 2
    return exec_broker(broker_args)


def exec_broker(args: Sequence[str]) -> NoReturn:
    """Replace this process by ``python -m broker args...``.

    exec, not a child process: the broker keeps this PID, so the signals tini
    forwards (SIGTERM from ``podman stop``/the kubelet) reach it directly and
    its exit code is the container's.
    """
    os.execv(sys.executable, [sys.executable, "-m", "broker", *args])


if __name__ == "__main__":
    raise SystemExit(main())
