"""Every metric of the broker, defined once; the only importer of prometheus_client.

Kafka's meters (``BrokerTopicMetrics.java``, ``RequestMetrics.java``, the ``Log``
gauges of ``UnifiedLog.newMetrics``, ``LogFlushStats``) become Prometheus-native
metrics: counters end in ``_total``, durations are ``_seconds``, sizes
``_bytes``; Kafka's histograms stay histograms. The JMX name behind each one is in
``docs/metrics.md``.

Lower layers never see prometheus_client: they get small recorder objects
(:class:`ValidatorRecorder`, :class:`FlushRecorder`, :class:`RecoveryRecorder`) or per-topic /
per-request bundles whose labelled children are bound once
(:meth:`BrokerMetrics.topic`, :meth:`BrokerMetrics.request`), so the hot path
pays one ``inc``/``observe`` per batch or per request, never per record.

Log gauges (end offset, start offset, size, segment count per partition) and
the log cleaner's gauges are read at scrape time from provider callables, so
appends pay nothing for them.

The counters and histograms the event loop updates are ``broker.meters``
objects (no lock, a C bisect per observation: several times cheaper),
exposed by :class:`_MeterCollector` under the same names, types and units
prometheus_client would give them; metrics fed from other threads (the log
flush timer, log recovery's counts) stay prometheus_client's locked ones.
"""

from __future__ import annotations

import platform
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client import Counter as PromCounter
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from broker.log.log_cleaner import CleanerSnapshot
from broker.meters import Counter, CounterFamily, HistogramFamily
from broker.meters import Histogram as FastHistogram

NAMESPACE = "kafka"

# ``*_created`` timestamp series double the exposition and no dashboard uses them
disable_created_metrics()  # type: ignore[no-untyped-call]

#: request-time buckets (seconds): Kafka reports whole ms, most requests take < 10 ms
TIME_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
#: temporary memory / request size buckets (bytes): 1 KiB .. 1 GiB by 4x
BYTE_BUCKETS = tuple(float(1024 * 4**i) for i in range(11))
# RequestMetrics.record puts a zero straight into the first bucket
if TIME_BUCKETS[0] <= 0 or BYTE_BUCKETS[0] <= 0:
    raise ValueError("the first bucket bound of every request histogram must be positive")

#: label value used once the distinct client software pairs reach the cap
OTHER_CLIENT = "other"
UNKNOWN_CLIENT = "unknown"


class LogSample(NamedTuple):
    """One partition's log gauges, as read at scrape time."""

    topic: str
    partition: int
    log_end_offset: int
    log_start_offset: int
    size_bytes: int
    num_segments: int


LogProvider = Callable[[], Iterable[LogSample]]
#: how many log dirs are offline (``LogManager.offline_log_dirs``)
OfflineDirsProvider = Callable[[], int]

#: consumer lag series exported at most (one per group, topic and partition with a
#: committed offset); the rest are counted in kafka_consumer_group_lag_series_dropped
MAX_LAG_SERIES = 1000


class GroupSample(NamedTuple):
    """The group coordinator's numbers, as read at scrape time."""

    #: (group type: classic or consumer, state) -> groups
    groups_by_state: Mapping[tuple[str, str], int]
    #: group type -> members
    members: Mapping[str, int]
    #: group type -> rebalances (classic: completed; consumer: group epoch bumps)
    rebalances: Mapping[str, int]
    #: time the completed classic rebalances took
    rebalance_seconds: float
    offset_commits: int
    offsets_expired: int
    #: (group, topic, partition, high watermark - committed offset)
    lags: Sequence[tuple[str, str, int, int]]


GroupProvider = Callable[[], GroupSample]


class ConnectionSample(NamedTuple):
    """The server's connection gauges, as read at scrape time."""

    receive_buffer_bytes: int
    paused: int


ConnectionProvider = Callable[[], ConnectionSample]


#: the log cleaner's gauges (``LogCleaner`` / ``LogCleanerManager``), read at scrape time:
#: the cleaner's own snapshot type
CleanerSample = CleanerSnapshot

CleanerProvider = Callable[[], CleanerSample]


class ValidatorRecorder:
    """The validator's metrics recorder (Kafka's ``newValidatorMetricsRecorder``).

    These four meters exist for all topics only, as in Kafka (``BrokerTopicMetrics``
    creates them for the all-topics instance only).
    """

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._magic = metrics.invalid_magic_number_records
        self._crc = metrics.invalid_message_crc_records
        self._offset = metrics.invalid_offset_or_sequence_records
        self._no_key = metrics.no_key_compacted_topic_records

    def record_invalid_magic(self, count: int = 1) -> None:
        self._magic.inc(count)

    def record_invalid_offset(self) -> None:
        self._offset.inc()

    def record_invalid_sequence(self) -> None:
        self._offset.inc()

    def record_invalid_checksums(self) -> None:
        self._crc.inc()

    def record_no_key_compacted_topic(self, count: int = 1) -> None:
        self._no_key.inc(count)


class FlushRecorder:
    """``LogFlushStats.LogFlushRateAndTimeMs``: one sample per segment flush."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._hist = metrics.log_flush_time

    def record_flush(self, seconds: float) -> None:
        self._hist.observe(seconds)


class RecoveryRecorder:
    """What log recovery removed at start-up (``broker.log.recovery_report``).

    Kafka has no metric for it, only log lines. Recovery runs in the log
    loader's worker threads, so these are prometheus_client's locked counters.
    """

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._truncations = metrics.log_recovery_truncations
        self._deleted = metrics.log_recovery_deleted_segments
        self._bytes = metrics.log_recovery_dropped_bytes

    def record_truncation(self, bytes_dropped: int) -> None:
        self._truncations.inc()
        self._bytes.inc(bytes_dropped)

    def record_deleted_segments(self, segments: int, bytes_dropped: int) -> None:
        self._deleted.inc(segments)
        self._bytes.inc(bytes_dropped)


class ConnectionMeters:
    """The server's connection recorder (``server/registry.ConnectionRecorder``):
    open connections, accepted, refused and expired by reason. The reasons
    the server names are bound at start, so their series exist from zero."""

    def __init__(
        self,
        metrics: BrokerMetrics,
        refusal_reasons: Iterable[str] = (),
        expiry_reasons: Iterable[str] = (),
    ) -> None:
        self._open = metrics.connections
        self._created = metrics.connections_created
        self._refused_family = metrics.connections_refused
        self._expired_family = metrics.connections_expired
        self._refused = {r: self._refused_family.labels(r) for r in refusal_reasons}
        self._expired = {r: self._expired_family.labels(r) for r in expiry_reasons}

    def opened(self) -> None:
        self._open.inc()
        self._created.inc()

    def closed(self) -> None:
        self._open.dec()

    def refused(self, reason: str) -> None:
        child = self._refused.get(reason)
        if child is None:
            child = self._refused[reason] = self._refused_family.labels(reason)
        child.inc()

    def expired(self, reason: str) -> None:
        child = self._expired.get(reason)
        if child is None:
            child = self._expired[reason] = self._expired_family.labels(reason)
        child.inc()


@dataclass(frozen=True)
class TopicMetrics:
    """``BrokerTopicMetrics`` of one topic, children bound once."""

    messages_in: Counter
    bytes_in: Counter
    bytes_out: Counter
    bytes_rejected: Counter
    produce_requests: Counter
    failed_produce_requests: Counter
    fetch_requests: Counter
    failed_fetch_requests: Counter
    produce_message_conversions: Counter
    fetch_message_conversions: Counter


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    """``RequestMetrics`` of one (API, version), children bound once."""

    requests: Counter
    queue_time: FastHistogram
    local_time: FastHistogram
    remote_time: FastHistogram
    response_send_time: FastHistogram
    total_time: FastHistogram
    request_bytes: FastHistogram
    #: None for APIs other than Produce and Fetch
    conversions_time: FastHistogram | None
    temporary_memory: FastHistogram | None

    def record(
        self,
        size: int,
        local_ns: int,
        remote_ns: int,
        total_ns: int,
        *,
        conversions_ns: int = 0,
        temporary_bytes: int = 0,
    ) -> None:
        """One request: what eight ``observe`` calls and an ``inc`` would record,
        in one call (a fraction of the separate calls' cost, docs/performance.md;
        issue 6 allows metrics 3% of a small request's produce path). Each value
        goes into its histogram as :meth:`FastHistogram.observe` puts it; a
        zero (queue time always, remote time for acks=0/1, conversion time
        and temporary memory when nothing was converted) goes straight into
        the first bucket, whose bound is positive (checked in
        :class:`BrokerMetrics`). The send time is what the total leaves after
        the local and remote times."""
        self.requests.value += 1
        h = self.request_bytes
        h.counts[bisect_left(h.bounds, size)] += 1
        h.sum += size
        self.queue_time.counts[0] += 1  # no request queue: handled on arrival
        v = local_ns / 1e9
        h = self.local_time
        h.counts[bisect_left(h.bounds, v)] += 1
        h.sum += v
        h = self.remote_time
        if remote_ns > 0:
            v = remote_ns / 1e9
            h.counts[bisect_left(h.bounds, v)] += 1
            h.sum += v
        else:
            h.counts[0] += 1
        send_ns = total_ns - local_ns - remote_ns
        h = self.response_send_time
        if send_ns > 0:
            v = send_ns / 1e9
            h.counts[bisect_left(h.bounds, v)] += 1
            h.sum += v
        else:
            h.counts[0] += 1
        v = total_ns / 1e9
        h = self.total_time
        h.counts[bisect_left(h.bounds, v)] += 1
        h.sum += v
        c = self.conversions_time
        if c is not None:
            if conversions_ns > 0:
                v = conversions_ns / 1e9
                c.counts[bisect_left(c.bounds, v)] += 1
                c.sum += v
            else:
                c.counts[0] += 1
        c = self.temporary_memory
        if c is not None:
            if temporary_bytes > 0:
                c.counts[bisect_left(c.bounds, temporary_bytes)] += 1
                c.sum += temporary_bytes
            else:
                c.counts[0] += 1


class _NullRequestMetrics:
    """``RequestMetrics`` of ``metrics.enabled=false``: records nothing."""

    def record(self, *args: int, **kwargs: int) -> None:
        pass


class _MeterCollector(Collector):
    """Exposes the ``broker.meters`` families as Prometheus metrics."""

    def __init__(self) -> None:
        self.counters: list[CounterFamily] = []
        self.histograms: list[HistogramFamily] = []

    def collect(self) -> Iterator[Metric]:
        for c in self.counters:
            cf = CounterMetricFamily(c.name, c.documentation, labels=list(c.labelnames))
            for values, value in c.samples():
                cf.add_metric(list(values), value)
            yield cf
        for h in self.histograms:
            les = [floatToGoString(b) for b in h.buckets] + ["+Inf"]  # type: ignore[no-untyped-call]
            hf = HistogramMetricFamily(h.name, h.documentation, labels=list(h.labelnames))
            for values, cumulative, total in h.samples():
                hf.add_metric(list(values), list(zip(les, cumulative, strict=True)), total)
            yield hf


class _LogCollector(Collector):
    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        leo = GaugeMetricFamily(
            f"{NAMESPACE}_log_end_offset",
            "Next offset to be assigned (Log.LogEndOffset).",
            labels=labels,
        )
        lso = GaugeMetricFamily(
            f"{NAMESPACE}_log_start_offset",
            "First offset still in the log (Log.LogStartOffset).",
            labels=labels,
        )
        size = GaugeMetricFamily(
            f"{NAMESPACE}_log_size_bytes", "Bytes of all segments (Log.Size).", labels=labels
        )
        segs = GaugeMetricFamily(
            f"{NAMESPACE}_log_segments", "Number of segments (Log.NumLogSegments).", labels=labels
        )
        offline = GaugeMetricFamily(
            f"{NAMESPACE}_log_offline_directories",
            "Log dirs taken offline by an I/O error (LogManager.OfflineLogDirectoryCount).",
        )
        count_offline = self._metrics.offline_dirs_provider
        offline.add_metric([], count_offline() if count_offline is not None else 0)
        provider = self._metrics.log_provider
        if provider is not None:
            for s in provider():
                lv = [s.topic, str(s.partition)]
                leo.add_metric(lv, s.log_end_offset)
                lso.add_metric(lv, s.log_start_offset)
                size.add_metric(lv, s.size_bytes)
                segs.add_metric(lv, s.num_segments)
        yield from (leo, lso, size, segs, offline)


class _ConnectionCollector(Collector):
    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        provider = self._metrics.connection_provider
        sample = provider() if provider is not None else ConnectionSample(0, 0)
        held = GaugeMetricFamily(
            f"{NAMESPACE}_network_receive_buffer_bytes",
            "Receive buffer bytes held by all connections, partial frames included,"
            " counted against queued.max.request.bytes (MemoryPoolUsed).",
        )
        held.add_metric([], sample.receive_buffer_bytes)
        paused = GaugeMetricFamily(
            f"{NAMESPACE}_network_connections_paused",
            "Connections not reading: at connection.max.inflight.bytes, or waiting for"
            " room in queued.max.request.bytes.",
        )
        paused.add_metric([], sample.paused)
        yield from (held, paused)


class _GroupCollector(Collector):
    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        groups = GaugeMetricFamily(
            f"{NAMESPACE}_consumer_groups",
            "Groups by type and state: classic (Empty, PreparingRebalance, CompletingRebalance,"
            " Stable) and consumer, KIP-848 (Empty, Assigning, Reconciling, Stable).",
            labels=["type", "state"],
        )
        members = GaugeMetricFamily(
            f"{NAMESPACE}_consumer_group_members",
            "Members of the groups of each type (classic, consumer).",
            labels=["type"],
        )
        rebalances = CounterMetricFamily(
            f"{NAMESPACE}_consumer_group_rebalances",
            "Rebalances: of classic groups the completed ones (Stable or Empty after"
            " PreparingRebalance); of consumer groups the group epoch bumps (each computes a new"
            " target assignment, Kafka's consumer-group-rebalance sensor).",
            labels=["type"],
        )
        rebalance_time = CounterMetricFamily(
            f"{NAMESPACE}_consumer_group_rebalance_seconds",
            "Time the completed classic rebalances took, from PreparingRebalance to Stable or"
            " Empty.",
        )
        commits = CounterMetricFamily(
            f"{NAMESPACE}_consumer_group_offset_commits", "Offsets committed (one per partition)."
        )
        expired = CounterMetricFamily(
            f"{NAMESPACE}_consumer_group_offsets_expired",
            "Committed offsets removed by offsets.retention.minutes.",
        )
        lag = GaugeMetricFamily(
            f"{NAMESPACE}_consumer_group_lag",
            "High watermark minus the committed offset, per group and partition"
            f" (at most {MAX_LAG_SERIES} series).",
            labels=["group", "topic", "partition"],
        )
        dropped = GaugeMetricFamily(
            f"{NAMESPACE}_consumer_group_lag_series_dropped",
            "Committed offsets whose lag is not exported (past the series cap).",
        )
        provider = self._metrics.group_provider
        if provider is not None:
            sample = provider()
            for (kind, state), count in sorted(sample.groups_by_state.items()):
                groups.add_metric([kind, state], count)
            for kind, count in sorted(sample.members.items()):
                members.add_metric([kind], count)
            for kind, count in sorted(sample.rebalances.items()):
                rebalances.add_metric([kind], count)
            rebalance_time.add_metric([], sample.rebalance_seconds)
            commits.add_metric([], sample.offset_commits)
            expired.add_metric([], sample.offsets_expired)
            for group, topic, partition, value in sample.lags[:MAX_LAG_SERIES]:
                lag.add_metric([group, topic, str(partition)], value)
            dropped.add_metric([], max(len(sample.lags) - MAX_LAG_SERIES, 0))
        yield from (groups, members, rebalances, rebalance_time, commits, expired, lag, dropped)


class _CleanerCollector(Collector):
    """Kafka's ``kafka.log:type=LogCleaner`` and ``type=LogCleanerManager`` gauges."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        # the families always exist (Kafka registers the gauges with the cleaner);
        # their samples need a cleaner
        provider = self._metrics.cleaner_provider
        s = provider() if provider is not None else None
        ns = f"{NAMESPACE}_log_cleaner"
        for name, doc, attr, scale in (
            (
                "max_buffer_utilization_percent",
                "Fullest offset map of the threads' last cleanings"
                " (max-buffer-utilization-percent).",
                "max_buffer_utilization_percent",
                1,
            ),
            (
                "recopy_percent",
                "Bytes written / bytes read by the threads' last cleanings"
                " (cleaner-recopy-percent).",
                "cleaner_recopy_percent",
                1,
            ),
            (
                "max_clean_time_seconds",
                "Longest of the threads' last cleanings (max-clean-time-secs).",
                "max_clean_time_secs",
                1,
            ),
            (
                "max_compaction_delay_seconds",
                "How far past max.compaction.lag.ms the oldest dirty record waited "
                "(max-compaction-delay-secs).",
                "max_compaction_delay_secs",
                1,
            ),
            (
                "dead_threads",
                "Cleaner threads that died of an unexpected error (DeadThreadCount).",
                "dead_thread_count",
                1,
            ),
            (
                "max_dirty_percent",
                "Dirty ratio of the dirtiest compacted log at the last look (max-dirty-percent).",
                "max_dirty_percent",
                1,
            ),
            (
                "time_since_last_run_seconds",
                "Time since a cleaner thread last looked for a log to clean "
                "(time-since-last-run-ms).",
                "time_since_last_run_ms",
                1000,
            ),
        ):
            family = GaugeMetricFamily(f"{ns}_{name}", doc)
            if s is not None:
                family.add_metric([], getattr(s, attr) / scale)
            yield family
        partitions = GaugeMetricFamily(
            f"{ns}_uncleanable_partitions",
            "Partitions whose cleaning failed, per log dir (uncleanable-partitions-count).",
            labels=["log_directory"],
        )
        uncleanable_bytes = GaugeMetricFamily(
            f"{ns}_uncleanable_bytes",
            "Cleanable bytes of those partitions, per log dir (uncleanable-bytes).",
            labels=["log_directory"],
        )
        for log_dir, (count, size) in sorted(s.uncleanable.items() if s is not None else ()):
            partitions.add_metric([log_dir], count)
            uncleanable_bytes.add_metric([log_dir], size)
        yield partitions
        yield uncleanable_bytes


class BrokerMetrics:
    """The broker's metric registry and the bundles handed to other layers."""

    def __init__(
        self,
        *,
        records_implementation: str,
        event_loop: str,
        version: str,
        max_client_label_values: int = 64,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.max_client_label_values = max_client_label_values
        self.log_provider: LogProvider | None = None
        self.offline_dirs_provider: OfflineDirsProvider | None = None
        #: the log cleaner's gauges (None: no cleaner, no series)
        self.cleaner_provider: CleanerProvider | None = None
        self.connection_provider: ConnectionProvider | None = None
        self.group_provider: GroupProvider | None = None
        r = self.registry
        ns = NAMESPACE
        meters = _MeterCollector()

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> CounterFamily:
            family = CounterFamily(f"{ns}_{name}", doc, labels)
            meters.counters.append(family)
            return family

        def hist(
            name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]
        ) -> HistogramFamily:
            family = HistogramFamily(f"{ns}_{name}", doc, labels, buckets)
            meters.histograms.append(family)
            return family

        t = ("topic",)
        # BrokerTopicMetrics, per topic; the all-topics value is sum() over topic
        self.messages_in = counter("topic_messages_in", "Records appended (MessagesInPerSec).", t)
        self.bytes_in = counter(
            "topic_bytes_in", "Produce request record bytes appended (BytesInPerSec).", t
        )
        self.bytes_out = counter(
            "topic_bytes_out", "Record bytes sent to consumers (BytesOutPerSec).", t
        )
        self.bytes_rejected = counter(
            "topic_bytes_rejected", "Record bytes rejected as too large (BytesRejectedPerSec).", t
        )
        self.produce_requests = counter(
            "topic_produce_requests", "Partitions produced to (TotalProduceRequestsPerSec).", t
        )
        self.failed_produce_requests = counter(
            "topic_failed_produce_requests",
            "Partition appends that failed (FailedProduceRequestsPerSec).",
            t,
        )
        self.fetch_requests = counter(
            "topic_fetch_requests", "Partitions fetched from (TotalFetchRequestsPerSec).", t
        )
        self.failed_fetch_requests = counter(
            "topic_failed_fetch_requests",
            "Partition fetches that failed (FailedFetchRequestsPerSec).",
            t,
        )
        self.produce_message_conversions = counter(
            "topic_produce_message_conversions",
            "Records the broker converted or recompressed on produce"
            " (ProduceMessageConversionsPerSec).",
            t,
        )
        self.fetch_message_conversions = counter(
            "topic_fetch_message_conversions",
            "Records down-converted for old consumers (FetchMessageConversionsPerSec).",
            t,
        )
        # all-topics-only meters of the validator
        self.invalid_magic_number_records = counter(
            "invalid_magic_number_records", "Batches or records with a wrong magic."
        )
        self.invalid_message_crc_records = counter(
            "invalid_message_crc_records", "Batches or inner records failing their CRC."
        )
        self.invalid_offset_or_sequence_records = counter(
            "invalid_offset_or_sequence_records",
            "Batches with inconsistent offsets, counts, sequences or control flags from clients.",
        )
        self.no_key_compacted_topic_records = counter(
            "no_key_compacted_topic_records", "Key-less records sent to compacted topics."
        )
        # beyond Kafka: who makes the broker convert
        self.client_message_conversions = counter(
            "client_message_conversions",
            "Records converted, by the client software that sent or fetched them"
            " (ApiVersions v3+; 'unknown' before, 'other' past the label cap).",
            ("request", "client_software_name", "client_software_version"),
        )
        # RequestMetrics
        rv = ("request", "version")
        self.requests = counter("requests", "Requests received (RequestsPerSec).", rv)
        self.request_errors = counter(
            "request_errors",
            "Error codes in responses, per partition (ErrorsPerSec).",
            ("request", "error"),
        )
        self.request_queue_time = hist(
            "request_queue_time_seconds",
            "Arrival to dispatch (RequestQueueTimeMs).",
            rv,
            TIME_BUCKETS,
        )
        self.request_local_time = hist(
            "request_local_time_seconds",
            "Processing by the broker (LocalTimeMs).",
            rv,
            TIME_BUCKETS,
        )
        self.request_remote_time = hist(
            "request_remote_time_seconds",
            "Waiting for durability (acks=all fsync) or data (fetch long-poll) (RemoteTimeMs).",
            rv,
            TIME_BUCKETS,
        )
        self.request_response_send_time = hist(
            "request_response_send_time_seconds",
            "Handing the response to the socket (ResponseSendTimeMs).",
            rv,
            TIME_BUCKETS,
        )
        self.request_total_time = hist(
            "request_total_time_seconds",
            "Arrival to response sent (TotalTimeMs).",
            rv,
            TIME_BUCKETS,
        )
        self.request_bytes = hist(
            "request_size_bytes", "Request sizes (RequestBytes).", ("request",), BYTE_BUCKETS
        )
        self.message_conversions_time = hist(
            "request_message_conversions_time_seconds",
            "Conversion time of one partition of each request (MessageConversionsTimeMs).",
            ("request",),
            TIME_BUCKETS,
        )
        self.temporary_memory = hist(
            "request_temporary_memory_bytes",
            "Temporary memory used for validation and conversion (TemporaryMemoryBytes).",
            ("request",),
            BYTE_BUCKETS,
        )
        # the authorizer (AclAuthorizer's authorization-denied-rate-per-minute, by request)
        self.authorization_failure_family = counter(
            "authorization_failures",
            "Resources a request was refused by the authorizer, by request, resource type and"
            " operation (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED).",
            ("request", "resource_type", "operation"),
        )
        self.acls = Gauge(
            "authorizer_acls",
            "ACLs the authorizer holds (acls-total-count); 0 without an authorizer.",
            namespace=ns,
            registry=r,
        )
        # LogFlushStats
        self.log_flush_time = Histogram(
            "log_flush_time_seconds",
            "Duration of one segment flush (LogFlushRateAndTimeMs).",
            namespace=ns,
            registry=r,
            buckets=TIME_BUCKETS,
        )
        # log recovery (no Kafka meter: LogLoader only logs what it cuts)
        self.log_recovery_truncations = PromCounter(
            "log_recovery_truncations",
            "Segments whose invalid or torn tail log recovery cut at start-up.",
            namespace=ns,
            registry=r,
        )
        self.log_recovery_deleted_segments = PromCounter(
            "log_recovery_deleted_segments",
            "Segments log recovery deleted because an earlier segment of the partition was cut.",
            namespace=ns,
            registry=r,
        )
        self.log_recovery_dropped_bytes = PromCounter(
            "log_recovery_dropped_bytes",
            "Bytes log recovery removed: cut tails and the segments deleted after them.",
            namespace=ns,
            registry=r,
        )
        # network
        self.connections = Gauge(
            "network_connections", "Open client connections.", namespace=ns, registry=r
        )
        self.connections_created = counter("network_connections_created", "Connections accepted.")
        self.connections_refused = counter(
            "network_connections_refused",
            "New connections closed at accept because max.connections or"
            " max.connections.per.ip was reached.",
            ("reason",),
        )
        self.connections_expired = counter(
            "network_connections_expired",
            "Connections closed for a time limit: idle for connections.max.idle.ms, or a"
            " frame slower than connection.frame.timeout.ms.",
            ("reason",),
        )
        # listeners and authentication (Kafka's per-listener socket-server and
        # successful-/failed-authentication-total metrics)
        self.listener_connections = Gauge(
            "network_listener_connections",
            "Open client connections by listener.",
            ("listener",),
            namespace=ns,
            registry=r,
        )
        self.authentications = counter(
            "network_authentications",
            "SASL authentications (and re-authentications) by listener, mechanism and"
            " result (success, failure).",
            ("listener", "mechanism", "result"),
        )
        self.tls_handshake_failures = counter(
            "network_tls_handshake_failures",
            "TLS handshakes that failed, by listener and reason (certificate, protocol,"
            " incomplete: stalled or closed; tls_on_plaintext: a TLS client on a listener"
            " without TLS).",
            ("listener", "reason"),
        )
        self.tls_reloads = counter(
            "network_tls_reloads",
            "TLS key and trust stores reloaded without a restart, by listener and result.",
            ("listener", "result"),
        )
        self.build_info = Gauge(
            "broker_build_info",
            "Always 1; labels say which implementation runs.",
            ("version", "records_implementation", "event_loop", "python"),
            namespace=ns,
            registry=r,
        )
        self.build_info.labels(
            version, records_implementation, event_loop, platform.python_version()
        ).set(1)
        r.register(meters)
        r.register(_LogCollector(self))
        r.register(_CleanerCollector(self))
        r.register(_ConnectionCollector(self))
        r.register(_GroupCollector(self))

        self.validator_recorder = ValidatorRecorder(self)
        self.flush_recorder = FlushRecorder(self)
        self.recovery_recorder = RecoveryRecorder(self)
        self._topics: dict[str, TopicMetrics] = {}
        self._requests: dict[tuple[str, int], RequestMetrics] = {}
        self._clients: dict[tuple[str, str, str], Counter] = {}
        self._client_pairs: set[tuple[str, str]] = set()
        self._denials: dict[tuple[str, str, str], Counter] = {}

    # ---- bundles -----------------------------------------------------------

    def connection_meters(
        self, refusal_reasons: Iterable[str] = (), expiry_reasons: Iterable[str] = ()
    ) -> ConnectionMeters:
        return ConnectionMeters(self, refusal_reasons, expiry_reasons)

    def handshake_failed(self, listener: str, reason: str) -> None:
        """``server/tls_handshakes.HandshakeRecorder``."""
        self.tls_handshake_failures.labels(listener, reason).inc()

    def authenticated(self, listener: str, mechanism: str, success: bool) -> None:
        self.authentications.labels(listener, mechanism, "success" if success else "failure").inc()

    def session_expired(self, listener: str) -> None:
        """A SASL session outlived (KIP-368): the connection is closed."""
        self.connections_expired.labels("sasl_session").inc()

    def listener_opened(self, listener: str) -> None:
        self.listener_connections.labels(listener).inc()

    def listener_closed(self, listener: str) -> None:
        self.listener_connections.labels(listener).dec()

    def topic(self, topic: str) -> TopicMetrics:
        tm = self._topics.get(topic)
        if tm is None:
            tm = TopicMetrics(
                self.messages_in.labels(topic),
                self.bytes_in.labels(topic),
                self.bytes_out.labels(topic),
                self.bytes_rejected.labels(topic),
                self.produce_requests.labels(topic),
                self.failed_produce_requests.labels(topic),
                self.fetch_requests.labels(topic),
                self.failed_fetch_requests.labels(topic),
                self.produce_message_conversions.labels(topic),
                self.fetch_message_conversions.labels(topic),
            )
            self._topics[topic] = tm
        return tm

    def forget_topic(self, topic: str) -> None:
        """Drop a deleted topic's series (as Kafka removes its per-topic meters)."""
        if self._topics.pop(topic, None) is None:
            return
        for c in (
            self.messages_in,
            self.bytes_in,
            self.bytes_out,
            self.bytes_rejected,
            self.produce_requests,
            self.failed_produce_requests,
            self.fetch_requests,
            self.failed_fetch_requests,
            self.produce_message_conversions,
            self.fetch_message_conversions,
        ):
            c.remove(topic)

    def request(self, api: str, version: int) -> RequestMetrics:
        key = (api, version)
        rm = self._requests.get(key)
        if rm is None:
            v = str(version)
            converts = api in ("Produce", "Fetch")
            rm = RequestMetrics(
                self.requests.labels(api, v),
                self.request_queue_time.labels(api, v),
                self.request_local_time.labels(api, v),
                self.request_remote_time.labels(api, v),
                self.request_response_send_time.labels(api, v),
                self.request_total_time.labels(api, v),
                self.request_bytes.labels(api),
                self.message_conversions_time.labels(api) if converts else None,
                self.temporary_memory.labels(api) if converts else None,
            )
            self._requests[key] = rm
        return rm

    def record_error(self, api: str, error_name: str, count: int = 1) -> None:
        self.request_errors.labels(api, error_name).inc(count)

    def error_counter(self, api: str, error_name: str) -> Counter:
        """The ErrorsPerSec child of (API, error), for callers that keep it."""
        return self.request_errors.labels(api, error_name)

    def client_conversions(
        self, request: str, software_name: str | None, software_version: str | None
    ) -> Counter:
        """The per-client conversions counter, with a cap on distinct clients.

        Client software name and version come from the client (ApiVersions
        v3+), so a hostile client could invent a new pair per connection: past
        ``max_client_label_values`` distinct pairs, new ones count as 'other'.
        """
        name = software_name or UNKNOWN_CLIENT
        ver = software_version or UNKNOWN_CLIENT
        pair = (name, ver)
        if pair not in self._client_pairs:
            if len(self._client_pairs) >= self.max_client_label_values:
                name = ver = OTHER_CLIENT
            else:
                self._client_pairs.add(pair)
        key = (request, name, ver)
        child = self._clients.get(key)
        if child is None:
            child = self.client_message_conversions.labels(request, name, ver)
            self._clients[key] = child
        return child

    def authorization_failures(self, request: str, resource_type: str, operation: str) -> Counter:
        """Denials of one API on one resource type and operation (bounded labels:
        no principal, no resource name)."""
        key = (request, resource_type, operation)
        child = self._denials.get(key)
        if child is None:
            child = self._denials[key] = self.authorization_failure_family.labels(*key)
        return child

    # ---- exposition ------------------------------------------------------

    def render(self) -> bytes:
        return generate_latest(self.registry)


# ---- recording switched off (``metrics.enabled=false``) --------------------------------------


class _NoOp:
    """Stands in for a counter or a histogram child: every call does nothing."""

    def inc(self, amount: float = 1) -> None:
        pass

    def dec(self, amount: float = 1) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass


_NOOP = _NoOp()

#: what ``BrokerMetrics.request`` / ``NullMetrics.request`` give
RequestRecorder = RequestMetrics | _NullRequestMetrics
#: what ``BrokerMetrics.error_counter`` / ``NullMetrics.error_counter`` give
ErrorCounter = Counter | _NoOp


class _NullConnectionMeters:
    def opened(self) -> None:
        pass

    def closed(self) -> None:
        pass

    def refused(self, reason: str) -> None:
        pass

    def expired(self, reason: str) -> None:
        pass


class _NullRecorder:
    def record_invalid_magic(self, count: int = 1) -> None:
        pass

    def record_invalid_offset(self) -> None:
        pass

    def record_invalid_sequence(self) -> None:
        pass

    def record_invalid_checksums(self) -> None:
        pass

    def record_no_key_compacted_topic(self, count: int = 1) -> None:
        pass

    def record_flush(self, seconds: float) -> None:
        pass

    def record_truncation(self, bytes_dropped: int) -> None:
        pass

    def record_deleted_segments(self, segments: int, bytes_dropped: int) -> None:
        pass


class NullMetrics:
    """The same interface as :class:`BrokerMetrics`, recording nothing.

    ``metrics.enabled=false`` wires this into the request path, so a
    benchmark can measure what recording costs in the same run; the
    endpoint then serves only the build-info metric.
    """

    def __init__(self, real: BrokerMetrics) -> None:
        self._real = real
        noop: _NoOp = _NOOP
        recorder = _NullRecorder()
        self.validator_recorder = recorder
        self.flush_recorder = recorder
        self.recovery_recorder = recorder
        self._topic = TopicMetrics(*([noop] * 10))  # type: ignore[arg-type]
        self._request = _NullRequestMetrics()
        self.log_provider: LogProvider | None = None
        self.offline_dirs_provider: OfflineDirsProvider | None = None
        self.cleaner_provider: CleanerProvider | None = None

    def connection_meters(
        self, refusal_reasons: Iterable[str] = (), expiry_reasons: Iterable[str] = ()
    ) -> _NullConnectionMeters:
        return _NullConnectionMeters()

    def topic(self, topic: str) -> TopicMetrics:
        return self._topic

    def forget_topic(self, topic: str) -> None:
        pass

    def request(self, api: str, version: int) -> _NullRequestMetrics:
        return self._request

    def record_error(self, api: str, error_name: str, count: int = 1) -> None:
        pass

    def error_counter(self, api: str, error_name: str) -> _NoOp:
        return _NOOP

    def client_conversions(
        self, request: str, software_name: str | None, software_version: str | None
    ) -> _NoOp:
        return _NOOP

    def authorization_failures(self, request: str, resource_type: str, operation: str) -> _NoOp:
        return _NOOP

    def render(self) -> bytes:
        return self._real.render()
