"""java.util.HashMap's iteration order, as the admin tools compute it."""

from __future__ import annotations

from broker.admin.java_order import (
    capacity_for,
    hash_order,
    string_hash,
    string_order,
    topic_partition_hash,
)


def test_string_hash_is_javas() -> None:
    # values of "...".hashCode() in Java
    assert string_hash("") == 0
    assert string_hash("a") == 97
    assert string_hash("hello") == 99162322
    assert string_hash("polygenelubricants") == -(2**31)  # the famous MIN_VALUE hash
    assert string_hash("\u00e9t\u00e9") == 233 * 961 + 116 * 31 + 233
    # a code point above the BMP counts as its two UTF-16 surrogates
    assert string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00


def test_topic_partition_hash() -> None:
    assert topic_partition_hash("t", 0) == 31 * 31 + 116
    assert topic_partition_hash("t", 2) == 31 * 33 + 116


def test_capacity_grows_past_three_quarters() -> None:
    assert [capacity_for(n) for n in (0, 12, 13, 24, 25, 48, 49)] == [16, 16, 32, 32, 64, 64, 128]
    # new HashMap<>(n): tableSizeFor(n), then the same growth
    assert [capacity_for(n, n) for n in (0, 1, 2, 3, 4, 5, 7)] == [1, 2, 4, 4, 8, 8, 16]


def test_kafka_log_dirs_json_keys_come_in_hash_order() -> None:
    # LogDirsCommand puts these keys in this order into HashMaps; Jackson writes
    # {"brokers":...,"version":1}, {"partitions":...,"error":...,"logDir":...}, ...
    assert string_order(["version", "brokers"]) == ["brokers", "version"]
    assert string_order(["broker", "logDirs"]) == ["broker", "logDirs"]
    assert string_order(["logDir", "error", "partitions"]) == ["partitions", "error", "logDir"]
    assert string_order(["partition", "size", "offsetLag", "isFuture"]) == [
        "partition",
        "size",
        "offsetLag",
        "isFuture",
    ]


def test_orders_java_prints() -> None:
    # printed by jshell: new HashMap<>() / new HashMap<>(3) filled in this order
    keys = ["cleanup.policy", "compression.type", "retention.ms", "segment.bytes"]
    assert string_order(keys) == [
        "compression.type",
        "cleanup.policy",
        "retention.ms",
        "segment.bytes",
    ]
    assert string_order(["a-topic", "b-topic", "orders", "users"], initial=3) == [
        "orders",
        "a-topic",
        "users",
        "b-topic",
    ]


def test_a_bucket_keeps_insertion_order() -> None:
    # "Aa" and "BB" have the same hashCode (2112): one bucket, insertion order
    assert string_hash("Aa") == string_hash("BB")
    assert string_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert string_order(["Aa", "BB"]) == ["Aa", "BB"]
    # small Integer keys of a HashMap iterate in ascending order
    assert hash_order([5, 3, 1], int) == [1, 3, 5]
