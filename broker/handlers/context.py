"""What a handler sees: the request context and the broker's shared parts.

Handlers sit below the server and beside ``broker/metrics.py`` in the
layers, so they name the server's and the metrics' objects through the
small protocols below; the app hands the real objects in.

* :class:`RequestContext` -- one request: its header, the connection it came
  on (client software for the conversion metrics), and the per-request
  values Kafka's ``RequestChannel.Request`` accumulates (error counts for
  ``ErrorsPerSec``, conversion time and temporary memory).
* :class:`BrokerContext` -- configuration, partitions, logs, meters, the
  durability waiter (acks=all group commit), the producer-id allocator, the
  group and transaction coordinators, the advertised address and the authorizer,
  shared by every handler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from broker.config import BrokerConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.transaction.coordinator import TransactionCoordinator
from broker.errors import ErrorCode
from broker.log.manager import LogManager
from broker.log.unified_log import UnifiedLog
from broker.partition.replica_manager import ReplicaManager
from broker.protocol.header import RequestHeader
from broker.security.acl_control import AclControl
from broker.security.authorizer import StandardAuthorizer
from broker.security.scram_control import ScramControl
from broker.validator import MetricsRecorder

if TYPE_CHECKING:
    from broker.handlers.registry import HandlerRegistry


class CounterLike(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class HistogramLike(Protocol):
    def observe(self, amount: float) -> None: ...


class TopicMeters(Protocol):
    """``BrokerTopicMetrics`` of one topic (``broker.metrics.TopicMetrics``)."""

    @property
    def messages_in(self) -> CounterLike: ...
    @property
    def bytes_in(self) -> CounterLike: ...
    @property
    def bytes_out(self) -> CounterLike: ...
    @property
    def bytes_rejected(self) -> CounterLike: ...
    @property
    def produce_requests(self) -> CounterLike: ...
    @property
    def failed_produce_requests(self) -> CounterLike: ...
    @property
    def fetch_requests(self) -> CounterLike: ...
    @property
    def failed_fetch_requests(self) -> CounterLike: ...
    @property
    def produce_message_conversions(self) -> CounterLike: ...
    @property
    def fetch_message_conversions(self) -> CounterLike: ...


class BrokerMeters(Protocol):
    """The parts of ``broker.metrics.BrokerMetrics`` handlers feed."""

    @property
    def validator_recorder(self) -> MetricsRecorder: ...

    def topic(self, topic: str) -> TopicMeters: ...

    def forget_topic(self, topic: str) -> None: ...

    def client_conversions(
        self, request: str, software_name: str | None, software_version: str | None
    ) -> CounterLike: ...

    def authorization_failures(
        self, request: str, resource_type: str, operation: str
    ) -> CounterLike: ...


class ConnectionInfo(Protocol):
    """The client connection a request came on (``broker.server.connection``)."""

    peer: str
    client_software_name: str | None
    client_software_version: str | None
    #: Kafka's principal string, "User:name" ("User:ANONYMOUS" on PLAINTEXT listeners)
    principal: str
    #: the client's IP address (ACL host matching)
    peer_host: str
    #: the listener the connection came in on, upper case ("PLAINTEXT", "SASL_SSL", ...)
    listener_name: str

    def close(self) -> None: ...


class Durability(Protocol):
    """Waits until the logs are durable up to the given offsets (group commit)."""

    def when_flushed(
        self,
        targets: Sequence[tuple[UnifiedLog, int]],
        timeout_s: float,
        on_done: Callable[[bool | BaseException], None],
    ) -> bool:
        """Ask for a round now (call it in the handler's synchronous part);
        ``on_done`` is called once, on the event loop's thread, with True,
        False (timed out) or the round's error. False, without calling it,
        when nothing needs a round."""
        ...


class ProducerIdAllocator(Protocol):
    def next_producer_id(self) -> int: ...


@dataclass(frozen=True)
class Endpoint:
    """An advertised listener: what Metadata tells clients to connect to."""

    host: str
    port: int


@dataclass
class BrokerContext:
    """The broker's shared parts, built once by the app."""

    config: BrokerConfig
    node_id: int
    cluster_id: str
    advertised: Endpoint
    log_manager: LogManager
    replica_manager: ReplicaManager
    meters: BrokerMeters
    durability: Durability
    producer_ids: ProducerIdAllocator
    #: filled by the registry once every handler exists (ApiVersions needs it)
    registry: HandlerRegistry | None = None
    #: the ACLs and their authorizer; None without ``authorizer.class.name``
    #: (every request is allowed, as in Kafka without an authorizer)
    acl_control: AclControl | None = None
    #: the SCRAM credentials (KIP-554); None in tests that do not need them
    scram_control: ScramControl | None = None
    #: the advertised address of each listener, by listener name (upper case)
    advertised_listeners: dict[str, Endpoint] = field(default_factory=dict)

    def endpoint_for(self, listener_name: str) -> Endpoint:
        """The address to give a client that came in on ``listener_name``: Kafka's
        brokers answer Metadata with the endpoints of the request's own listener."""
        return self.advertised_listeners.get(listener_name, self.advertised)

    @property
    def authorizer(self) -> StandardAuthorizer | None:
        control = self.acl_control
        return None if control is None else control.authorizer

    #: the group coordinator; None: groups are not served (COORDINATOR_NOT_AVAILABLE)
    groups: GroupCoordinator | None = None
    #: the transaction coordinator; None: FindCoordinator answers COORDINATOR_NOT_AVAILABLE
    #: for transactional ids and InitProducerId with one NOT_COORDINATOR
    transactions: TransactionCoordinator | None = None


@dataclass
class RequestContext:
    """One request being handled (``RequestChannel.Request``'s bookkeeping)."""

    header: RequestHeader
    connection: ConnectionInfo
    #: error code -> count, for ErrorsPerSec (``AbstractResponse.errorCounts``)
    error_counts: dict[int, int] = field(default_factory=dict)
    #: ``request.messageConversionsTimeNanos`` (overwritten per partition, as Kafka)
    conversions_time_ns: int = 0
    #: ``request.temporaryMemoryBytes`` (overwritten per partition, as Kafka)
    temporary_memory_bytes: int = 0
    #: monotonic ns when the handler started waiting (acks=all, long-poll), 0 if never
    remote_start_ns: int = 0

    def count_error(self, code: int | ErrorCode, n: int = 1) -> None:
        self.error_counts[int(code)] = self.error_counts.get(int(code), 0) + n
