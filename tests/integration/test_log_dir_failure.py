"""A broker whose only log dir is deleted under it stops, as Kafka does.

The first checkpoint tick that cannot write in the dir takes it offline
(one ``Disk error while writing recovery offsets checkpoint`` line, no
traceback per tick); with no log dir left the broker says ``Shutdown broker
because all log dirs in ... have failed`` and exits with code 1, so a
supervisor restarts it on a working disk instead of it acknowledging writes
to files nobody can read back.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.harness import BrokerProcess
from tests.integration.netutil import produce
from tests.integration.wire import RawClient, ensure_topic

pytestmark = pytest.mark.integration


def test_a_broker_whose_log_dir_is_deleted_exits_with_code_1(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, **{"log.flush.offset.checkpoint.interval.ms": 200})
    broker.start()
    try:
        with RawClient(broker.port) as client:
            ensure_topic(client, "gone")
            assert produce(client, "gone", [b"before"]) == 0
        shutil.rmtree(data)
        code = broker.wait_exit(60)
    finally:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.kill()
    log = broker.log()
    assert code == 1, log
    assert "Disk error while writing recovery offsets checkpoint in directory" in log
    assert log.count("Stopping serving logs in dir") == 1, log
    assert "Shutdown broker because all log dirs in" in log
    assert "shut down with 1 of 1 log dirs offline" in log
    assert "shut down cleanly" not in log
    assert "Traceback" not in log, log
