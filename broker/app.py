"""``broker serve``: configuration -> logs -> partitions -> handlers -> server -> metrics endpoint.

Start-up, in order: parse ``server.properties`` and ``--override`` flags
(unknown or malformed keys stop the start with a message naming the key);
take the log dirs' locks and load (and if needed recover) every partition;
load the ACLs when an authorizer is configured (an unreadable ACL file stops
the start); bind the Kafka listener and the metrics endpoint; mark ready.

Shutdown on SIGTERM or SIGINT: not ready; stop accepting; stop reading
from every connection and let the requests already read finish (up to
``shutdown.timeout.ms``); close connections; flush
and close every log, write the checkpoints and the clean-shutdown marker;
release the locks. Exit code 0.

The log cleaner's threads (``log.cleaner.enable``, ``log.cleaner.threads``)
start once the logs are loaded; whatever they must do on the logs' owner
thread (choose a log, swap cleaned segments in) they hand to the event loop
(:meth:`BrokerApp._owner_call`). They stop first at shutdown, joined from a
worker thread while the loop still serves them.

Background ticks on the event loop: retention (``log.retention.check.interval.ms``),
flushes due to ``flush.ms`` or to a roll (every second, in a worker thread),
recovery-point and log-start-offset checkpoints, expired ``.deleted`` files,
expired producer ids, and the connection sweep (``server/registry.py``: idle
connections, slow frames, buffers of quiet connections).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import functools
import gc
import logging
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from broker import __version__
from broker.config import BrokerConfig, parse_overrides, parse_properties
from broker.errors import InvalidConfigError, KafkaStorageError
from broker.handlers.context import Endpoint
from broker.log.errors import ThreadShutdownError
from broker.metrics import (
    BrokerMetrics,
    ConnectionSample,
    GroupSample,
    LogSample,
)
from broker.partition.partition import OffloadResult
from broker.records import scan
from broker.security.acl_store import AclStoreError
from broker.security.scram_store import ScramStoreError
from broker.server import quotas as connection_quotas
from broker.server.budget import ReceiveBudget
from broker.server.connection import Connection, ConnectionLimits
from broker.server.dispatch import Dispatcher
from broker.server.file_region import write_file_region
from broker.server.http import OpsEndpoint
from broker.server.listener import ListenerSpec, advertised_host, start_listener
from broker.server.listener_security import ListenerSecurity
from broker.server.registry import (
    EXPIRY_REASONS,
    ConnectionRecorder,
    ConnectionRegistry,
    ListenerRecorder,
    TimeLimits,
)
from broker.startup import (
    StartupError,
    StartupPlan,
    bind_failure,
    check_configuration,
    event_loop_name,
    log_dir_failure,
)
from broker.wiring import BrokerCore, build_core, open_log_manager, request_meters

log = logging.getLogger("broker")

T = TypeVar("T")

PRODUCER_EXPIRATION_CHECK_MS = 600_000
FLUSH_TICK_S = 1.0
DELETE_TICK_S = 5.0


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


#: nice value of the offload threads (Linux schedules threads, so it is theirs alone)
OFFLOAD_NICE = 10


def _lower_thread_priority() -> None:
    """Run this (worker) thread at a lower CPU priority than the event loop:
    a costly validation must not delay the loop when both want the same
    core; the scheduler then preempts the worker as soon as the loop wakes."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), OFFLOAD_NICE)
    except OSError as exc:  # not permitted in some sandboxes: run at normal priority
        log.warning("cannot lower the priority of offload thread: %s", exc)


class BrokerApp:
    """The running broker; :meth:`start` then :meth:`serve_forever`."""

    def __init__(
        self,
        config: BrokerConfig,
        plan: StartupPlan | None = None,
        metrics: BrokerMetrics | None = None,
    ) -> None:
        """``plan``: what :func:`broker.startup.check_configuration` made of ``config``
        with ``metrics`` (checked here when not given)."""
        self.config = config
        self.metrics = metrics if metrics is not None else new_metrics()
        self.plan = plan if plan is not None else check_configuration(config, self.metrics)
        self.listeners = self.plan.listeners
        self.advertised_specs = self.plan.advertised
        #: what the request path records into (no-ops with metrics.enabled=false)
        self.meters = request_meters(config, self.metrics)
        try:
            self.log_manager = open_log_manager(config, meters=self.meters, metrics=self.metrics)
        except OSError as exc:
            raise log_dir_failure(exc, self.plan.log_dirs) from None
        self._logs_loaded = False
        self.ops = OpsEndpoint(self.metrics.render)
        self.registry: ConnectionRegistry | None = None
        #: the bound port of each listener, by name; bound_port is the first listener's
        self.bound_ports: dict[str, int] = {}
        self.bound_port = 0
        self.metrics_port = 0
        self._servers: list[asyncio.AbstractServer] = []
        #: each listener's security (TLS context, principal mapping, SASL), by name
        self.security: dict[str, ListenerSecurity] = self.plan.security
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self._offload_pool: concurrent.futures.ThreadPoolExecutor | None = None
        #: the request path (broker/wiring.py), built once the logs are loaded
        self.core: BrokerCore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: what ``broker serve`` exits with once stopped: 1 when every log dir failed
        self.exit_code = 0
        self.log_manager.on_all_dirs_offline = self._all_dirs_offline

    # ---- start ----------------------------------------------------------------------------

    async def start(self) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        self._loop = loop
        plan = self.plan
        budget = ReceiveBudget(plan.receive_budget)
        try:
            await loop.run_in_executor(None, self.log_manager.startup)
        except OSError as exc:
            raise log_dir_failure(exc, plan.log_dirs) from None
        self._logs_loaded = True
        self.metrics.log_provider = self._log_samples
        self.metrics.offline_dirs_provider = lambda: len(self.log_manager.offline_log_dirs)
        cleaner = self.log_manager.cleaner
        if cleaner is not None:
            self.metrics.cleaner_provider = cleaner.snapshot
            self.log_manager.start_cleaner(self._owner_call)
        # produce validations too costly for the event loop (broker/partition/partition.py)
        self._offload_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=int(cfg.get("produce.offload.threads")),
            thread_name_prefix="validate",
            initializer=_lower_thread_priority,
        )
        pool = self._offload_pool

        def offload(fn: Callable[[], OffloadResult]) -> Awaitable[OffloadResult]:
            return loop.run_in_executor(pool, fn)

        self.core = core = build_core(
            cfg, plan, self.log_manager, meters=self.meters, time_ms=wall_ms, offload=offload
        )
        if core.acl_control is not None:
            authorizer = core.acl_control.authorizer
            self.metrics.acls.set_function(lambda: authorizer.acl_count)

        if plan.metrics_address is not None:
            mhost, mport = plan.metrics_address
            try:
                self.metrics_port = await self.ops.start(mhost, mport)
            except OSError as exc:
                raise bind_failure(
                    "metrics.listener", mhost, mport, exc, "metrics.listener"
                ) from None

        limits = ConnectionLimits(
            max_frame_bytes=int(cfg.get("socket.request.max.bytes")),
            max_inflight_bytes=int(cfg.get("connection.max.inflight.bytes")),
        )
        registry = self.registry = await connection_registry(
            cfg,
            plan.per_ip_overrides,
            self.meters.connection_meters(connection_quotas.REASONS, EXPIRY_REASONS),
            self.metrics,
        )
        self.metrics.connection_provider = lambda: ConnectionSample(budget.used, registry.paused())

        if core.groups is not None:
            # loads an existing __consumer_offsets in the background
            core.groups.startup()
            self.metrics.group_provider = self._group_sample
        if core.transactions is not None:
            # loads an existing __transaction_state in the background, expires idle ids
            core.transactions.startup()
        # the advertised address needs the bound port when listeners asks for port 0
        broker, dispatcher = core.context, core.dispatcher

        handshake_s = plan.handshake_s
        for spec in self.listeners:
            security = self.security[spec.name]
            if security.watch is not None:
                registry.extra_sweeps.append(security.watch.sweep)
            try:
                server, port = await start_listener(
                    spec,
                    self._connection_factory(spec, dispatcher, limits, budget, registry),
                    send_buffer=int(cfg.get("socket.send.buffer.bytes")),
                    receive_buffer=int(cfg.get("socket.receive.buffer.bytes")),
                    ssl_context=None if security.tls is None else security.tls.listening,
                    ssl_handshake_timeout=handshake_s if security.tls is not None else None,
                )
            except OSError as exc:
                raise bind_failure(
                    f"listener {spec.name}", spec.host, spec.port, exc, "listeners"
                ) from None
            self._servers.append(server)
            self.bound_ports[spec.name] = port
        self.bound_port = self.bound_ports[self.listeners[0].name]
        broker.advertised_listeners = self._advertised_endpoints()
        broker.advertised = broker.advertised_listeners[self.listeners[0].name]

        registry.start()
        self._schedule(self._retention_tick, int(cfg.get("log.retention.check.interval.ms")) / 1000)
        self._schedule(self._flush_tick, FLUSH_TICK_S)
        self._schedule(
            self._recovery_checkpoint_tick,
            int(cfg.get("log.flush.offset.checkpoint.interval.ms")) / 1000,
        )
        self._schedule(
            self._start_offset_checkpoint_tick,
            int(cfg.get("log.flush.start.offset.checkpoint.interval.ms")) / 1000,
        )
        self._schedule(self._delete_tick, DELETE_TICK_S)
        self._schedule(self._producer_expiration_tick, PRODUCER_EXPIRATION_CHECK_MS / 1000)
        reload_ms = int(cfg.get("ssl.reload.interval.ms"))
        if reload_ms > 0 and any(sec.tls is not None for sec in self.security.values()):
            self._schedule(self._tls_reload_tick, reload_ms / 1000)
        self.ops.ready = True
        log.info(
            "broker %s started: node %d, Kafka listeners %s, metrics %s, "
            "records implementation %s, event loop %s, %d partitions in %s",
            __version__,
            broker.node_id,
            ", ".join(
                f"{spec.name} ({spec.protocol}) {spec.host or '0.0.0.0'}:"
                f"{self.bound_ports[spec.name]} advertised as {ep.host}:{ep.port}"
                for spec in self.listeners
                for ep in (broker.advertised_listeners[spec.name],)
            ),
            (
                f"http://{plan.metrics_address[0] or '0.0.0.0'}:{self.metrics_port}/metrics"
                if plan.metrics_address is not None
                else "off"
            ),
            scan.IMPLEMENTATION,
            event_loop_name(),
            len(self.log_manager.all_logs()),
            ",".join(str(d) for d in self.log_manager.log_dirs),
        )

    def _connection_factory(
        self,
        spec: ListenerSpec,
        dispatcher: Dispatcher,
        limits: ConnectionLimits,
        budget: ReceiveBudget,
        registry: ConnectionRegistry,
    ) -> Callable[[], Connection]:
        name = spec.name
        security = self.security[name]

        def factory() -> Connection:
            conn = Connection(
                dispatcher, limits, budget, write_segment=write_file_region, owner=registry
            )
            conn.listener_name = name
            conn.security = security
            return conn

        return factory

    def _advertised_endpoints(self) -> dict[str, Endpoint]:
        """What Metadata tells a client of each listener (Kafka: the listener it came in on)."""
        out = {}
        for spec in self.listeners:
            bound = self.bound_ports[spec.name]
            adv = self.advertised_specs.get(spec.name)
            if adv is not None:
                out[spec.name] = Endpoint(advertised_host(adv.host), adv.port or bound)
            else:
                out[spec.name] = Endpoint(advertised_host(spec.host), bound)
        return out

    def _owner_call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the event loop (the logs' owner) and return its result;
        called from a cleaner thread. ThreadShutdownError once the loop is gone."""
        loop = self._loop
        assert loop is not None
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:  # the loop is closed
            raise ThreadShutdownError("the event loop is gone") from None
        while True:
            try:
                return future.result(timeout=1.0)
            except concurrent.futures.TimeoutError:
                if loop.is_closed():
                    future.cancel()
                    raise ThreadShutdownError("the event loop is gone") from None

    def _log_samples(self) -> list[LogSample]:
        return [LogSample(*s) for s in self.log_manager.log_stats()]

    @property
    def connections(self) -> list[Connection]:
        return self.registry.connections if self.registry is not None else []

    def _group_sample(self) -> GroupSample:
        core = self.core
        assert core is not None and core.groups is not None
        groups, rm = core.groups, core.replica_manager
        lags = []
        for group, topic, partition, committed in sorted(groups.committed_offsets()):
            p = rm.get_partition(topic, partition)
            if p is not None:
                lags.append((group, topic, partition, max(p.log.high_watermark - committed, 0)))
        meters = groups.meters
        return GroupSample(
            groups_by_state=groups.groups_by_state(),
            members=groups.num_members(),
            rebalances=groups.rebalances(),
            rebalance_seconds=meters.rebalance_ms_total / 1000,
            offset_commits=groups.offset_commits(),
            offsets_expired=sum(s.offsets.expired for s in groups.shards.values()),
            lags=lags,
        )

    # ---- background ticks -------------------------------------------------------------------

    def _schedule(self, tick: Callable[[], Awaitable[None]], interval_s: float) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    await tick()
                except Exception:
                    log.exception("background task %s failed", tick.__name__)

        self._tasks.append(asyncio.create_task(loop(), name=tick.__name__))

    async def _retention_tick(self) -> None:
        deleted = self.log_manager.cleanup_logs()
        if deleted:
            log.info("retention deleted %d segments", deleted)

    async def _flush_tick(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.log_manager.flush_dirty_logs)

    async def _recovery_checkpoint_tick(self) -> None:
        await asyncio.get_running_loop().run_in_executor(
            None, self.log_manager.checkpoint_recovery_offsets
        )

    async def _start_offset_checkpoint_tick(self) -> None:
        await asyncio.get_running_loop().run_in_executor(
            None, self.log_manager.checkpoint_log_start_offsets
        )

    async def _delete_tick(self) -> None:
        await asyncio.get_running_loop().run_in_executor(
            None, self.log_manager.delete_expired_files
        )

    async def _producer_expiration_tick(self) -> None:
        self.log_manager.remove_expired_producers()

    async def _tls_reload_tick(self) -> None:
        self.reload_tls(only_changed=True)

    def reload_tls(self, *, only_changed: bool = False) -> int:
        """Rebuild the TLS contexts whose files changed (every one on SIGHUP): new
        connections get them, open ones keep theirs. A broken file keeps the old
        context and is logged. Returns how many were replaced."""
        replaced = 0
        for name, security in self.security.items():
            tls = security.tls
            if tls is None or (only_changed and not tls.changed()):
                continue
            if tls.reload(functools.partial(_log_reload_error, name)):
                replaced += 1
                self.metrics.tls_reloads.labels(name, "success").inc()
                log.info("listener %s: TLS key and trust stores reloaded", name)
            else:
                self.metrics.tls_reloads.labels(name, "failure").inc()
        return replaced

    # ---- run and stop ---------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stopping.set()

    def _all_dirs_offline(self) -> None:
        """Every log dir failed (any thread): stop, exit code 1. Kafka halts at
        once (``LogManager.handleLogDirFailure``); here the connections are
        closed and the other state shut down first, the logs' dirs left alone."""
        self.exit_code = 1
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.request_stop)  # safe from the loop's thread too

    async def serve_forever(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        loop.add_signal_handler(signal.SIGHUP, self.reload_tls)
        await self._stopping.wait()
        log.info("shutting down")
        await self.shutdown()

    async def abort_start(self) -> None:
        """Undo a :meth:`start` that failed part way: close what it bound, stop the
        cleaner and the workers, close the logs it loaded (their locks released)."""
        for server in self._servers:
            server.close()
        await self.ops.stop()
        loop = asyncio.get_running_loop()
        core = self.core
        if core is not None:
            core.group_commit.close()
            if core.acl_control is not None:
                await loop.run_in_executor(None, core.acl_control.close)
        if self._offload_pool is not None:
            self._offload_pool.shutdown(wait=True)
        await loop.run_in_executor(None, self.log_manager.stop_cleaner)
        if self._logs_loaded:
            await loop.run_in_executor(None, self.log_manager.shutdown)

    async def shutdown(self) -> None:
        self.ops.ready = False
        for server in self._servers:
            server.close()
        # stop reading everywhere; each connection closes once the responses of
        # the requests it already took are written
        for conn in list(self.connections):
            conn.close()
        core = self.core
        if core is not None and core.groups is not None:
            # parked joins and syncs are answered now (NOT_COORDINATOR), so the connections
            # holding them can close; commits waiting for their fsync end
            await core.groups.shutdown()
        if core is not None and core.transactions is not None:
            # InitProducerId writes waiting for their fsync end
            await core.transactions.shutdown()
        deadline = time.monotonic() + int(self.config.get("shutdown.timeout.ms")) / 1000
        while self.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections):
            log.warning("closing connection from %s with requests in flight", conn.peer)
            conn.abort()
        if self.registry is not None:
            await self.registry.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if core is not None:
            # appends queued on worker threads finish (or fail) before the logs close
            await core.replica_manager.wait_queued_appends()
            core.group_commit.close()
            if core.acl_control is not None:
                # an ACL change being written finishes first
                await asyncio.get_running_loop().run_in_executor(None, core.acl_control.close)
        if self._offload_pool is not None:
            self._offload_pool.shutdown(wait=True)
        loop = asyncio.get_running_loop()
        # joined from a worker thread: a cleaner thread may be waiting for the loop
        await loop.run_in_executor(None, self.log_manager.stop_cleaner)
        await loop.run_in_executor(None, self.log_manager.shutdown)
        await self.ops.stop()
        offline = self.log_manager.offline_log_dirs
        if offline:
            log.error(
                "shut down with %d of %d log dirs offline: %s",
                len(offline),
                len(self.log_manager.log_dirs),
                ", ".join(str(d) for d in offline),
            )
        else:
            log.info("shut down cleanly")


def _log_reload_error(listener: str, message: str) -> None:
    log.error("listener %s keeps its TLS context: %s", listener, message)


async def connection_registry(
    cfg: BrokerConfig,
    overrides: dict[str, int],
    recorder: ConnectionRecorder,
    listener_recorder: ListenerRecorder | None = None,
) -> ConnectionRegistry:
    """The connection quotas and time limits of ``cfg``: override hostnames are
    resolved now, and ``max.connections`` is capped by the descriptors left
    once the logs are open (:func:`broker.server.quotas.descriptor_cap`)."""
    resolved = await asyncio.get_running_loop().run_in_executor(
        None, connection_quotas.resolve_overrides, overrides
    )
    max_connections = int(cfg.get("max.connections"))
    cap = connection_quotas.descriptor_cap()
    if cap < max_connections:
        log.info(
            "at most %d connections at once: the file descriptor limit (ulimit -n %d) less"
            " what the logs hold and a reserve (max.connections is %d)",
            cap,
            resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            max_connections,
        )
        max_connections = cap
    quotas = connection_quotas.ConnectionQuotas(
        max_connections, int(cfg.get("max.connections.per.ip")), resolved
    )
    limits = TimeLimits(
        idle_ms=int(cfg.get("connections.max.idle.ms")),
        frame_ms=int(cfg.get("connection.frame.timeout.ms")),
    )
    return ConnectionRegistry(quotas, limits, recorder, listener_recorder)


# ---- the `serve` command ------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "properties",
        nargs="?",
        type=Path,
        help="server.properties file (Kafka key names); defaults apply without it",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a configuration key (repeatable); wins over the properties file",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="check the configuration (keys, listeners, TLS stores, SASL settings) and exit:"
        " 0 when a start would accept it, 2 with the reason; binds nothing, touches no log dir",
    )


def read_properties(path: Path) -> dict[str, str]:
    """The keys of a ``server.properties`` file; InvalidConfigError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidConfigError(
            f"cannot read the properties file {path}: {exc.strerror or exc}; give the path of"
            " a readable server.properties"
        ) from None
    except UnicodeDecodeError as exc:
        raise InvalidConfigError(
            f"the properties file {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x}"
            f" at offset {exc.start}); save it as UTF-8"
        ) from None
    return parse_properties(text)


def build_config(args: argparse.Namespace) -> BrokerConfig:
    props: dict[str, str] = {}
    if args.properties is not None:
        props.update(read_properties(args.properties))
    props.update(parse_overrides(args.override))
    return BrokerConfig.from_properties(props)


def new_metrics() -> BrokerMetrics:
    return BrokerMetrics(
        records_implementation=scan.IMPLEMENTATION,
        event_loop=event_loop_name(),
        version=__version__,
    )


def _fail(message: str) -> None:
    """A failed start: one line on stderr, no traceback (broker/startup.py)."""
    print(f"broker: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=os.environ.get("BROKER_LOG_LEVEL", "INFO").upper(),
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = build_config(args)
        loop_name = event_loop_name()
        metrics = new_metrics()
        plan = check_configuration(config, metrics)
    except InvalidConfigError as exc:
        _fail(f"configuration error: {exc}")
        return 2
    if getattr(args, "check", False):
        print(plan.summary())
        return 0

    async def main() -> int:
        app: BrokerApp | None = None
        try:
            app = BrokerApp(config, plan, metrics)
            await app.start()
        except InvalidConfigError as exc:
            _fail(f"configuration error: {exc}")
            code = 2
        except StartupError as exc:
            _fail(f"cannot start: {exc}")
            code = exc.exit_code
        except (KafkaStorageError, AclStoreError, ScramStoreError, OSError) as exc:
            # a locked log dir, a meta.properties of another node, an unreadable ACL or
            # SCRAM file: their messages name the file
            _fail(f"cannot start: {exc}")
            code = 1
        else:
            # What start-up made (modules, protocol schemas, logs, indexes, config) lives
            # as long as the broker: moved out of the collector's generations, it is
            # not walked again by the collections that requests trigger. With 64
            # acks=all requests in flight (their objects survive young collections)
            # the collector's walk was a measurable cost per request; docs/performance.md.
            gc.collect()
            gc.freeze()
            await app.serve_forever()
            return app.exit_code
        if app is not None:
            await app.abort_start()
        return code

    if loop_name == "uvloop":
        import uvloop

        return uvloop.run(main())
    return asyncio.run(main())
