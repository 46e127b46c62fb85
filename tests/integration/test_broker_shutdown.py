"""Clean shutdown of a broker process, and the log dir lock.

* SIGTERM while a confluent-kafka producer (acks=1) and a raw idempotent
  producer (acks=all) are sending: exit code 0, "shut down cleanly" in the
  log, ``.kafka_cleanshutdown`` in the log dir, every acknowledged record
  stored at its offset.
* The restart skips recovery (the log manager says so, 0 segments
  recovered) and still knows the idempotent producer: replaying its last
  acknowledged request is answered with the original offsets, nothing stored.
* A second broker on the same log dir refuses to start with a clear message
  and a non-zero exit code, while the first keeps serving.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.errors import ErrorCode
from tests.integration.harness import BrokerProcess, free_port
from tests.integration.load import ConfluentLoad, RawLoad, acknowledged, check_acknowledged
from tests.integration.wire import (
    RawClient,
    check_contiguous,
    ensure_topic,
    produce_request,
    stored_batches,
)

pytestmark = pytest.mark.integration

TOPIC = "shutdown"
PARTITIONS = 2


def test_sigterm_under_load_is_clean_and_restart_skips_recovery(tmp_path: Path) -> None:
    with contextlib.ExitStack() as cleanup:  # nothing outlives a failed assertion
        sigterm_under_load(tmp_path / "data", cleanup)


def sigterm_under_load(data: Path, cleanup: contextlib.ExitStack) -> None:
    broker = BrokerProcess(data, num_partitions=PARTITIONS).start()
    cleanup.callback(broker.kill)  # a no-op once it has stopped
    confluent = ConfluentLoad(broker.bootstrap, TOPIC, PARTITIONS, "c", acks=1)
    raw = RawLoad(broker.port, TOPIC, PARTITIONS, "r")
    cleanup.callback(confluent.stop_event.set)
    cleanup.callback(raw.stop_event.set)
    raw.start()
    time.sleep(0.3)  # the raw producer creates the topic
    confluent.start()
    time.sleep(1.5)
    assert confluent.is_alive() and raw.is_alive()
    started = time.monotonic()
    code = broker.stop()
    stop_s = time.monotonic() - started
    raw.finish()
    confluent.finish()
    log = broker.log()
    assert code == 0, log
    assert stop_s < 10, stop_s
    assert "shut down cleanly" in log and "Traceback" not in log, log
    assert (data / ".kafka_cleanshutdown").exists()
    acked = acknowledged([confluent], [raw])
    assert len(confluent.acked) > 100 and len(raw.acked) > 5
    assert check_acknowledged(data, TOPIC, PARTITIONS, acked) >= len(acked)

    restarted = BrokerProcess(data, num_partitions=PARTITIONS).start()
    cleanup.callback(restarted.kill)
    try:
        log = restarted.log()
        assert "Skipping recovery of 2 logs from" in log, log
        assert "(0 segments recovered)" in log and "Attempting recovery" not in log, log
        assert not (data / ".kafka_cleanshutdown").exists()  # deleted at load (KAFKA-10471)

        # the producer state survived: the last acknowledged request is a duplicate
        last = raw.acked[-1]
        before = check_contiguous(stored_batches(data, TOPIC, last.partition))
        with RawClient(restarted.port) as client:
            resp = client.call(produce_request({(TOPIC, last.partition): last.request}, acks=-1), 9)
        (p,) = resp.responses[0].partition_responses
        assert p.error_code == ErrorCode.NONE
        assert p.base_offset == last.base_offset
        assert check_contiguous(stored_batches(data, TOPIC, last.partition)) == before
    finally:
        assert restarted.stop() == 0


def test_a_second_broker_on_the_same_log_dir_refuses_to_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(data) as first:
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "broker",
                "serve",
                "--override",
                f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
                "--override",
                f"metrics.listener=127.0.0.1:{free_port()}",
                "--override",
                f"log.dirs={data}",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert second.returncode != 0
        err = second.stderr.decode()
        assert f"Failed to acquire lock on file .lock in {data}" in err, err
        assert "Traceback" not in err, err
        # the first broker is undisturbed
        with RawClient(first.port) as client:
            assert ensure_topic(client, "still-here") == 1
    assert (data / ".kafka_cleanshutdown").exists()
