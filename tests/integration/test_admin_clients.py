"""Admin APIs and ListOffsets through real clients against the broker as a subprocess.

confluent-kafka's AdminClient and Consumer (librdkafka) and kafka-python's
KafkaAdminClient, KafkaProducer and KafkaConsumer create topics with
configs, describe them (values, sources, synonyms), alter them
(incremental and legacy), grow and delete them, and list offsets. One
broker serves the module (each test uses its own topics); the restart test
starts its own. Records are produced with kafka-python (magic 2: it infers
the broker's version from ApiVersions); librdkafka produces v2 batches only
to a broker that serves Fetch v4+, which the last test relies on.
"""

from __future__ import annotations

import time
import uuid
import warnings
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from broker.records.batch import CompressionType, TimestampType
from broker.records.iterate import iter_batches
from tests.integration.harness import BrokerProcess

with warnings.catch_warnings():
    # kafka-python 3.0 reads its JSON schemas with importlib.resources.read_text
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType
    from kafka.errors import InvalidConfigurationError

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
]

TIMEOUT = 15


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("admin") / "data"
    data.mkdir()
    with BrokerProcess(data, **{"log.retention.hours": "48", "compression.type": "lz4"}) as b:
        yield b


@pytest.fixture
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture
def kadmin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    yield client
    client.close()


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_all(futures: dict) -> dict:
    """Each future's result, or the KafkaError it failed with."""
    out = {}
    for key, future in futures.items():
        try:
            out[key] = future.result(timeout=TIMEOUT)
        except KafkaException as exc:
            out[key] = exc.args[0]
    return out


def describe_topic(admin: AdminClient, topic: str) -> dict:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return next(iter(wait_all(admin.describe_configs([resource])).values()))


def produce(bootstrap: str, topic: str, partition: int, timestamps: list[int]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    try:
        # kafka-python asks ApiVersions and writes magic 2 for brokers >= 0.11
        assert producer.config["api_version"] >= (0, 11)
        for ts in timestamps:
            producer.send(topic, key=b"k", value=b"v%d" % ts, partition=partition, timestamp_ms=ts)
        producer.flush(TIMEOUT)
    finally:
        producer.close(TIMEOUT)


def stored_batches(data_dir: Path, topic: str, partition: int) -> list:
    """Headers of every batch in the partition's segment files, read from disk."""
    headers = []
    for path in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        headers += [b.header() for b in iter_batches(data, 0, len(data), file=True)]
    return headers


# ---- confluent-kafka AdminClient -----------------------------------------------------------------


def test_confluent_create_describe_alter_grow_delete(admin, broker):
    topic = name("c")
    created = wait_all(
        admin.create_topics(
            [NewTopic(topic, 2, 1, config={"retention.ms": "3600000", "cleanup.policy": "delete"})],
            operation_timeout=TIMEOUT,
        )
    )
    assert created == {topic: None}
    assert len(admin.list_topics(topic, timeout=TIMEOUT).topics[topic].partitions) == 2

    configs = describe_topic(admin, topic)
    retention = configs["retention.ms"]
    assert (retention.value, retention.source) == (
        "3600000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    # librdkafka keys synonyms by name: log.retention.hours (static 48, default 168) shows once
    assert set(retention.synonyms) == {"retention.ms", "log.retention.hours"}
    compression = configs["compression.type"]
    assert (compression.value, compression.source) == (
        "lz4",
        ConfigSource.STATIC_BROKER_CONFIG.value,
    )
    segment = configs["segment.bytes"]
    assert (segment.value, segment.is_default) == ("1073741824", True)

    altered = wait_all(
        admin.incremental_alter_configs(
            [
                ConfigResource(
                    ResourceType.TOPIC,
                    topic,
                    incremental_configs=[
                        ConfigEntry(
                            "segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET
                        ),
                        ConfigEntry(
                            "retention.ms", None, incremental_operation=AlterConfigOpType.DELETE
                        ),
                        ConfigEntry(
                            "cleanup.policy",
                            "compact",
                            incremental_operation=AlterConfigOpType.APPEND,
                        ),
                    ],
                )
            ]
        )
    )
    assert list(altered.values()) == [None]
    configs = describe_topic(admin, topic)
    assert configs["segment.bytes"].value == "1048576"
    assert configs["cleanup.policy"].value == "delete,compact"
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        str(48 * 3_600_000),
        ConfigSource.STATIC_BROKER_CONFIG.value,
    )

    # legacy AlterConfigs replaces the whole override set: keys not named go back to defaults
    legacy = ConfigResource(ResourceType.TOPIC, topic, set_config={"flush.ms": "1000"})
    with pytest.warns(DeprecationWarning, match="alter_configs has been deprecated"):
        futures = admin.alter_configs([legacy])
    replaced = wait_all(futures)
    assert list(replaced.values()) == [None]
    configs = describe_topic(admin, topic)
    overrides = {
        k: e.value
        for k, e in configs.items()
        if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    }
    assert overrides == {"flush.ms": "1000"}
    assert configs["segment.bytes"].value == "1073741824"

    grown = wait_all(admin.create_partitions([NewPartitions(topic, 5)], operation_timeout=TIMEOUT))
    assert grown == {topic: None}
    assert len(admin.list_topics(topic, timeout=TIMEOUT).topics[topic].partitions) == 5

    deleted = wait_all(admin.delete_topics([topic], operation_timeout=TIMEOUT))
    assert deleted == {topic: None}
    assert topic not in admin.list_topics(timeout=TIMEOUT).topics


def test_confluent_bad_configs_are_refused_with_a_message(admin):
    bad, unknown, replicated = name("bad"), name("unknown"), name("rf")
    results = wait_all(
        admin.create_topics(
            [
                NewTopic(bad, 1, 1, config={"retention.ms": "forever"}),
                NewTopic(unknown, 1, 1, config={"retention.minutes": "5"}),
                NewTopic(replicated, 1, 3),
            ],
            operation_timeout=TIMEOUT,
        )
    )
    assert results[bad].name() == "INVALID_CONFIG"
    assert "Invalid value forever for configuration retention.ms" in results[bad].str()
    assert results[unknown].name() == "INVALID_CONFIG"
    assert "Unknown topic config name: retention.minutes" in results[unknown].str()
    assert results[replicated].name() == "INVALID_REPLICATION_FACTOR"
    assert "only 1 broker(s) are registered" in results[replicated].str()
    assert not {bad, unknown, replicated} & set(admin.list_topics(timeout=TIMEOUT).topics)

    topic = name("ok")
    wait_all(admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT))
    refused = wait_all(
        admin.incremental_alter_configs(
            [
                ConfigResource(
                    ResourceType.TOPIC,
                    topic,
                    incremental_configs=[
                        ConfigEntry(
                            "max.message.bytes", "-5", incremental_operation=AlterConfigOpType.SET
                        )
                    ],
                )
            ]
        )
    )
    [error] = refused.values()
    assert error.name() == "INVALID_CONFIG"
    assert "Invalid value -5 for configuration max.message.bytes" in error.str()
    broker_change = wait_all(
        admin.incremental_alter_configs(
            [
                ConfigResource(
                    ResourceType.BROKER,
                    "0",
                    incremental_configs=[
                        ConfigEntry(
                            "log.retention.hours", "1", incremental_operation=AlterConfigOpType.SET
                        )
                    ],
                )
            ]
        )
    )
    [error] = broker_change.values()
    assert error.name() == "INVALID_REQUEST"
    assert "Cannot update these configs dynamically: log.retention.hours" in error.str()


def test_confluent_describe_broker_and_cluster(admin):
    [configs] = wait_all(
        admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")])
    ).values()
    hours = configs["log.retention.hours"]
    assert (hours.value, hours.source, hours.is_read_only) == (
        "48",
        ConfigSource.STATIC_BROKER_CONFIG.value,
        True,
    )
    assert configs["num.partitions"].value == "1"
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
    assert [n.id for n in cluster.nodes] == [0]
    assert cluster.controller.id == 0
    assert cluster.cluster_id


# ---- kafka-python KafkaAdminClient ---------------------------------------------------------------


def test_kafka_python_admin(kadmin, broker):
    topic = name("k")
    created = kadmin.create_topics(
        {
            topic: {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"max.message.bytes": "2000000"},
            }
        }
    )
    [result] = created["topics"]
    assert (result["error_code"], result["num_partitions"], result["replication_factor"]) == (
        0,
        1,
        1,
    )
    assert result["configs"]["max.message.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"

    with pytest.raises(InvalidConfigurationError, match="Unknown topic config name: retention"):
        kadmin.create_topics({name("k"): {"num_partitions": 1, "configs": {"retention": "1"}}})

    described = kadmin.describe_configs(
        [KConfigResource(ConfigResourceType.TOPIC, topic)],
        include_synonyms=True,
        config_filter="all",
    )
    configs = described["topic"][topic]
    assert configs["max.message.bytes"]["value"] == "2000000"
    assert configs["max.message.bytes"]["synonyms"] == [
        {"name": "max.message.bytes", "value": "2000000", "source": "DYNAMIC_TOPIC_CONFIG"},
        {"name": "message.max.bytes", "value": "1048588", "source": "DEFAULT_CONFIG"},
    ]
    assert configs["retention.ms"]["config_source"] == "STATIC_BROKER_CONFIG"

    # kafka-python sends AlterConfigs (legacy) with the other modified keys filled in, and
    # IncrementalAlterConfigs with just the change
    legacy = kadmin.alter_configs(
        [KConfigResource(ConfigResourceType.TOPIC, topic, configs={"segment.ms": "60000"})],
        incremental=False,
    )
    assert legacy == {"topic": {topic: "OK"}}
    incremental = kadmin.alter_configs(
        [KConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.bytes": "1000000"})],
        incremental=True,
    )
    assert incremental == {"topic": {topic: "OK"}}
    modified = kadmin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, topic)])
    assert {k: v["value"] for k, v in modified["topic"][topic].items()} == {
        "max.message.bytes": "2000000",
        "segment.ms": "60000",
        "retention.bytes": "1000000",
    }

    grown = kadmin.create_partitions({topic: 3})
    assert [r.error_code for r in grown.results] == [0]
    [dirs] = kadmin.describe_log_dirs()
    [log_dir] = dirs["log_dirs"]
    assert log_dir["log_dir"] == str(broker.data_dir)
    partitions = {
        p["partition_index"]
        for t in log_dir["topics"]
        if t["name"] == topic
        for p in t["partitions"]
    }
    assert partitions == {0, 1, 2}

    deleted = kadmin.delete_topics([topic])
    assert [t["error_code"] for t in deleted["topics"]] == [0]
    assert topic not in kadmin.list_topics()


# ---- ListOffsets through consumers -----------------------------------------------------------------


@pytest.fixture(scope="module")
def offsets_topic(broker):
    """Partition 0: offsets 0..4 with timestamps 1000..5000; partition 1 empty."""
    topic = name("offsets")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert wait_all(admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=TIMEOUT)) == {
        topic: None
    }
    produce(broker.bootstrap, topic, 0, [1000, 2000, 3000, 4000, 5000])
    return topic


def test_confluent_consumer_watermarks_and_offsets_for_times(broker, offsets_topic):
    # librdkafka needs a group.id to make a consumer; no group is joined (manual assignment),
    # and the FindCoordinator answers (COORDINATOR_NOT_AVAILABLE) do not disturb offset queries
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": name("g")})
    try:
        assert consumer.get_watermark_offsets(
            CTopicPartition(offsets_topic, 0), timeout=TIMEOUT
        ) == (0, 5)
        assert consumer.get_watermark_offsets(
            CTopicPartition(offsets_topic, 1), timeout=TIMEOUT
        ) == (0, 0)
        found = consumer.offsets_for_times(
            [CTopicPartition(offsets_topic, 0, 2500), CTopicPartition(offsets_topic, 1, 0)],
            timeout=TIMEOUT,
        )
        assert [(tp.partition, tp.offset, tp.error) for tp in found] == [
            (0, 2, None),
            (1, -1, None),
        ]
        assert found[0].leader_epoch == 0
        [past] = consumer.offsets_for_times(
            [CTopicPartition(offsets_topic, 0, 9999)], timeout=TIMEOUT
        )
        assert past.offset == -1
    finally:
        consumer.close()


def test_confluent_admin_list_offsets(admin, offsets_topic):
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max": OffsetSpec.max_timestamp(),
        "at": OffsetSpec.for_timestamp(3000),
    }
    answers = {}
    for label, spec in specs.items():
        [info] = wait_all(admin.list_offsets({CTopicPartition(offsets_topic, 0): spec})).values()
        answers[label] = (info.offset, info.timestamp)
    assert answers == {
        "earliest": (0, -1),
        "latest": (5, -1),
        "max": (4, 5000),
        "at": (2, 3000),
    }


def test_kafka_python_consumer_offsets(broker, offsets_topic):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        tps = [KTopicPartition(offsets_topic, 0), KTopicPartition(offsets_topic, 1)]
        assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}
        assert consumer.end_offsets(tps) == {tps[0]: 5, tps[1]: 0}
        found = consumer.offsets_for_times({tps[0]: 1500, tps[1]: 0})
        assert (found[tps[0]].offset, found[tps[0]].timestamp) == (1, 2000)
        assert found[tps[1]] is None
        assert consumer.offsets_for_times({tps[0]: 6000}) == {tps[0]: None}
    finally:
        consumer.close()


# ---- the stored data follows the topic's configs ---------------------------------------------------


def test_stored_batches_follow_altered_configs(admin, broker):
    topic = name("follow")
    assert wait_all(
        admin.create_topics(
            [NewTopic(topic, 1, 1, config={"compression.type": "uncompressed"})],
            operation_timeout=TIMEOUT,
        )
    ) == {topic: None}
    produce(broker.bootstrap, topic, 0, [1000])

    def set_topic(key: str, value: str) -> None:
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        assert list(wait_all(admin.incremental_alter_configs([resource])).values()) == [None]

    set_topic("compression.type", "gzip")
    produce(broker.bootstrap, topic, 0, [2000])
    set_topic("message.timestamp.type", "LogAppendTime")
    produce(broker.bootstrap, topic, 0, [3000])

    headers = stored_batches(broker.data_dir, topic, 0)
    assert [h.compression_type for h in headers] == [
        CompressionType.NONE,
        CompressionType.GZIP,
        CompressionType.GZIP,
    ]
    assert [h.timestamp_type for h in headers] == [
        TimestampType.CREATE_TIME,
        TimestampType.CREATE_TIME,
        TimestampType.LOG_APPEND_TIME,
    ]
    assert headers[1].max_timestamp == 2000
    assert headers[2].max_timestamp > 1_000_000_000_000  # the broker's clock, not 3000


# ---- restart -----------------------------------------------------------------------------------------


def test_configs_and_offsets_survive_a_restart(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    first = BrokerProcess(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": first.bootstrap})
        assert wait_all(
            admin.create_topics(
                [NewTopic("kept", 2, 1, config={"retention.ms": "86400000"})],
                operation_timeout=TIMEOUT,
            )
        ) == {"kept": None}
        resource = ConfigResource(
            ResourceType.TOPIC,
            "kept",
            incremental_configs=[
                ConfigEntry(
                    "max.message.bytes", "500000", incremental_operation=AlterConfigOpType.SET
                )
            ],
        )
        assert list(wait_all(admin.incremental_alter_configs([resource])).values()) == [None]
        produce(first.bootstrap, "kept", 1, [10, 20, 30])
    finally:
        assert first.stop() == 0

    with BrokerProcess(data) as second:
        admin = AdminClient({"bootstrap.servers": second.bootstrap})
        configs = describe_topic(admin, "kept")
        assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
            "86400000",
            ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
        )
        assert configs["max.message.bytes"].value == "500000"
        [info] = wait_all(
            admin.list_offsets({CTopicPartition("kept", 1): OffsetSpec.latest()})
        ).values()
        assert info.offset == 3
        [info] = wait_all(
            admin.list_offsets({CTopicPartition("kept", 1): OffsetSpec.for_timestamp(15)})
        ).values()
        assert (info.offset, info.timestamp) == (1, 20)


# ---- consumers that assign partitions themselves need no coordinator -------------------------------


def test_manually_assigned_consumers_read_without_a_coordinator(admin, broker):
    topic = name("assigned")
    assert wait_all(admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT)) == {
        topic: None
    }
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(6):
        producer.produce(topic, value=b"m%d" % i, partition=0, timestamp=10_000 + i)
    assert producer.flush(TIMEOUT) == 0

    # librdkafka: group.id is required to make a consumer, but assign() joins no group; the
    # start position comes from ListOffsets (OFFSET_BEGINNING) or offsets_for_times
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": name("g"), "enable.auto.commit": False}
    )
    try:
        [start] = consumer.offsets_for_times([CTopicPartition(topic, 0, 10_003)], timeout=TIMEOUT)
        assert start.offset == 3
        consumer.assign([CTopicPartition(topic, 0, OFFSET_BEGINNING)])
        values = []
        deadline = time.monotonic() + TIMEOUT
        while len(values) < 6 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                values.append((message.offset(), message.value(), message.leader_epoch()))
        assert values == [(i, b"m%d" % i, 0) for i in range(6)]
    finally:
        consumer.close()

    kconsumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = KTopicPartition(topic, 0)
        kconsumer.assign([tp])
        kconsumer.seek(tp, kconsumer.offsets_for_times({tp: 10_004})[tp].offset)
        read = []
        deadline = time.monotonic() + TIMEOUT
        while len(read) < 2 and time.monotonic() < deadline:
            read += [(r.offset, r.value) for r in kconsumer.poll(timeout_ms=500).get(tp, [])]
        assert read == [(4, b"m4"), (5, b"m5")]
    finally:
        kconsumer.close()
