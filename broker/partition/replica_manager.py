"""The partitions this broker leads, and topic creation (``ReplicaManager`` without replicas).

Holds a :class:`~broker.partition.partition.Partition` per partition log the
:class:`~broker.log.manager.LogManager` knows, creates topics (auto-creation
from Metadata, CreateTopics, CreatePartitions) and deletes them. Topic names
are checked as Kafka's ``Topic.validate`` does: 1-249 characters of
``[a-zA-Z0-9._-]``, not ``.`` or ``..``, and no collision with an existing
topic that differs only in ``.`` versus ``_`` (they share metric names).

Used from the event loop thread only.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping

from broker.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaError,
    NotLeaderOrFollowerError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from broker.log.files import TopicPartition
from broker.log.manager import LogManager
from broker.log.unified_log import UnifiedLog
from broker.partition.cluster_layout import ClusterLayout
from broker.partition.partition import Offload, OffloadResult, Partition, run_here
from broker.validator import MetricsRecorder

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(topic: str) -> None:
    """``org.apache.kafka.common.internals.Topic.validate``."""
    if not topic:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {topic}"
        )
    if not _LEGAL.match(topic):
        raise InvalidTopicError(
            f'Topic name "{topic}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )


def _unify(topic: str) -> str:
    return topic.replace(".", "_")


class ReplicaManager:
    """Partitions by (topic, partition); see the module docstring."""

    def __init__(
        self,
        log_manager: LogManager,
        *,
        recorder: MetricsRecorder,
        time_ms: Callable[[], int],
        max_decompressed_bytes: int | None = None,
        offload: Offload[OffloadResult] = run_here,
        inline_budget: int | None = None,
        layout: ClusterLayout | None = None,
    ) -> None:
        self.log_manager = log_manager
        #: the machine's nodes (prototype, ``cluster.nodes``); None: this broker alone
        self.layout = layout
        self._recorder = recorder
        self._time_ms = time_ms
        self._max_decompressed_bytes = max_decompressed_bytes
        self._offload = offload
        self._inline_budget = inline_budget
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._topics: dict[str, int] = {}
        #: changes with every topic or partition added or removed (the group coordinator
        #: recomputes what consumer groups subscribe to when it moved, as Kafka's
        #: coordinator does on a new metadata image)
        self.topics_version = 0
        for log in log_manager.all_logs():
            tp = log.topic_partition
            self._add(self._new_partition(tp.topic, tp.partition, log))

    def _new_partition(self, topic: str, partition: int, log: UnifiedLog) -> Partition:
        return Partition(
            topic,
            partition,
            log,
            recorder=self._recorder,
            time_ms=self._time_ms,
            max_decompressed_bytes=self._max_decompressed_bytes,
            offload=self._offload,
            inline_budget=self._inline_budget,
        )

    def _add(self, partition: Partition) -> None:
        self.topics_version += 1
        self._partitions[(partition.topic, partition.partition)] = partition
        self._topics[partition.topic] = max(
            self._topics.get(partition.topic, 0), partition.partition + 1
        )

    # ---- lookups ----------------------------------------------------------------------------

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        """The partition when this broker leads it (every partition it hosts,
        unless ``cluster.nodes`` spreads them over several nodes)."""
        if self.layout is not None and not self.layout.leads(topic, partition):
            return None
        return self._partitions.get((topic, partition))

    def missing_partition_error(self, topic: str, partition: int) -> ErrorCode:
        """What a request for a partition :meth:`get_partition` does not give
        is answered with: another node leads it, or it does not exist."""
        if (
            self.layout is not None
            and (topic, partition) in self._partitions
            and not self.layout.leads(topic, partition)
        ):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def missing_partition(self, topic: str, partition: int) -> KafkaError:
        """:meth:`missing_partition_error` as the exception a produce of the
        partition is answered with (``KafkaApis.handleProduceRequest``'s message)."""
        if self.missing_partition_error(topic, partition) == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return NotLeaderOrFollowerError(
                f"This server is not the leader for that topic-partition: {topic}-{partition}"
            )
        return UnknownTopicOrPartitionError(
            f"This server does not host this topic-partition: {topic}-{partition}"
        )

    def partition_or_error(self, topic: str, partition: int) -> Partition:
        found = self._partitions.get((topic, partition))
        if found is None:
            raise UnknownTopicOrPartitionError(
                f"This server does not host this topic-partition: {topic}-{partition}"
            )
        return found

    def partition_count(self, topic: str) -> int | None:
        """Number of partitions of ``topic``, None when it does not exist."""
        return self._topics.get(topic)

    def topics(self) -> dict[str, int]:
        return dict(self._topics)

    def partitions_of(self, topic: str) -> list[Partition]:
        count = self._topics.get(topic, 0)
        return [
            self._partitions[(topic, p)] for p in range(count) if (topic, p) in self._partitions
        ]

    async def wait_queued_appends(self) -> None:
        """Until no partition has an append queued on a worker thread (shutdown)."""
        while tails := [p.queued_append for p in self._partitions.values() if p.queued_append]:
            await asyncio.wait(tails)

    # ---- topic management ---------------------------------------------------------------------

    def check_new_topic(self, topic: str, partitions: int) -> None:
        validate_topic_name(topic)
        if topic in self._topics:
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        unified = _unify(topic)
        for existing in self._topics:
            if _unify(existing) == unified:
                raise InvalidTopicError(f"Topic '{topic}' collides with existing topic: {existing}")
        if partitions < 1:
            raise InvalidPartitionsError("Number of partitions must be larger than 0.")

    def create_topic(
        self, topic: str, partitions: int, configs: Mapping[str, object] | None = None
    ) -> bytes:
        """Create ``topic`` with ``partitions`` partitions; returns its topic id.

        ``configs`` are topic-level overrides, validated by the caller
        (``TopicConfig.with_overrides`` raises InvalidConfigError).
        """
        self.check_new_topic(topic, partitions)
        topic_id = self.log_manager.create_topic(topic, partitions, configs)
        for p in range(partitions):
            log = self.log_manager.get_or_create_log(TopicPartition(topic, p))
            self._add(self._new_partition(topic, p, log))
        return topic_id

    def create_partitions(self, topic: str, new_total: int) -> None:
        """CreatePartitions: grow ``topic`` to ``new_total`` partitions."""
        current = self._topics.get(topic)
        if current is None:
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        if new_total < current:
            raise InvalidPartitionsError(
                f"Topic currently has {current} partitions, which is higher than the requested "
                f"{new_total}."
            )
        if new_total == current:
            raise InvalidPartitionsError(f"Topic already has {current} partitions.")
        for p in range(current, new_total):
            log = self.log_manager.get_or_create_log(TopicPartition(topic, p))
            self._add(self._new_partition(topic, p, log))

    def delete_topic(self, topic: str) -> None:
        if topic not in self._topics:
            raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist")
        self.log_manager.delete_topic(topic)
        for key in [k for k in self._partitions if k[0] == topic]:
            # appends still queued on it fail instead of writing to a deleted log
            self._partitions.pop(key).removed = True
        del self._topics[topic]
        self.topics_version += 1
