"""The broker's components and how they are joined, built once for ``broker serve``.

    config + StartupPlan
      -> LogManager                        (open_log_manager; loaded by the caller)
      -> ReplicaManager(log_manager, time_ms, offload, layout)
      -> GroupCommit(sync method)          (acks=all's fsync rounds)
      -> ProducerIdManager(first log dir, floor above every active producer id)
      -> ScramControl                      (the plan's, its store loaded from the first log dir)
      -> AclControl | None                 (authorizer.class.name; ACLs in the first log dir)
      -> GroupCoordinator | None           (on the coordinator node only; not started)
      -> TransactionCoordinator | None     (beside the groups' one; its TransactionStateManager
                                            over __transaction_state; not started)
      -> BrokerContext -> HandlerRegistry -> Dispatcher

:class:`broker.app.BrokerApp` builds its request path with :func:`build_core`
and adds the sockets, the metrics endpoint and the background ticks; the
handler tests build theirs with the same function and a fake clock (Kafka:
``BrokerServer.startup`` builds the managers before ``KafkaApis``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.config import BrokerConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.transaction.config import TransactionConfig
from broker.coordinator.transaction.coordinator import TransactionCoordinator
from broker.coordinator.transaction.state_manager import TransactionStateManager
from broker.handlers.context import BrokerContext, Endpoint
from broker.handlers.registry import HandlerRegistry
from broker.log.manager import LogManager
from broker.metrics import BrokerMetrics, NullMetrics
from broker.partition.partition import Offload, OffloadResult
from broker.partition.producer_ids import ProducerIdManager
from broker.partition.replica_manager import ReplicaManager
from broker.security.acl_control import AclControl, open_acl_control
from broker.security.scram_control import ScramControl
from broker.server.dispatch import Dispatcher
from broker.server.group_commit import GroupCommit
from broker.startup import StartupPlan


def request_meters(config: BrokerConfig, metrics: BrokerMetrics) -> BrokerMetrics | NullMetrics:
    """What the request path records into: ``metrics``, or no-ops with
    ``metrics.enabled=false``."""
    return metrics if config.get("metrics.enabled") else NullMetrics(metrics)


def open_log_manager(
    config: BrokerConfig, *, meters: BrokerMetrics | NullMetrics, metrics: BrokerMetrics
) -> LogManager:
    """The log manager of ``config.log_dirs``, not loaded yet (reads the log
    cleaner's checkpoints; OSError for a log dir it cannot use). Recovery's
    counts go to ``metrics`` even with ``metrics.enabled=false``: they are
    recorded once at start-up, never on the request path."""
    return LogManager(
        config.log_dirs,
        config,
        flush_recorder=meters.flush_recorder,
        recovery_recorder=metrics.recovery_recorder,
    )


@dataclass
class BrokerCore:
    """Everything a request goes through once its frame is read."""

    log_manager: LogManager
    replica_manager: ReplicaManager
    group_commit: GroupCommit
    producer_ids: ProducerIdManager
    acl_control: AclControl | None
    #: None on a node that is not the groups' coordinator (``cluster.nodes``)
    groups: GroupCoordinator | None
    #: None where ``groups`` is None: one coordinator node
    transactions: TransactionCoordinator | None
    scram_control: ScramControl
    context: BrokerContext
    dispatcher: Dispatcher


def build_core(
    config: BrokerConfig,
    plan: StartupPlan,
    log_manager: LogManager,
    *,
    meters: BrokerMetrics | NullMetrics,
    time_ms: Callable[[], int],
    offload: Offload[OffloadResult],
) -> BrokerCore:
    """The request path over ``log_manager`` (loaded): ``time_ms`` is the clock
    of the partitions and the groups, ``offload`` runs the produce validations
    too costly for the event loop (``produce.inline.max.cost``). The context's
    addresses are placeholders until the caller has bound its listeners.
    AclStoreError or ScramStoreError when a stored file cannot be read."""
    replica_manager = ReplicaManager(
        log_manager,
        recorder=meters.validator_recorder,
        time_ms=time_ms,
        offload=offload,
        inline_budget=int(config.get("produce.inline.max.cost")),
        layout=plan.layout,
    )
    group_commit = GroupCommit(plan.sync_method)
    floor = max(
        (pid + 1 for lg in log_manager.all_logs() for pid in lg.producer_state.active_producers),
        default=0,
    )
    producer_ids = ProducerIdManager(log_manager.log_dirs[0], floor)
    # SCRAM credentials (KIP-554), kept in the first log dir like the producer ids; the
    # SASL listeners the plan built look users up in this object
    scram_control = plan.scram_control
    scram_control.store.load()
    # the authorizer and its ACLs, also in the first log dir (opened after what may fail
    # to read: it holds a worker to close)
    acl_control = open_acl_control(config, log_manager.log_dirs[0])
    # consumer groups, with cluster.nodes on the machine's coordinator node only
    layout = plan.layout
    groups = None
    transactions = None
    if layout is None or layout.coordinator.node_id == config.node_id:
        groups = GroupCoordinator(plan.group_config, replica_manager, group_commit, time_ms)
        # transactional ids, on the same node (Kafka: TransactionCoordinator.apply)
        txn_manager = TransactionStateManager(
            TransactionConfig.from_broker(config),
            replica_manager,
            group_commit,
            time_ms,
            durable_fsync=bool(config.get("acks.all.fsync")),
        )
        transactions = TransactionCoordinator(txn_manager, producer_ids)
    context = BrokerContext(
        config=config,
        node_id=config.node_id,
        cluster_id=log_manager.cluster_id or "",
        advertised=Endpoint("", 0),
        log_manager=log_manager,
        replica_manager=replica_manager,
        meters=meters,
        durability=group_commit,
        producer_ids=producer_ids,
        acl_control=acl_control,
        groups=groups,
        transactions=transactions,
        scram_control=scram_control,
    )
    return BrokerCore(
        log_manager=log_manager,
        replica_manager=replica_manager,
        group_commit=group_commit,
        producer_ids=producer_ids,
        acl_control=acl_control,
        groups=groups,
        transactions=transactions,
        scram_control=scram_control,
        context=context,
        dispatcher=Dispatcher(HandlerRegistry(context), meters),
    )
