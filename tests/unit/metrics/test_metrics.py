"""Metric catalogue: names, label caps, scrape-time log gauges."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from broker.metrics import OTHER_CLIENT, BrokerMetrics, CleanerSample, LogSample


def make() -> BrokerMetrics:
    return BrokerMetrics(records_implementation="compiled", event_loop="uvloop", version="0.1.0")


def samples(m: BrokerMetrics) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(m.render().decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_topic_bundle_is_bound_once_and_counts():
    m = make()
    assert m.topic("a") is m.topic("a")
    m.topic("a").messages_in.inc(3)
    m.topic("a").produce_message_conversions.inc(7)
    s = samples(m)
    assert s[("kafka_topic_messages_in_total", (("topic", "a"),))] == 3
    assert s[("kafka_topic_produce_message_conversions_total", (("topic", "a"),))] == 7


def test_forget_topic_removes_its_series():
    m = make()
    m.topic("gone").bytes_in.inc(10)
    m.forget_topic("gone")
    assert not any(labels == (("topic", "gone"),) for (_, labels) in samples(m))


def test_client_label_values_are_capped():
    m = make()
    m.max_client_label_values = 3
    for i in range(10):
        m.client_conversions("Produce", f"evil-{i}", "1").inc()
    m.client_conversions("Produce", "evil-0", "1").inc()  # a known pair keeps its label
    s = samples(m)
    names = {
        dict(labels)["client_software_name"]
        for (n, labels) in s
        if n == "kafka_client_message_conversions_total"
    }
    assert names == {"evil-0", "evil-1", "evil-2", OTHER_CLIENT}
    key = (
        "kafka_client_message_conversions_total",
        (
            ("client_software_name", OTHER_CLIENT),
            ("client_software_version", OTHER_CLIENT),
            ("request", "Produce"),
        ),
    )
    assert s[key] == 7


def test_unknown_client_software_is_labelled_unknown():
    m = make()
    m.client_conversions("Fetch", None, None).inc(2)
    s = samples(m)
    key = (
        "kafka_client_message_conversions_total",
        (
            ("client_software_name", "unknown"),
            ("client_software_version", "unknown"),
            ("request", "Fetch"),
        ),
    )
    assert s[key] == 2


def test_log_gauges_are_read_at_scrape_time():
    m = make()
    state = {"leo": 5}
    m.log_provider = lambda: [LogSample("t", 0, state["leo"], 0, 100, 1)]
    assert samples(m)[("kafka_log_end_offset", (("partition", "0"), ("topic", "t")))] == 5
    state["leo"] = 9
    assert samples(m)[("kafka_log_end_offset", (("partition", "0"), ("topic", "t")))] == 9


def test_offline_log_dirs_are_read_at_scrape_time():
    m = make()
    assert samples(m)[("kafka_log_offline_directories", ())] == 0
    offline = {"count": 1}
    m.offline_dirs_provider = lambda: offline["count"]
    assert samples(m)[("kafka_log_offline_directories", ())] == 1


def test_log_cleaner_gauges_are_read_at_scrape_time():
    m = make()
    assert not [k for k in samples(m) if k[0].startswith("kafka_log_cleaner")]
    state = {"dead": 0}
    m.cleaner_provider = lambda: CleanerSample(
        40, 12, 3, 7, state["dead"], 66, 1500, {"/d1": (2, 4096), "/d2": (0, 0)}
    )
    got = samples(m)
    assert got[("kafka_log_cleaner_max_buffer_utilization_percent", ())] == 40
    assert got[("kafka_log_cleaner_recopy_percent", ())] == 12
    assert got[("kafka_log_cleaner_max_clean_time_seconds", ())] == 3
    assert got[("kafka_log_cleaner_max_compaction_delay_seconds", ())] == 7
    assert got[("kafka_log_cleaner_max_dirty_percent", ())] == 66
    assert got[("kafka_log_cleaner_time_since_last_run_seconds", ())] == 1.5
    assert got[("kafka_log_cleaner_uncleanable_partitions", (("log_directory", "/d1"),))] == 2
    assert got[("kafka_log_cleaner_uncleanable_bytes", (("log_directory", "/d1"),))] == 4096
    assert got[("kafka_log_cleaner_dead_threads", ())] == 0
    state["dead"] = 1
    assert samples(m)[("kafka_log_cleaner_dead_threads", ())] == 1


def test_request_bundle_has_conversion_histograms_only_for_produce_and_fetch():
    m = make()
    assert m.request("Produce", 9).conversions_time is not None
    assert m.request("Fetch", 4).temporary_memory is not None
    assert m.request("Metadata", 12).conversions_time is None


def test_validator_recorder_feeds_all_topic_meters():
    m = make()
    r = m.validator_recorder
    r.record_invalid_magic()
    r.record_invalid_checksums()
    r.record_invalid_offset()
    r.record_invalid_sequence()
    r.record_no_key_compacted_topic()
    s = samples(m)
    assert s[("kafka_invalid_magic_number_records_total", ())] == 1
    assert s[("kafka_invalid_message_crc_records_total", ())] == 1
    assert s[("kafka_invalid_offset_or_sequence_records_total", ())] == 2
    assert s[("kafka_no_key_compacted_topic_records_total", ())] == 1


def test_recovery_recorder_counts_cuts_deleted_segments_and_bytes_from_threads():
    import threading

    m = make()
    s = samples(m)
    for name in ("truncations", "deleted_segments", "dropped_bytes"):
        assert s[(f"kafka_log_recovery_{name}_total", ())] == 0  # present before any recovery
    r = m.recovery_recorder

    def recover() -> None:
        for _ in range(1000):
            r.record_truncation(3)
            r.record_deleted_segments(2, 5)

    threads = [threading.Thread(target=recover) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = samples(m)
    assert s[("kafka_log_recovery_truncations_total", ())] == 4000
    assert s[("kafka_log_recovery_deleted_segments_total", ())] == 8000
    assert s[("kafka_log_recovery_dropped_bytes_total", ())] == 4000 * 8


def test_build_info_names_the_records_implementation():
    m = make()
    s = samples(m)
    (labels,) = [dict(lb) for (n, lb) in s if n == "kafka_broker_build_info"]
    assert labels["records_implementation"] == "compiled"
    assert labels["event_loop"] == "uvloop"


def test_null_metrics_record_nothing_but_keep_build_info():
    from broker.metrics import NullMetrics

    real = make()
    null = NullMetrics(real)
    null.topic("t").messages_in.inc(5)
    null.request("Produce", 9).record(100, 1_000, 0, 2_000, conversions_ns=5, temporary_bytes=7)
    null.client_conversions("Produce", "x", "1").inc(3)
    null.validator_recorder.record_invalid_magic()
    null.recovery_recorder.record_truncation(10)
    null.recovery_recorder.record_deleted_segments(1, 10)
    null.record_error("Produce", "NONE")
    s = samples(real)
    assert not any(n.startswith("kafka_topic_") for (n, _) in s)
    assert not any(n == "kafka_requests_total" for (n, _) in s)
    assert s[("kafka_invalid_magic_number_records_total", ())] == 0
    assert s[("kafka_log_recovery_dropped_bytes_total", ())] == 0
    assert any(n == "kafka_broker_build_info" for (n, _) in s)


def _observe_one_by_one(rm, size, local_ns, remote_ns, total_ns, conversions_ns, temporary):
    """The reference: what RequestMetrics.record stands for, as separate calls."""
    rm.requests.inc()
    rm.request_bytes.observe(size)
    rm.queue_time.observe(0.0)
    rm.local_time.observe(local_ns / 1e9)
    rm.remote_time.observe(remote_ns / 1e9)
    rm.response_send_time.observe(max(total_ns - local_ns - remote_ns, 0) / 1e9)
    rm.total_time.observe(total_ns / 1e9)
    if rm.conversions_time is not None:
        rm.conversions_time.observe(conversions_ns / 1e9)
        rm.temporary_memory.observe(temporary)


@settings(max_examples=300, deadline=None)
@given(
    api=st.sampled_from(["Produce", "Fetch", "Metadata"]),
    requests=st.lists(
        st.tuples(
            st.integers(0, 2**31),  # size
            st.integers(0, 10**10),  # local ns
            st.sampled_from([0, 1, 99_999, 100_000, 100_001, 10**9, 10**11]),  # remote ns
            st.integers(-(10**6), 10**10),  # total ns beyond local + remote (may undershoot)
            st.sampled_from([0, 1, 250_000, 10**12]),  # conversions ns
            st.sampled_from([0, 1, 1024, 1025, 2**40]),  # temporary bytes
        ),
        max_size=20,
    ),
)
def test_request_record_equals_the_separate_observations(api, requests):
    fused, reference = make(), make()
    for size, local_ns, remote_ns, extra_ns, conversions_ns, temporary in requests:
        total_ns = local_ns + remote_ns + extra_ns
        fused.request(api, 9).record(
            size,
            local_ns,
            remote_ns,
            total_ns,
            conversions_ns=conversions_ns,
            temporary_bytes=temporary,
        )
        _observe_one_by_one(
            reference.request(api, 9),
            size,
            local_ns,
            remote_ns,
            total_ns,
            conversions_ns,
            temporary,
        )
    got, want = samples(fused), samples(reference)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_connection_meters_count_open_accepted_refused_and_expired():
    m = make()
    meters = m.connection_meters(("max_connections", "max_connections_per_ip"), ("idle",))
    s = samples(m)
    # the reasons the server names exist from the start, at zero
    assert s[("kafka_network_connections_refused_total", (("reason", "max_connections"),))] == 0
    assert s[("kafka_network_connections_expired_total", (("reason", "idle"),))] == 0
    meters.opened()
    meters.opened()
    meters.closed()
    meters.refused("max_connections_per_ip")
    meters.expired("idle")
    meters.expired("frame_timeout")  # a reason not bound at start still counts
    s = samples(m)
    assert s[("kafka_network_connections", ())] == 1
    assert s[("kafka_network_connections_created_total", ())] == 2
    assert (
        s[("kafka_network_connections_refused_total", (("reason", "max_connections_per_ip"),))] == 1
    )
    assert s[("kafka_network_connections_expired_total", (("reason", "frame_timeout"),))] == 1


def test_connection_gauges_are_read_at_scrape_time():
    from broker.metrics import ConnectionSample

    m = make()
    s = samples(m)
    assert s[("kafka_network_receive_buffer_bytes", ())] == 0
    m.connection_provider = lambda: ConnectionSample(receive_buffer_bytes=123456, paused=2)
    s = samples(m)
    assert s[("kafka_network_receive_buffer_bytes", ())] == 123456
    assert s[("kafka_network_connections_paused", ())] == 2


def test_null_connection_meters_record_nothing():
    from broker.metrics import NullMetrics

    real = make()
    meters = NullMetrics(real).connection_meters(("max_connections",), ("idle",))
    meters.opened()
    meters.refused("max_connections")
    meters.expired("idle")
    s = samples(real)
    assert s[("kafka_network_connections", ())] == 0
    assert not any(n == "kafka_network_connections_refused_total" for (n, _) in s)
