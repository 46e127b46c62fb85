"""Topic operations over the admin client (the requests of ``broker topics``, ``broker
configs``, ``broker offsets`` and ``broker log-dirs``).

Each operation is one request to the bootstrap broker (the Kafka ``Admin``
calls the matching Kafka tools make), at the highest version both sides
speak within the range the code builds::

    topics            Metadata v1-12 (every topic; ids from v10)
    create_topic      CreateTopics v0-7
    create_partitions CreatePartitions v0-3
    delete_topics     DeleteTopics v0-6 (by name)
    describe_configs  DescribeConfigs v1-4 (synonyms asked when wanted)
    alter_configs     IncrementalAlterConfigs v0-1
    list_offsets      ListOffsets v1-9 (v7+ for -3, v8+ for -4, v9 for -5)
    describe_log_dirs DescribeLogDirs v0-4 (every partition)

A refused request raises :class:`BrokerRefused` with the broker's message
(Kafka's ``ApiException`` text), or the error's name when there is none.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from typing import NamedTuple, Protocol

from broker.admin.client import AdminConnection, BrokerRefused, error_name
from broker.errors import ErrorCode
from broker.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    IncrementalAlterConfigsRequest,
    ListOffsetsRequest,
    MetadataRequest,
)

LIST_OFFSETS, METADATA, CREATE_TOPICS, DELETE_TOPICS = 2, 3, 19, 20
DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS, INCREMENTAL_ALTER_CONFIGS = 32, 35, 37, 44
#: ConfigResource.Type.TOPIC
TOPIC_RESOURCE = 2
#: AlterConfigOp.OpType
SET, DELETE = 0, 1
#: ListOffsetsRequest's special timestamps and the version each needs
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
_OFFSETS_VERSION = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}
TIMEOUT_MS = 30_000
ZERO_UUID = uuid.UUID(int=0)
#: a topic's config entry (describe_configs), a broker's log dir (describe_log_dirs)
ConfigEntry = DescribeConfigsResponse.DescribeConfigsResourceResult
LogDir = DescribeLogDirsResponse.DescribeLogDirsResult


def kafka_uuid(value: uuid.UUID) -> str:
    """``Uuid.toString()``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def refused(code: int, message: str | None) -> BrokerRefused:
    return BrokerRefused(message or error_name(code), code)


class _Result(Protocol):
    @property
    def error_code(self) -> int: ...
    @property
    def error_message(self) -> str | None: ...


def check_results(results: Iterable[_Result]) -> None:
    """BrokerRefused for the first result (topic, partition set, resource) that failed."""
    for r in results:
        if r.error_code != ErrorCode.NONE:
            raise refused(r.error_code, r.error_message)


class PartitionInfo(NamedTuple):
    partition: int
    #: -1: no leader
    leader: int
    replicas: list[int]
    isr: list[int]


class TopicInfo(NamedTuple):
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    #: sorted by partition
    partitions: list[PartitionInfo]


class Broker(NamedTuple):
    node_id: int
    host: str
    port: int


class TopicAdmin:
    """``with TopicAdmin(AdminConnection.connect("127.0.0.1:9092")) as admin: admin.topics()``."""

    def __init__(self, conn: AdminConnection) -> None:
        self.conn = conn
        self.brokers: list[Broker] = []

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> TopicAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- metadata --------------------------------------------------------------------------

    def topics(self) -> dict[str, TopicInfo]:
        """Every topic (internal ones too) by name; the brokers land in ``self.brokers``."""
        conn = self.conn
        version = conn.version_for(METADATA, lowest=1, highest=12)
        resp = conn.call(MetadataRequest(topics=None, allow_auto_topic_creation=False), version)
        self.brokers = [Broker(b.node_id, b.host, b.port) for b in resp.brokers]
        out = {}
        for t in resp.topics:
            if t.error_code != ErrorCode.NONE or t.name is None:
                continue  # e.g. a topic being deleted; listTopics leaves it out too
            partitions = sorted(
                PartitionInfo(
                    p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes)
                )
                for p in t.partitions
            )
            topic_id = t.topic_id or ZERO_UUID
            out[t.name] = TopicInfo(t.name, topic_id, bool(t.is_internal), partitions)
        return out

    # ---- topics ----------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str],
    ) -> None:
        """-1 for ``partitions`` / ``replication_factor``: the broker's defaults."""
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            assignments=[],
            configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                for k, v in configs.items()
            ],
        )
        conn = self.conn
        request = CreateTopicsRequest(topics=[topic], timeout_ms=TIMEOUT_MS, validate_only=False)
        resp = conn.call(request, conn.version_for(CREATE_TOPICS, highest=7))
        check_results(resp.topics)

    def create_partitions(self, counts: dict[str, int]) -> None:
        request = CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(name=t, count=n, assignments=None)
                for t, n in counts.items()
            ],
            timeout_ms=TIMEOUT_MS,
            validate_only=False,
        )
        conn = self.conn
        resp = conn.call(request, conn.version_for(CREATE_PARTITIONS, highest=3))
        check_results(resp.results)

    def delete_topics(self, names: list[str]) -> None:
        conn = self.conn
        version = conn.version_for(DELETE_TOPICS, highest=6)
        if version >= 6:
            request = DeleteTopicsRequest(
                topics=[
                    DeleteTopicsRequest.DeleteTopicState(name=n, topic_id=ZERO_UUID) for n in names
                ],
                timeout_ms=TIMEOUT_MS,
            )
        else:
            request = DeleteTopicsRequest(topic_names=list(names), timeout_ms=TIMEOUT_MS)
        resp = conn.call(request, version)
        check_results(resp.responses)

    # ---- configs ---------------------------------------------------------------------------

    def describe_configs(
        self, topics: list[str], synonyms: bool = False
    ) -> dict[str, list[ConfigEntry]]:
        """The config entries of each topic, in the broker's order."""
        if not topics:
            return {}
        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=TOPIC_RESOURCE, resource_name=t, configuration_keys=None
                )
                for t in topics
            ],
            include_synonyms=synonyms,
            include_documentation=False,
        )
        conn = self.conn
        resp = conn.call(request, conn.version_for(DESCRIBE_CONFIGS, lowest=1, highest=4))
        check_results(resp.results)
        return {r.resource_name: list(r.configs) for r in resp.results}

    def alter_configs(self, topic: str, sets: dict[str, str], deletes: list[str]) -> None:
        ops = IncrementalAlterConfigsRequest.AlterableConfig
        configs = [ops(name=k, config_operation=SET, value=v) for k, v in sets.items()]
        configs += [ops(name=k, config_operation=DELETE, value=None) for k in deletes]
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=TOPIC_RESOURCE, resource_name=topic, configs=configs
                )
            ],
            validate_only=False,
        )
        conn = self.conn
        resp = conn.call(request, conn.version_for(INCREMENTAL_ALTER_CONFIGS, highest=1))
        check_results(resp.responses)

    # ---- offsets and log dirs --------------------------------------------------------------

    def list_offsets(
        self, partitions: list[tuple[str, int]], timestamp: int
    ) -> dict[tuple[str, int], tuple[int, int]]:
        """(error code, offset) of each partition for ``timestamp`` (a time in ms or one of
        the special values); offset -1 when there is none (a time past the last record)."""
        by_topic: dict[str, list[ListOffsetsRequest.ListOffsetsPartition]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(
                ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=partition, timestamp=timestamp
                )
            )
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        conn = self.conn
        lowest = _OFFSETS_VERSION.get(timestamp, 1)
        resp = conn.call(request, conn.version_for(LIST_OFFSETS, lowest=lowest, highest=9))
        return {
            (t.name, p.partition_index): (int(p.error_code), int(p.offset))
            for t in resp.topics
            for p in t.partitions
        }

    def describe_log_dirs(self, conn: AdminConnection | None = None) -> list[LogDir]:
        """Every log dir of the broker behind ``conn`` (default: the bootstrap broker)."""
        conn = conn or self.conn
        resp = conn.call(DescribeLogDirsRequest(topics=None), conn.version_for(DESCRIBE_LOG_DIRS))
        if resp.error_code != ErrorCode.NONE:
            raise refused(resp.error_code, None)
        return list(resp.results)
