"""Broker and topic configuration with Kafka's key names, defaults and checks.

A leaf module: importable from every layer. The tables below are the one
place a key is known; everything else (``server.properties`` parsing,
``--override``, CreateTopics / AlterConfigs validation, DescribeConfigs with
sources and synonyms, the per-topic ``TopicConfig`` the validator and the log
read) is derived from them. Topic keys and most broker keys are declared here;
``BROKER_KEYS`` also takes the security keys (``broker/security_config.py``), the
group coordinator's (``broker/group_config_keys.py``) and the transaction
coordinator's (``broker/transaction_config_keys.py``), listed in
``BROKER_KEY_OWNERS``: the whole table exists once this module is imported,
whatever else was.

Sources (Kafka 3.9): ``storage/.../log/LogConfig.java`` (topic keys and their
broker synonyms), ``server-common/.../config/ServerLogConfigs.java`` and
``ServerTopicConfigSynonyms.java`` (broker keys), ``SocketServerConfigs.java``.

Value syntax follows Kafka's ``ConfigDef``: booleans are ``true``/``false``
(case-insensitive), integers are decimal and range-checked (int = 32-bit,
long = 64-bit), lists are comma-separated with surrounding blanks ignored.
A value that does not parse or is out of range raises
:class:`broker.errors.InvalidConfigError` with a message naming the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from broker import group_config_keys, security_config, transaction_config_keys
from broker.config_key import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    ConfigKey,
    ConfigType,
    either,
    in_range,
    list_of,
    one_of,
)
from broker.errors import InvalidConfigError

#: ``Utils.validHostPattern``: the characters of a host name or address
_HOST_CHARS = re.compile(r"[0-9a-zA-Z\-%._:]+")


class ConfigSource(enum.IntEnum):
    """``DescribeConfigsResponse`` config source ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


def parse_host_counts(name: str, value: str) -> dict[str, int]:
    """``host:count,host:count`` (Kafka's ``Csv.parseCsvMap``: blanks around the
    commas ignored, each entry split at its last ':' so IPv6 addresses work; a
    host named twice keeps its last count). Hosts are names or addresses
    (``Utils.validHostPattern``), counts non-negative 32-bit integers."""
    out: dict[str, int] = {}
    text = value.strip()
    if not text:
        return out
    for entry in text.split(","):
        host, sep, count = entry.strip().rpartition(":")
        host = host.strip()
        try:
            number = int(count.strip(), 10)
        except ValueError:
            number = -1
        if not sep or not host or not _HOST_CHARS.fullmatch(host) or not 0 <= number <= INT_MAX:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: expected host:count entries"
                f" separated by commas, not {entry.strip()!r}"
            )
        out[host] = number
    return out


def check_host_counts(name: str, value: Any) -> None:
    parse_host_counts(name, str(value))


#: ``authorizer.class.name`` values that turn on this broker's authorizer (StandardAuthorizer
#: semantics); the empty string means no authorizer, as in Kafka
AUTHORIZER_CLASS_NAMES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)


def check_authorizer_class(name: str, value: Any) -> None:
    if value and value not in AUTHORIZER_CLASS_NAMES:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: this broker's authorizer is "
            f"turned on by {' or '.join(AUTHORIZER_CLASS_NAMES)}; leave it empty for none"
        )


def parse_super_users(value: str | None) -> frozenset[str]:
    """``StandardAuthorizer.getConfiguredSuperUsers``: semicolon-separated principals,
    blanks trimmed, empty items skipped; each must read ``type:name``."""
    users = set()
    for item in (value or "").split(";"):
        user = item.strip()
        if not user:
            continue
        _, sep, _ = user.partition(":")
        if not sep:
            raise InvalidConfigError(
                "Invalid value for configuration super.users: expected a string in format "
                f"principalType:principalName but got {user}"
            )
        users.add(user)
    return frozenset(users)


def check_super_users(name: str, value: Any) -> None:
    parse_super_users(value)


def parse_value(key: ConfigKey, raw: object) -> Any:
    """Parse ``raw`` (a string from a file/request, or an already typed value)."""
    name = key.name
    t = key.type
    if raw is None:
        if key.default is None:
            return None
        raise InvalidConfigError(f"Invalid value null for configuration {name}")
    try:
        if t is ConfigType.BOOLEAN:
            if isinstance(raw, bool):
                value: Any = raw
            else:
                s = str(raw).strip().lower()
                if s not in ("true", "false"):
                    raise ValueError
                value = s == "true"
        elif t in (ConfigType.INT, ConfigType.LONG):
            if isinstance(raw, bool):
                raise ValueError
            value = raw if isinstance(raw, int) else int(str(raw).strip(), 10)
            lo, hi = (INT_MIN, INT_MAX) if t is ConfigType.INT else (LONG_MIN, LONG_MAX)
            if not lo <= value <= hi:
                raise ValueError
        elif t is ConfigType.DOUBLE:
            value = float(str(raw).strip())
        elif t is ConfigType.LIST:
            if isinstance(raw, (list, tuple, frozenset)):
                value = tuple(str(x).strip() for x in raw)
            else:
                s = str(raw).strip()
                value = tuple(x.strip() for x in s.split(",")) if s else ()
        else:
            value = str(raw).strip()
    except ValueError:
        raise InvalidConfigError(
            f"Invalid value {raw} for configuration {name}: Expected value to be a {_type_words(t)}"
        ) from None
    if key.validator is not None:
        key.validator(name, value)
    return value


def _type_words(t: ConfigType) -> str:
    return {
        ConfigType.BOOLEAN: "boolean (true or false)",
        ConfigType.INT: "32-bit integer",
        ConfigType.LONG: "64-bit integer",
        ConfigType.DOUBLE: "double",
    }.get(t, t.value)


def format_value(key: ConfigKey, value: Any) -> str | None:
    """Kafka's string form of a value (DescribeConfigs, checkpoints of overrides)."""
    if value is None:
        return None
    if key.type is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if key.type is ConfigType.LIST:
        return ",".join(value)
    return str(value)


# --------------------------------------------------------------------------
# Topic-level keys (LogConfig). Broker synonyms set their defaults.
# --------------------------------------------------------------------------

_HOURS = 3_600_000
_MINUTES = 60_000

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in (
        ConfigKey(
            "cleanup.policy",
            ConfigType.LIST,
            ("delete",),
            "Retention policy: 'delete' drops old segments, 'compact' keeps the latest"
            " record of each key (the log cleaner; keys required).",
            list_of("compact", "delete", allow_empty=True),
            synonyms=(("log.cleanup.policy", 1),),
        ),
        ConfigKey(
            "compression.type",
            ConfigType.STRING,
            "producer",
            "Final codec of the topic's batches; 'producer' keeps the producer's codec.",
            one_of(*COMPRESSION_TYPES, case_sensitive=False),
            synonyms=(("compression.type", 1),),
        ),
        ConfigKey(
            "compression.gzip.level",
            ConfigType.INT,
            -1,
            "gzip level when the broker compresses (-1 = zlib default, 6).",
            either(in_range(1, 9), in_range(-1, -1)),
            synonyms=(("compression.gzip.level", 1),),
        ),
        ConfigKey(
            "compression.lz4.level",
            ConfigType.INT,
            9,
            "lz4 level when the broker compresses (9 = the fast compressor).",
            in_range(1, 17),
            synonyms=(("compression.lz4.level", 1),),
        ),
        ConfigKey(
            "compression.zstd.level",
            ConfigType.INT,
            3,
            "zstd level when the broker compresses.",
            in_range(-131072, 22),
            synonyms=(("compression.zstd.level", 1),),
        ),
        ConfigKey(
            "delete.retention.ms",
            ConfigType.LONG,
            86_400_000,
            "How long the log cleaner keeps a tombstone (null value) after the cleaning that"
            " first saw it (its batch's delete horizon).",
            in_range(0),
            synonyms=(("log.cleaner.delete.retention.ms", 1),),
        ),
        ConfigKey(
            "file.delete.delay.ms",
            ConfigType.LONG,
            60_000,
            "Delay before a segment renamed .deleted is removed from disk.",
            in_range(0),
            synonyms=(("log.segment.delete.delay.ms", 1),),
        ),
        ConfigKey(
            "flush.messages",
            ConfigType.LONG,
            LONG_MAX,
            "fsync the log after this many messages since the last flush.",
            in_range(1),
            synonyms=(("log.flush.interval.messages", 1),),
        ),
        ConfigKey(
            "flush.ms",
            ConfigType.LONG,
            LONG_MAX,
            "fsync the log when this long has passed since the last flush.",
            in_range(0),
            synonyms=(("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
        ),
        ConfigKey(
            "index.interval.bytes",
            ConfigType.INT,
            4096,
            "Bytes appended between two offset-index entries.",
            in_range(0),
            synonyms=(("log.index.interval.bytes", 1),),
        ),
        ConfigKey(
            "max.compaction.lag.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Longest a record stays uncleaned: a log whose dirty records are older is cleaned"
            " whatever its dirty ratio (also caps segment.ms).",
            in_range(1),
            synonyms=(("log.cleaner.max.compaction.lag.ms", 1),),
        ),
        ConfigKey(
            "max.message.bytes",
            ConfigType.INT,
            1_048_588,
            "Largest record batch the topic accepts (after broker compression).",
            in_range(0),
            synonyms=(("message.max.bytes", 1),),
        ),
        ConfigKey(
            "message.downconversion.enable",
            ConfigType.BOOLEAN,
            True,
            "Whether Fetch v0-v3 may down-convert v2 batches for old consumers.",
            synonyms=(("log.message.downconversion.enable", 1),),
        ),
        ConfigKey(
            "message.format.version",
            ConfigType.STRING,
            "3.0-IV1",
            "Ignored (as in Kafka with inter.broker.protocol >= 3.0): batches are stored as v2.",
            synonyms=(("log.message.format.version", 1),),
            inert=True,
        ),
        ConfigKey(
            "message.timestamp.after.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Largest allowed amount a CreateTime timestamp may lie in the future.",
            in_range(0),
            synonyms=(("log.message.timestamp.after.max.ms", 1),),
        ),
        ConfigKey(
            "message.timestamp.before.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Largest allowed age of a CreateTime timestamp.",
            in_range(0),
            synonyms=(("log.message.timestamp.before.max.ms", 1),),
        ),
        ConfigKey(
            "message.timestamp.difference.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Deprecated (3.6): fallback for before/after.max.ms left at their default.",
            in_range(0),
            synonyms=(("log.message.timestamp.difference.max.ms", 1),),
        ),
        ConfigKey(
            "message.timestamp.type",
            ConfigType.STRING,
            "CreateTime",
            "CreateTime keeps the producer's timestamps; LogAppendTime stamps broker time.",
            one_of("CreateTime", "LogAppendTime"),
            synonyms=(("log.message.timestamp.type", 1),),
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio",
            ConfigType.DOUBLE,
            0.5,
            "Dirty bytes / all bytes of a compacted log above which the log cleaner cleans it.",
            in_range(0, 1),
            synonyms=(("log.cleaner.min.cleanable.ratio", 1),),
        ),
        ConfigKey(
            "min.compaction.lag.ms",
            ConfigType.LONG,
            0,
            "Least age of a record before the log cleaner may remove it (segments whose"
            " newest record is younger are not cleaned).",
            in_range(0),
            synonyms=(("log.cleaner.min.compaction.lag.ms", 1),),
        ),
        ConfigKey(
            "min.insync.replicas",
            ConfigType.INT,
            1,
            "Replicas that must acknowledge acks=all (one broker: only 1 can be met).",
            in_range(1),
            synonyms=(("min.insync.replicas", 1),),
        ),
        ConfigKey(
            "preallocate",
            ConfigType.BOOLEAN,
            False,
            "Preallocate new .log files to segment.bytes.",
            synonyms=(("log.preallocate", 1),),
        ),
        ConfigKey(
            "retention.bytes",
            ConfigType.LONG,
            -1,
            "Largest size of a partition's log before old segments are deleted (-1 = no limit).",
            synonyms=(("log.retention.bytes", 1),),
        ),
        ConfigKey(
            "retention.ms",
            ConfigType.LONG,
            604_800_000,
            "Age after which a segment is deleted (-1 = no limit).",
            in_range(-1),
            synonyms=(
                ("log.retention.ms", 1),
                ("log.retention.minutes", _MINUTES),
                ("log.retention.hours", _HOURS),
            ),
        ),
        ConfigKey(
            "segment.bytes",
            ConfigType.INT,
            1_073_741_824,
            "Size at which a new segment is rolled.",
            in_range(14),
            synonyms=(("log.segment.bytes", 1),),
        ),
        ConfigKey(
            "segment.index.bytes",
            ConfigType.INT,
            10_485_760,
            "Size of the preallocated offset and time index of the active segment.",
            in_range(4),
            synonyms=(("log.index.size.max.bytes", 1),),
        ),
        ConfigKey(
            "segment.jitter.ms",
            ConfigType.LONG,
            0,
            "Random jitter subtracted from segment.ms per segment.",
            in_range(0),
            synonyms=(("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOURS)),
        ),
        ConfigKey(
            "segment.ms",
            ConfigType.LONG,
            604_800_000,
            "Age of a segment's first batch after which a new segment is rolled.",
            in_range(1),
            synonyms=(("log.roll.ms", 1), ("log.roll.hours", _HOURS)),
        ),
        ConfigKey(
            "unclean.leader.election.enable",
            ConfigType.BOOLEAN,
            False,
            "Replication setting (one broker: no effect).",
            synonyms=(("unclean.leader.election.enable", 1),),
            inert=True,
        ),
    )
}


@dataclass(frozen=True)
class TopicConfig:
    """The effective configuration of one topic (``LogConfig``), typed.

    Build it with :meth:`BrokerConfig.topic_config` so broker defaults and
    topic overrides combine as in Kafka.
    """

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    delete_retention_ms: int = 86_400_000
    file_delete_delay_ms: int = 60_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    index_interval_bytes: int = 4096
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1_048_588
    message_downconversion_enable: bool = True
    message_format_version: str = "3.0-IV1"
    message_timestamp_after_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000
    segment_bytes: int = 1_073_741_824
    segment_index_bytes: int = 10_485_760
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000
    unclean_leader_election_enable: bool = False

    # ---- derived views used on the hot path -------------------------------

    @functools.cached_property
    def compacted(self) -> bool:
        """``cleanup.policy`` contains ``compact`` (case-insensitive); computed once
        (every produce reads it; the frozen instance never changes)."""
        return any(p.lower() == "compact" for p in self.cleanup_policy)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def timestamp_before_max_ms(self) -> int:
        """``LogConfig.getMessageTimestampBeforeMaxMs`` (3.6+): falls back to the
        deprecated difference key when left at Long.MAX."""
        if self.message_timestamp_before_max_ms != LONG_MAX:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def timestamp_after_max_ms(self) -> int:
        if self.message_timestamp_after_max_ms != LONG_MAX:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def max_segment_ms(self) -> int:
        """segment.ms, capped by max.compaction.lag.ms for compacted topics."""
        if self.compacted and self.max_compaction_lag_ms > 0:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    def with_overrides(self, overrides: Mapping[str, object]) -> TopicConfig:
        """A copy with topic-level keys (Kafka names) applied and validated."""
        changes = {}
        for name, raw in overrides.items():
            key = TOPIC_KEYS.get(name)
            if key is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            changes[attr_name(name)] = parse_value(key, raw)
        return dataclasses.replace(self, **changes)

    def value_of(self, name: str) -> Any:
        return getattr(self, attr_name(name))


def attr_name(name: str) -> str:
    """``segment.index.bytes`` -> ``segment_index_bytes``."""
    return name.replace(".", "_")


# --------------------------------------------------------------------------
# Broker-only keys
# --------------------------------------------------------------------------

#: the broker-only keys this module owns (the other owners': ``BROKER_KEY_OWNERS``)
_OWN_BROKER_KEYS = (
    ConfigKey("node.id", ConfigType.INT, 0, "Id of this broker.", in_range(0)),
    ConfigKey("broker.id", ConfigType.INT, None, "Alias of node.id.", in_range(0)),
    ConfigKey(
        "cluster.id",
        ConfigType.STRING,
        None,
        "Cluster id reported in Metadata; generated once and kept in meta.properties.",
    ),
    ConfigKey(
        "listeners",
        ConfigType.LIST,
        ("PLAINTEXT://0.0.0.0:9092",),
        "Listeners to bind, NAME://host:port,... (NAME a security protocol or a name"
        " of listener.security.protocol.map).",
    ),
    ConfigKey(
        "advertised.listeners",
        ConfigType.LIST,
        None,
        "Per listener name, the address given in Metadata to the clients of that"
        " listener; defaults to the listener's bound address.",
    ),
    ConfigKey(
        "log.dirs",
        ConfigType.LIST,
        None,
        "Comma-separated log directories (default: log.dir).",
    ),
    ConfigKey("log.dir", ConfigType.STRING, "./data", "Log directory used when log.dirs is unset."),
    ConfigKey(
        "num.partitions", ConfigType.INT, 1, "Partitions of auto-created topics.", in_range(1)
    ),
    ConfigKey(
        "default.replication.factor",
        ConfigType.INT,
        1,
        "Replication factor of auto-created topics (only 1 is possible here).",
        in_range(1, 1),
    ),
    ConfigKey(
        "auto.create.topics.enable",
        ConfigType.BOOLEAN,
        True,
        "Create unknown topics on Metadata and Produce requests.",
    ),
    ConfigKey("delete.topic.enable", ConfigType.BOOLEAN, True, "Allow DeleteTopics."),
    ConfigKey(
        "socket.request.max.bytes",
        ConfigType.INT,
        104_857_600,
        "Largest request frame; a larger one closes the connection.",
        in_range(1),
    ),
    ConfigKey(
        "socket.send.buffer.bytes",
        ConfigType.INT,
        102_400,
        "SO_SNDBUF of client sockets (-1 = OS default).",
        in_range(-1),
    ),
    ConfigKey(
        "socket.receive.buffer.bytes",
        ConfigType.INT,
        # Kafka: 102400. A fixed SO_RCVBUF turns off Linux's receive autotuning;
        # at 100 KB it doubled the broker's CPU per MB produced (docs/deviations.md)
        -1,
        "SO_RCVBUF of client sockets (-1 = OS default, autotuned).",
        in_range(-1),
    ),
    ConfigKey(
        "queued.max.request.bytes",
        ConfigType.LONG,
        # Kafka: -1, no bound (docs/deviations.md)
        536_870_912,
        "Receive buffer bytes all connections together may hold (partial frames"
        " included) before buffers stop growing; -1 or 0 = 512 MiB (Kafka's -1 means"
        " unbounded). At least socket.request.max.bytes.",
        in_range(-1),
    ),
    ConfigKey(
        "max.connections",
        ConfigType.INT,
        INT_MAX,
        "Connections open at once; a new one above it is closed at accept (Kafka"
        " blocks the acceptor). Also capped by the file descriptor limit.",
        in_range(0),
    ),
    ConfigKey(
        "max.connections.per.ip",
        ConfigType.INT,
        INT_MAX,
        "Connections open at once from one IP address; a new one above it is closed"
        " at accept. 0 only with max.connections.per.ip.overrides.",
        in_range(0),
    ),
    ConfigKey(
        "max.connections.per.ip.overrides",
        ConfigType.STRING,
        "",
        "Per-IP or hostname overrides of max.connections.per.ip, e.g."
        " 'hostName:100,127.0.0.1:200' (hostnames are resolved at start).",
        check_host_counts,
    ),
    ConfigKey(
        "connections.max.idle.ms",
        ConfigType.LONG,
        600_000,
        "A connection without a request in flight that received nothing and whose"
        " answers did not move for this long is closed (negative = never).",
    ),
    ConfigKey(
        "connection.frame.timeout.ms",
        ConfigType.LONG,
        30_000,
        "A request frame must arrive whole within this long of its first byte, or"
        " the connection is closed (this broker's; -1 = no limit).",
        either(in_range(1), in_range(-1, -1)),
    ),
    ConfigKey(
        "log.flush.offset.checkpoint.interval.ms",
        ConfigType.INT,
        60_000,
        "How often recovery-point-offset-checkpoint is written.",
        in_range(0),
    ),
    ConfigKey(
        "log.flush.start.offset.checkpoint.interval.ms",
        ConfigType.INT,
        60_000,
        "How often log-start-offset-checkpoint is written.",
        in_range(0),
    ),
    ConfigKey(
        "log.retention.check.interval.ms",
        ConfigType.LONG,
        300_000,
        "How often retention is applied.",
        in_range(1),
    ),
    ConfigKey(
        "num.recovery.threads.per.data.dir",
        ConfigType.INT,
        1,
        "Threads that load and recover partitions at start, per log dir.",
        in_range(1),
    ),
    ConfigKey(
        "producer.id.expiration.ms",
        ConfigType.INT,
        86_400_000,
        "Producer state of an idle producer id is dropped after this long.",
        in_range(1),
    ),
    ConfigKey(
        "connection.max.inflight.bytes",
        ConfigType.LONG,
        67_108_864,
        "Bytes one connection may have unanswered (requests in flight plus answers"
        " its client has not taken yet) before it stops reading and dispatching"
        " (this broker's; Kafka mutes a channel per request).",
        in_range(1),
    ),
    ConfigKey(
        "cluster.nodes",
        ConfigType.LIST,
        None,
        "Prototype (docs/scaling.md): the broker processes of one machine as id@host:port;"
        " partition p of a topic is led by the (p mod n)-th. Empty: this broker alone.",
    ),
    ConfigKey(
        "produce.inline.max.ms",
        ConfigType.LONG,
        5,
        "How long one produce request may validate on the event loop; its later"
        " partitions are validated on a worker thread (this broker's; Kafka has a pool"
        " of request handler threads).",
        in_range(0),
    ),
    ConfigKey(
        "produce.inline.max.cost",
        ConfigType.LONG,
        2_097_152,
        "Cost (about ns: a byte walked 1, inflated 1-4, compressed 2-64) one partition's"
        " validation may have on the event loop; a costlier one (a batch that inflates to"
        " megabytes, a recompression) runs on a worker thread (this broker's).",
        in_range(0),
    ),
    ConfigKey(
        "produce.offload.threads",
        ConfigType.INT,
        2,
        "Worker threads that validate the produce work too costly for the event loop"
        " (the codecs and compiled walks release the GIL there).",
        in_range(1),
    ),
    ConfigKey(
        "acks.all.fsync",
        ConfigType.BOOLEAN,
        True,
        "acks=all is answered after an fsync covering the batch (group commit); false"
        " answers after the append, like acks=1 (this broker's: it has no replicas).",
    ),
    ConfigKey(
        "acks.all.sync.method",
        ConfigType.STRING,
        "fsync",
        "How a group-commit round makes the logs it covers durable: fsync each log's"
        " files (Kafka's per-log flush), or syncfs, one call per file system for every"
        " log of the round. syncfs costs a third of the kernel CPU with many partitions"
        " but also writes back other programs' dirty data on that file system: use it"
        " for a data disk of the broker's own. Needs Linux 5.8 or later (this broker's).",
        one_of("fsync", "syncfs"),
    ),
    # LogCleaner (CleanerConfig.java): Kafka's keys and defaults
    ConfigKey(
        "log.cleaner.enable",
        ConfigType.BOOLEAN,
        True,
        "Run the log cleaner: compact topics are compacted only when it runs.",
    ),
    ConfigKey(
        "log.cleaner.threads",
        ConfigType.INT,
        1,
        "Log cleaner threads (each cleans one log at a time).",
        in_range(0),
    ),
    ConfigKey(
        "log.cleaner.dedupe.buffer.size",
        ConfigType.LONG,
        134_217_728,
        "Memory of the cleaners' offset maps (key hash -> offset, 24 bytes per key),"
        " shared among the threads.",
    ),
    ConfigKey(
        "log.cleaner.io.buffer.load.factor",
        ConfigType.DOUBLE,
        0.9,
        "How full an offset map may become before a cleaning stops adding keys.",
    ),
    ConfigKey(
        "log.cleaner.io.buffer.size",
        ConfigType.INT,
        524_288,
        "Memory of the cleaners' read and write buffers, shared among the threads.",
        in_range(0),
    ),
    ConfigKey(
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        1.7976931348623157e308,
        "Bytes per second the cleaners may read and write together.",
    ),
    ConfigKey(
        "log.cleaner.backoff.ms",
        ConfigType.LONG,
        15_000,
        "How long a cleaner thread sleeps when no log needs cleaning.",
        in_range(0),
    ),
    ConfigKey(
        "shutdown.timeout.ms",
        ConfigType.LONG,
        30_000,
        "On SIGTERM/SIGINT, how long in-flight requests may take before connections close.",
        in_range(0),
    ),
    ConfigKey(
        "metrics.enabled",
        ConfigType.BOOLEAN,
        True,
        "Record metrics on the request path; false leaves only build info on /metrics"
        " (benchmarks measure what recording costs with it).",
    ),
    ConfigKey(
        "metrics.listener",
        ConfigType.STRING,
        "0.0.0.0:9404",
        "host:port of the Prometheus endpoint (also /healthz, /readyz); empty = off.",
    ),
    ConfigKey(
        "authorizer.class.name",
        ConfigType.STRING,
        "",
        "Empty: no authorizer (every request is allowed). "
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer (or"
        " kafka.security.authorizer.AclAuthorizer): ACLs checked as Kafka's"
        " StandardAuthorizer does.",
        check_authorizer_class,
    ),
    ConfigKey(
        "super.users",
        ConfigType.STRING,
        None,
        "Principals allowed everything, semicolon-separated (User:admin;User:ops).",
        check_super_users,
    ),
    ConfigKey(
        "allow.everyone.if.no.acl.found",
        ConfigType.BOOLEAN,
        False,
        "With an authorizer: allow a request on a resource that no ACL names.",
    ),
)


def _all_broker_synonyms() -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for tk in TOPIC_KEYS.values():
        for syn, factor in tk.synonyms:
            out[syn] = (tk.name, factor)
    return out


#: broker key -> (topic key it defaults, unit factor)
BROKER_TOPIC_SYNONYMS: dict[str, tuple[str, int]] = _all_broker_synonyms()


#: every module that declares broker-only keys, and its keys; ``BROKER_KEYS`` is built from
#: these in this one place (an owner above this module in the layers, like the group
#: coordinator, declares its keys in a module of its own below it)
BROKER_KEY_OWNERS: Mapping[str, tuple[ConfigKey, ...]] = MappingProxyType(
    {
        "broker.config": _OWN_BROKER_KEYS,
        "broker.security_config": security_config.KEYS,
        "broker.group_config_keys": group_config_keys.KEYS,
        "broker.transaction_config_keys": transaction_config_keys.KEYS,
    }
)


def build_broker_keys(
    owners: Mapping[str, Iterable[ConfigKey]], topic_synonyms: Iterable[str]
) -> Mapping[str, ConfigKey]:
    """The table of broker-only keys from every owner's declarations; a name declared
    twice (by two owners, by one owner twice, or as a topic key's broker synonym)
    raises ValueError naming both declarers."""
    declared_by = dict.fromkeys(topic_synonyms, "a topic key's synonyms")
    table: dict[str, ConfigKey] = {}
    for owner, keys in owners.items():
        for key in keys:
            first = declared_by.setdefault(key.name, owner)
            if key.name in table or first != owner:
                raise ValueError(f"config key {key.name} declared by {first} and {owner}")
            table[key.name] = key
    return MappingProxyType(table)


#: every broker-only key, by name
BROKER_KEYS: Mapping[str, ConfigKey] = build_broker_keys(BROKER_KEY_OWNERS, BROKER_TOPIC_SYNONYMS)


def broker_key(name: str) -> ConfigKey | None:
    """The declaration of a broker-level key, synonyms of topic keys included."""
    key = BROKER_KEYS.get(name)
    if key is not None:
        return key
    syn = BROKER_TOPIC_SYNONYMS.get(name)
    if syn is None:
        # listener.name.<listener>.[<mechanism>.]<key> (broker/security_config.py)
        return security_config.listener_key(name, BROKER_KEYS)
    topic_key = TOPIC_KEYS[syn[0]]
    # the synonym has the topic key's type; hours/minutes are plain ints too.
    # Its default is Kafka's (KafkaConfig): in a list of synonyms only the last
    # one has a default, in its own unit (log.retention.hours=168,
    # log.roll.hours=168, log.flush.scheduler.interval.ms); the ones before it
    # are unset (log.retention.ms, log.retention.minutes, log.roll.ms).
    last, factor = topic_key.synonyms[-1]
    if name != last:
        default = None
    elif factor != 1:
        default = topic_key.default // factor
    else:
        default = topic_key.default
    return dataclasses.replace(topic_key, name=name, default=default, synonyms=())


def suggest_key(name: str) -> str | None:
    """The declared key closest to the unknown ``name`` (``difflib``), or None:
    ``num.partiton`` -> ``num.partitions``; a listener-prefixed name is matched
    within its prefix (``listener.name.ssl.ssl.keystore.locaton`` ->
    ``listener.name.ssl.ssl.keystore.location``)."""
    prefixed = security_config.listener_candidates(name, BROKER_KEYS)
    if prefixed is not None:
        prefix, rest, candidates = prefixed
        close = difflib.get_close_matches(rest, candidates, n=1)
        if close:
            return prefix + close[0]
    close = difflib.get_close_matches(name, [*BROKER_KEYS, *BROKER_TOPIC_SYNONYMS], n=1)
    return close[0] if close else None


def did_you_mean(name: str) -> str:
    """`` (did you mean <key>?)`` for an unknown key, or nothing."""
    close = suggest_key(name)
    return f" (did you mean {close}?)" if close else ""


@dataclass
class BrokerConfig:
    """Static broker configuration: ``server.properties`` plus overrides.

    ``values`` holds only what was set explicitly (parsed and validated);
    lookups fall back to the declared default.
    """

    values: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        values: dict[str, Any] = {}
        for name, raw in props.items():
            key = broker_key(name)
            if key is None:
                raise InvalidConfigError(f"Unknown configuration key: {name}{did_you_mean(name)}")
            values[name] = parse_value(key, raw)
        cfg = cls(values)
        cfg.topic_defaults()  # cross-key checks happen now, not at first use
        return cfg

    def get(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        key = broker_key(name)
        if key is None:
            raise KeyError(name)
        return key.default

    def is_set(self, name: str) -> bool:
        return name in self.values

    # ---- derived values -------------------------------------------------

    @property
    def node_id(self) -> int:
        if self.is_set("broker.id"):
            broker_id: int = self.values["broker.id"]
            return broker_id
        node_id: int = self.get("node.id")
        return node_id

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self.get("log.dirs")
        if not dirs:
            dirs = (self.get("log.dir"),)
        return [Path(d) for d in dirs]

    def topic_default_source(self, topic_key: str) -> tuple[Any, str | None]:
        """The broker-level value that defaults ``topic_key`` and the broker key
        it came from (None when the built-in default applies)."""
        key = TOPIC_KEYS[topic_key]
        for syn, factor in key.synonyms:
            if syn in self.values:
                value = self.values[syn]
                return (value * factor if factor != 1 else value), syn
        return key.default, None

    def topic_defaults(self) -> TopicConfig:
        changes = {}
        for name in TOPIC_KEYS:
            value, source = self.topic_default_source(name)
            if source is not None:
                changes[attr_name(name)] = value
        return dataclasses.replace(TopicConfig(), **changes)

    def topic_config(self, overrides: Mapping[str, object] | None = None) -> TopicConfig:
        base = self.topic_defaults()
        return base.with_overrides(overrides) if overrides else base


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (the subset Kafka configs use).

    ``#``/``!`` comments, ``key=value`` or ``key: value`` or ``key value``,
    trailing-backslash continuation lines, blank lines ignored.
    """
    props: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        sep = len(line)
        for i, ch in enumerate(line):
            if ch in "=: \t":
                sep = i
                break
        key = line[:sep].strip()
        rest = line[sep:].lstrip()
        if rest[:1] in ("=", ":"):
            rest = rest[1:]
        props[key] = rest.strip()
    return props


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """``["a=b", "c=d"]`` from ``--override`` flags."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InvalidConfigError(f"Malformed override {item!r}: expected key=value")
        out[name.strip()] = value.strip()
    return out
