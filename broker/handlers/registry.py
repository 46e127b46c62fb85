"""The handlers this broker serves, declared once.

``HANDLER_CLASSES`` is the one list; a handler's version range is its class
attributes, and ApiVersions answers from this registry, so a version range
is stated in exactly one place. A declared range must lie inside the
protocol layer's range for the API (checked when the registry is built).
"""

from __future__ import annotations

from broker.handlers.alter_configs import AlterConfigsHandler
from broker.handlers.api_versions import ApiVersionsHandler
from broker.handlers.base import AnyHandler
from broker.handlers.consumer_group_describe import ConsumerGroupDescribeHandler
from broker.handlers.consumer_group_heartbeat import ConsumerGroupHeartbeatHandler
from broker.handlers.context import BrokerContext
from broker.handlers.create_acls import CreateAclsHandler
from broker.handlers.create_partitions import CreatePartitionsHandler
from broker.handlers.create_topics import CreateTopicsHandler
from broker.handlers.delete_acls import DeleteAclsHandler
from broker.handlers.delete_groups import DeleteGroupsHandler
from broker.handlers.delete_topics import DeleteTopicsHandler
from broker.handlers.describe_acls import DescribeAclsHandler
from broker.handlers.describe_cluster import DescribeClusterHandler
from broker.handlers.describe_configs import DescribeConfigsHandler
from broker.handlers.describe_groups import DescribeGroupsHandler
from broker.handlers.describe_log_dirs import DescribeLogDirsHandler
from broker.handlers.fetch import FetchHandler
from broker.handlers.find_coordinator import FindCoordinatorHandler
from broker.handlers.heartbeat import HeartbeatHandler
from broker.handlers.incremental_alter_configs import IncrementalAlterConfigsHandler
from broker.handlers.init_producer_id import InitProducerIdHandler
from broker.handlers.join_group import JoinGroupHandler
from broker.handlers.leave_group import LeaveGroupHandler
from broker.handlers.list_groups import ListGroupsHandler
from broker.handlers.list_offsets import ListOffsetsHandler
from broker.handlers.metadata import MetadataHandler
from broker.handlers.offset_commit import OffsetCommitHandler
from broker.handlers.offset_delete import OffsetDeleteHandler
from broker.handlers.offset_fetch import OffsetFetchHandler
from broker.handlers.offset_for_leader_epoch import OffsetForLeaderEpochHandler
from broker.handlers.produce import ProduceHandler
from broker.handlers.sasl import SaslAuthenticateHandler, SaslHandshakeHandler
from broker.handlers.scram_credentials import (
    AlterUserScramCredentialsHandler,
    DescribeUserScramCredentialsHandler,
)
from broker.handlers.sync_group import SyncGroupHandler

HANDLER_CLASSES: tuple[type[AnyHandler], ...] = (
    ProduceHandler,
    FetchHandler,
    MetadataHandler,
    ApiVersionsHandler,
    InitProducerIdHandler,
    # admin and offset APIs (read path besides Fetch)
    ListOffsetsHandler,
    OffsetForLeaderEpochHandler,
    FindCoordinatorHandler,
    CreateTopicsHandler,
    DeleteTopicsHandler,
    CreatePartitionsHandler,
    DescribeConfigsHandler,
    AlterConfigsHandler,
    IncrementalAlterConfigsHandler,
    DescribeLogDirsHandler,
    DescribeClusterHandler,
    # ACLs (broker/security)
    DescribeAclsHandler,
    CreateAclsHandler,
    DeleteAclsHandler,
    # consumer groups and committed offsets (the group coordinator)
    JoinGroupHandler,
    SyncGroupHandler,
    HeartbeatHandler,
    LeaveGroupHandler,
    OffsetCommitHandler,
    OffsetFetchHandler,
    OffsetDeleteHandler,
    ListGroupsHandler,
    DescribeGroupsHandler,
    DeleteGroupsHandler,
    # SASL outside an exchange (server/sasl_gate.py serves the exchange) and KIP-554
    SaslHandshakeHandler,
    SaslAuthenticateHandler,
    DescribeUserScramCredentialsHandler,
    AlterUserScramCredentialsHandler,
    # the consumer group protocol (KIP-848)
    ConsumerGroupHeartbeatHandler,
    ConsumerGroupDescribeHandler,
)


class HandlerRegistry:
    """Handler instances by API key."""

    def __init__(
        self,
        broker: BrokerContext,
        classes: tuple[type[AnyHandler], ...] = HANDLER_CLASSES,
    ) -> None:
        self._handlers: dict[int, AnyHandler] = {}
        for cls in classes:
            api = cls.api()
            if not (api.min_version <= cls.MIN_VERSION <= cls.MAX_VERSION <= api.max_version):
                raise ValueError(
                    f"{cls.__name__} declares versions {cls.MIN_VERSION}-{cls.MAX_VERSION}, "
                    f"outside the protocol's {api.min_version}-{api.max_version}"
                )
            if cls.API_KEY in self._handlers:
                raise ValueError(f"two handlers for API key {cls.API_KEY}")
            self._handlers[cls.API_KEY] = cls(broker)
        broker.registry = self

    def get(self, api_key: int) -> AnyHandler | None:
        return self._handlers.get(api_key)

    def versions(self) -> list[tuple[int, int, int]]:
        """(api key, min version, max version) of every served API, by key."""
        return sorted(
            (k, type(h).MIN_VERSION, type(h).MAX_VERSION) for k, h in self._handlers.items()
        )
