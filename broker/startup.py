"""What ``broker serve`` checks before it touches a log dir or a port; how a failed start is told.

:func:`check_configuration` applies every rule of a start that needs only the
configuration: the listeners and their protocols, ``advertised.listeners``,
``metrics.listener``, the cross-key checks (``queued.max.request.bytes``,
``max.connections.per.ip``), ``acks.all.sync.method`` against the log dirs'
file systems (looked at, never made), ``cluster.nodes``, the group
coordinator's and the log cleaner's keys, and each listener's TLS context (key
and trust stores read) and SASL settings. It returns the :class:`StartupPlan`
``broker serve`` starts from, and ``broker serve --check`` stops there: the
same functions either way, so a check cannot pass what a start refuses.
Nothing here binds a port, takes a log dir's lock, or creates or writes a file.

A failed start is one line on stderr (``broker: ...``, no traceback) that
names the key, value, port or file and what to do, with exit code 2 for the
configuration (:class:`broker.errors.InvalidConfigError`) and 1 for the
machine (a port in use, a log dir that cannot be written, a locked log dir):
:class:`StartupError`, worded by :func:`bind_failure` and
:func:`log_dir_failure`.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import platform
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.config import BrokerConfig, parse_host_counts
from broker.coordinator.group.config import GroupConfig
from broker.errors import InvalidConfigError
from broker.log.log_cleaner import CleanerConfig
from broker.log.syncfs import TRUSTED_FILE_SYSTEMS, file_system_type, trusted_file_system
from broker.log.syncfs import reports_errors as syncfs_reports_errors
from broker.metrics import BrokerMetrics
from broker.partition.cluster_layout import ClusterLayout
from broker.security.jaas import parse_jaas, plain_users
from broker.security.oauth import JwtValidator
from broker.security.principal_mapping import PrincipalMapper
from broker.security.sasl_mechanisms import (
    OAuthBearerExchange,
    PlainExchange,
    SaslExchange,
    ScramExchange,
)
from broker.security.scram_control import ScramControl
from broker.security.scram_store import ScramStore
from broker.security.tls import (
    ReloadingContext,
    TlsSettings,
    listener_key_name,
    listener_value,
)
from broker.security_config import SASL_MECHANISMS, parse_protocol_map
from broker.server.listener import ListenerSpec, parse_advertised, parse_listeners
from broker.server.listener_security import ListenerSecurity
from broker.server.sasl_gate import SaslListener
from broker.server.tls_handshakes import HandshakeWatch

log = logging.getLogger("broker")

OAUTH_VALIDATOR_CLASS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
)

#: queued.max.request.bytes when set to -1 or 0 (Kafka: no bound)
DEFAULT_QUEUED_MAX_REQUEST_BYTES = 512 * 1024 * 1024


class StartupError(Exception):
    """A start that cannot go on for a reason outside the configuration's keys
    (a port in use, a log dir that cannot be written): one line, ``exit_code`` 1."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def event_loop_name() -> str:
    name = os.environ.get("BROKER_EVENT_LOOP", "uvloop").strip().lower() or "uvloop"
    if name not in ("uvloop", "asyncio"):
        raise InvalidConfigError(f"BROKER_EVENT_LOOP must be uvloop or asyncio, not {name!r}")
    return name


def metrics_address(cfg: BrokerConfig) -> tuple[str, int] | None:
    """``metrics.listener`` as (host, port); None when it is empty (the endpoint off)."""
    value = str(cfg.get("metrics.listener") or "")
    if not value:
        return None
    host, _, port = value.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration metrics.listener: expected host:port"
            " (e.g. 0.0.0.0:9404, port 0-65535), or empty to turn the endpoint off"
        )
    return host or "0.0.0.0", number


@dataclass
class StartupPlan:
    """A configuration :func:`check_configuration` accepted, with what it built."""

    listeners: list[ListenerSpec]
    #: advertised.listeners by listener name
    advertised: dict[str, ListenerSpec]
    #: metrics.listener as (host, port), None when off
    metrics_address: tuple[str, int] | None
    receive_budget: int
    per_ip_overrides: dict[str, int]
    sync_method: str
    layout: ClusterLayout | None
    group_config: GroupConfig
    handshake_s: float
    #: the SCRAM credentials the SASL listeners look users up in (loaded at start)
    scram_control: ScramControl
    #: each listener's TLS context, principal mapping and SASL settings, by name
    security: dict[str, ListenerSecurity]
    log_dirs: list[Path]

    def summary(self) -> str:
        """``configuration OK: listeners ..., log.dirs ...`` (``broker serve --check``)."""
        listeners = ", ".join(
            f"{s.name}://{s.host}:{s.port} ({self._describe(s)})" for s in self.listeners
        )
        address = self.metrics_address
        metrics = "off" if address is None else f"{address[0]}:{address[1]}"
        return (
            f"configuration OK: listeners {listeners}; metrics.listener {metrics};"
            f" log.dirs {','.join(str(d) for d in self.log_dirs)}"
        )

    def _describe(self, spec: ListenerSpec) -> str:
        security = self.security[spec.name]
        parts = [spec.protocol]
        if security.tls is not None:
            parts.append(f"client certificates {security.tls.settings.client_auth}")
        if security.sasl is not None:
            parts.append(" ".join(security.sasl.mechanisms))
        return ", ".join(parts)


def check_configuration(cfg: BrokerConfig, metrics: BrokerMetrics) -> StartupPlan:
    """Every start-up rule that needs only ``cfg`` (see the module docstring);
    InvalidConfigError naming the key on the first one broken."""
    protocol_map = parse_protocol_map(
        "listener.security.protocol.map", cfg.get("listener.security.protocol.map")
    )
    listeners = parse_listeners(cfg.get("listeners"), protocol_map=protocol_map)
    advertised = parse_advertised(cfg.get("advertised.listeners"), listeners, protocol_map)
    event_loop_name()
    address = metrics_address(cfg)
    budget = receive_budget_bytes(cfg)
    overrides = connection_overrides(cfg)
    log_dirs = [d.absolute() for d in cfg.log_dirs]
    method = sync_method(cfg, log_dirs)
    layout = ClusterLayout.parse(cfg.get("cluster.nodes"), cfg.node_id)
    group_config = GroupConfig.from_broker(cfg)
    CleanerConfig.from_broker(cfg)
    handshake_s = handshake_timeout_s(cfg)
    # filled from the first log dir at start; the SASL listeners keep this object
    scram_control = ScramControl(ScramStore(log_dirs[0]))
    security = {
        spec.name: listener_security(
            cfg, spec, metrics, handshake_s, time.monotonic, scram_control=scram_control
        )
        for spec in listeners
    }
    return StartupPlan(
        listeners=listeners,
        advertised=advertised,
        metrics_address=address,
        receive_budget=budget,
        per_ip_overrides=overrides,
        sync_method=method,
        layout=layout,
        group_config=group_config,
        handshake_s=handshake_s,
        scram_control=scram_control,
        security=security,
        log_dirs=log_dirs,
    )


def bind_failure(what: str, host: str, port: int, exc: OSError, key: str) -> StartupError:
    """``listener PLAINTEXT (127.0.0.1:9092): port 9092 is already in use ...``: why
    ``host:port`` (of ``what``, set by ``key``) cannot be listened on, and what to do."""
    where = f"{what} ({host or '0.0.0.0'}:{port})"
    if isinstance(exc, socket.gaierror):
        reason = f"host {host!r} does not resolve; set {key} to a name or address of this machine"
    elif exc.errno == errno.EADDRINUSE:
        reason = (
            f"port {port} is already in use (another broker running?); stop it or set {key}"
            " to a free port"
        )
    elif exc.errno == errno.EACCES:
        reason = (
            f"not permitted to listen on port {port} (below 1024 needs privileges); set {key}"
            " to a port above 1023"
        )
    elif exc.errno == errno.EADDRNOTAVAIL:
        reason = (
            f"{host} is not an address of this machine; set {key} to a local address"
            " (or 0.0.0.0 for every interface)"
        )
    else:
        reason = f"cannot listen: {exc.strerror or exc}; check {key}"
    return StartupError(f"{where}: {reason}")


def log_dir_failure(exc: OSError, log_dirs: Sequence[Path]) -> StartupError:
    """A log dir that cannot be made, read or written, named with what to do."""
    path = exc.filename if exc.filename is not None else ", ".join(map(str, log_dirs))
    reason = exc.strerror or str(exc)
    if os.geteuid() != 0 and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason += f" (the broker runs as uid {os.geteuid()})"
    return StartupError(
        f"log.dirs: cannot use {path}: {reason}; set log.dirs to directories the broker"
        " may create and write"
    )


def handshake_timeout_s(cfg: BrokerConfig) -> float:
    """How long a TLS handshake may take: connection.frame.timeout.ms (a handshake
    is the frames before the first one), asyncio's 60 s when that is off."""
    frame_ms = int(cfg.get("connection.frame.timeout.ms"))
    return frame_ms / 1000 if frame_ms > 0 else 60.0


def listener_security(
    cfg: BrokerConfig,
    spec: ListenerSpec,
    metrics: BrokerMetrics,
    handshake_s: float,
    clock: Callable[[], float],
    *,
    scram_control: ScramControl,
) -> ListenerSecurity:
    """The listener's TLS context, principal mapping and SASL settings, checked now
    (an InvalidConfigError names the key)."""
    sasl = sasl_listener(cfg, spec, metrics, scram_control) if spec.sasl else None
    if not spec.tls:
        return ListenerSecurity(spec, metrics, sasl=sasl)
    watch = HandshakeWatch(spec.name, metrics, handshake_s, clock)
    tls = ReloadingContext(
        TlsSettings.from_config(cfg, spec.name, spec.protocol), watch.sslobject_class()
    )
    mapper = PrincipalMapper(listener_value(cfg, spec.name, "ssl.principal.mapping.rules"))
    return ListenerSecurity(spec, metrics, tls=tls, watch=watch, mapper=mapper, sasl=sasl)


def sync_method(cfg: BrokerConfig, log_dirs: Sequence[Path]) -> str:
    """``acks.all.sync.method``, refused at start where syncfs would not make
    acknowledged records durable or would hide errors (``broker/log/syncfs.py``)."""
    method = str(cfg.get("acks.all.sync.method"))
    if method != "syncfs":
        return method
    key = "Invalid value syncfs for configuration acks.all.sync.method"
    if not syncfs_reports_errors():
        raise InvalidConfigError(
            f"{key}: this system ({platform.system()} {platform.release()}) does not report"
            " write-back errors from syncfs (Linux 5.8 and later do); use fsync"
        )
    for directory in log_dirs:
        # a log dir not made yet will be made on the file system of its first existing parent
        existing = next(p for p in (directory, *directory.absolute().parents) if p.exists())
        if trusted_file_system(existing) is None:
            raise InvalidConfigError(
                f"{key}: log dir {directory} is on a file system whose syncfs this broker does"
                f" not trust (statfs type {file_system_type(existing):#x}; trusted:"
                f" {', '.join(sorted(TRUSTED_FILE_SYSTEMS.values()))}); use fsync"
            )
    return method


def sasl_listener(
    cfg: BrokerConfig, spec: ListenerSpec, metrics: BrokerMetrics, scram_control: ScramControl
) -> SaslListener:
    """The SASL settings of a SASL_PLAINTEXT / SASL_SSL listener, checked now."""
    name = spec.name
    key = listener_key_name(cfg, name, "sasl.enabled.mechanisms")
    mechanisms = tuple(
        m.strip().upper() for m in listener_value(cfg, name, "sasl.enabled.mechanisms")
    )
    unsupported = [m for m in mechanisms if m not in SASL_MECHANISMS]
    if unsupported or not mechanisms:
        raise InvalidConfigError(
            f"Invalid value {','.join(mechanisms)} for configuration {key}: listener {name} is"
            f" {spec.protocol} and this broker supports {', '.join(SASL_MECHANISMS)}"
            + (f" (not {', '.join(unsupported)})" if unsupported else "")
        )
    exchanges: dict[str, Callable[[], SaslExchange]] = {}
    reauth: dict[str, int] = {}
    for mechanism in mechanisms:
        reauth[mechanism] = int(mechanism_value(cfg, name, mechanism, "connections.max.reauth.ms"))
        ignored = ignored_settings(cfg, name, mechanism)
        if ignored:
            log.warning(
                "listener %s, %s: %s not read (Kafka reads a broker's JAAS line and callback"
                " handler only as listener.name.%s.%s.<key>)",
                name,
                mechanism,
                ", ".join(ignored),
                name.lower(),
                mechanism.lower(),
            )
        if mechanism == "PLAIN":
            jaas_key, jaas = mechanism_setting(cfg, name, mechanism, "sasl.jaas.config")
            if not jaas:
                unread = [k for k in ignored if k.endswith("sasl.jaas.config")]
                raise InvalidConfigError(
                    f"listener {name} enables PLAIN but names no users: set {jaas_key} to"
                    " org.apache.kafka.common.security.plain.PlainLoginModule required"
                    ' user_<name>="<password>" ...;'
                    + (
                        f" ({' and '.join(unread)} is not read by a broker: Kafka takes a"
                        " listener's JAAS line only with the listener and mechanism prefix)"
                        if unread
                        else ""
                    )
                )
            users = plain_users(parse_jaas(jaas, jaas_key), jaas_key)
            if not users:
                raise InvalidConfigError(
                    f"Invalid value for configuration {jaas_key}: no user_<name> option"
                )
            exchanges[mechanism] = functools.partial(PlainExchange, users)
        elif mechanism == "OAUTHBEARER":
            handler_key, handler = mechanism_setting(
                cfg, name, mechanism, "sasl.server.callback.handler.class"
            )
            if handler and handler != OAUTH_VALIDATOR_CLASS:
                raise InvalidConfigError(
                    f"Invalid value {handler} for configuration {handler_key}: this broker"
                    f" validates signed JWTs ({OAUTH_VALIDATOR_CLASS}) only"
                )
            url = listener_value(cfg, name, "sasl.oauthbearer.jwks.endpoint.url")
            if not url:
                raise InvalidConfigError(
                    f"listener {name} enables OAUTHBEARER: set sasl.oauthbearer.jwks.endpoint.url"
                    " (a file: URL of the JWKS that signs the tokens); unsigned tokens are"
                    " never accepted"
                )
            validator = JwtValidator(
                url,
                issuer=listener_value(cfg, name, "sasl.oauthbearer.expected.issuer") or None,
                audience=tuple(listener_value(cfg, name, "sasl.oauthbearer.expected.audience")),
                clock_skew_s=int(listener_value(cfg, name, "sasl.oauthbearer.clock.skew.seconds")),
                scope_claim=str(listener_value(cfg, name, "sasl.oauthbearer.scope.claim.name")),
                sub_claim=str(listener_value(cfg, name, "sasl.oauthbearer.sub.claim.name")),
            )
            exchanges[mechanism] = functools.partial(OAuthBearerExchange, validator)
        else:
            exchanges[mechanism] = functools.partial(ScramExchange, mechanism, scram_control.lookup)
    return SaslListener(
        listener=name,
        mechanisms=mechanisms,
        exchanges=exchanges,
        reauth_ms=reauth,
        max_receive=int(listener_value(cfg, name, "sasl.server.max.receive.size")),
        failed_delay_s=int(cfg.get("connection.failed.authentication.delay.ms")) / 1000,
        recorder=metrics,
        tls=spec.tls,
    )


#: keys Kafka's broker reads only as ``listener.name.<l>.<mechanism>.<key>``, never from
#: the listener's or the broker-wide key: ``JaasContext.loadServerContext`` takes
#: ``<mechanism>.sasl.jaas.config`` from the listener's configs ("Server config
#: sasl.jaas.config should be prefixed with SASL mechanism name, ignoring config") and
#: ``SaslChannelBuilder.createServerCallbackHandlers`` ``<mechanism>.sasl.server.callback
#: .handler.class``; ``ChannelBuilders.channelBuilderConfigs`` drops an unprefixed
#: ``<mechanism>.<key>``. ``connections.max.reauth.ms`` falls back
#: (``createConnectionsMaxReauthMsMap``: the mechanism's, else the listener's or broker's)
MECHANISM_ONLY = frozenset({"sasl.jaas.config", "sasl.server.callback.handler.class"})


def mechanism_setting(
    cfg: BrokerConfig, listener: str, mechanism: str, key: str
) -> tuple[str, str | None]:
    """(key name, value) of listener.name.<l>.<mechanism>.<key>, then (except for
    :data:`MECHANISM_ONLY` keys) listener.name.<l>.<key>, then <key>."""
    names = _mechanism_forms(listener, mechanism, key)
    if key in MECHANISM_ONLY:
        return names[0], cfg.get(names[0]) if cfg.is_set(names[0]) else None
    for name in names:
        if cfg.is_set(name):
            return name, cfg.get(name)
    return key, cfg.get(key)


def _mechanism_forms(listener: str, mechanism: str, key: str) -> tuple[str, str, str]:
    prefix = f"listener.name.{listener.lower()}."
    return f"{prefix}{mechanism.lower()}.{key}", f"{prefix}{key}", key


def ignored_settings(cfg: BrokerConfig, listener: str, mechanism: str) -> list[str]:
    """The :data:`MECHANISM_ONLY` keys set for ``listener`` in a form Kafka ignores."""
    out = []
    for key in sorted(MECHANISM_ONLY):
        full, *others = _mechanism_forms(listener, mechanism, key)
        if not cfg.is_set(full):
            out += [name for name in others if cfg.is_set(name)]
    return out


def mechanism_value(cfg: BrokerConfig, listener: str, mechanism: str, key: str) -> Any:
    return mechanism_setting(cfg, listener, mechanism, key)[1]


def receive_budget_bytes(cfg: BrokerConfig) -> int:
    """``queued.max.request.bytes`` (-1 or 0: 512 MiB), at least one whole request as
    Kafka requires (``KafkaConfig``: "must be larger or equal to socket.request.max.bytes")."""
    queued = int(cfg.get("queued.max.request.bytes"))
    if queued <= 0:
        return DEFAULT_QUEUED_MAX_REQUEST_BYTES
    if queued < int(cfg.get("socket.request.max.bytes")):
        raise InvalidConfigError(
            "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"
        )
    return queued


def connection_overrides(cfg: BrokerConfig) -> dict[str, int]:
    """``max.connections.per.ip.overrides``, checked against ``max.connections.per.ip``
    as ``KafkaConfig.validateValues`` does."""
    overrides = parse_host_counts(
        "max.connections.per.ip.overrides", str(cfg.get("max.connections.per.ip.overrides"))
    )
    if int(cfg.get("max.connections.per.ip")) == 0 and not overrides:
        raise InvalidConfigError(
            "max.connections.per.ip can be set to zero only if"
            " max.connections.per.ip.overrides property is set."
        )
    return overrides
