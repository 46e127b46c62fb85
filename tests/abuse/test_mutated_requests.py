"""Real produce requests with random bytes changed and their CRCs recomputed.

The CRC check passes, so every mutation reaches the framing, the codecs and
the record walks. Whatever the damage, the broker answers with one of
Kafka's error codes for bad records (never UNKNOWN_SERVER_ERROR), keeps the
connection, and a good producer on another connection is never refused.
Bounded: a fixed seed and a fixed number of mutations per batch kind.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.errors import ErrorCode
from broker.records import scan
from broker.records.batch import MAGIC_V1, CompressionType
from broker.records.builder import build_v2_batch
from broker.records.legacy_builder import build_legacy
from broker.records.record import SimpleRecord
from tests.abuse import payloads
from tests.abuse.good_producer import GoodProducer, small_batch
from tests.integration.harness import BrokerProcess
from tests.integration.wire import RawClient, create_topics_on_disk, produce_request

MUTATIONS = 120 if scan.IMPLEMENTATION == "compiled" else 40
NOW_RECORDS = [
    SimpleRecord(1_700_000_000_000 + i, b"key-%d" % i, b"value-%d" % i * 20, (("h", b"v"),))
    for i in range(50)
]
#: what damaged records may be answered with (Kafka's codes for bad input)
ALLOWED = {
    ErrorCode.NONE,
    ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.INVALID_RECORD,
    ErrorCode.INVALID_TIMESTAMP,
    ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE,
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    ErrorCode.UNKNOWN_PRODUCER_ID,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.INVALID_TXN_STATE,
}


def _v2(codec: int) -> bytes:
    return bytes(build_v2_batch(NOW_RECORDS, compression_type=codec).buffer)


KINDS = {
    **{f"v2 {c.name.lower()}": (_v2(c), 9, False) for c in CompressionType},
    "v1 gzip wrapper": (
        bytes(build_legacy([SimpleRecord(r.timestamp, r.key, r.value) for r in NOW_RECORDS],
                           magic=MAGIC_V1, compression_type=CompressionType.GZIP).buffer),
        2,
        True,
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data: Path = tmp_path_factory.mktemp("mutated") / "data"
    create_topics_on_disk(data, {"good": (1, {}), "bad": (4, {})})
    process = BrokerProcess(data, auto_create_topics_enable="false").start()
    yield process
    assert process.stop() == 0, process.log()


@pytest.mark.parametrize("kind", list(KINDS))
def test_mutated_batches_get_kafka_error_codes(broker, kind):
    batch, version, legacy = KINDS[kind]
    rng = random.Random(f"{kind}-18")
    seen: set[int] = set()
    with GoodProducer(broker.port) as good, RawClient(broker.port, timeout=60) as client:
        for i in range(MUTATIONS):
            flips = 1 + i % 4
            bad = (payloads.mutated_legacy if legacy else payloads.mutated)(batch, rng, flips)
            response = client.call(produce_request({("bad", i % 4): bad}), version)
            (part,) = response.responses[0].partition_responses
            assert part.error_code in ALLOWED, (part.error_code, part.error_message)
            seen.add(part.error_code)
        # the same connection still appends a good batch
        response = client.call(produce_request({("bad", 0): small_batch()}), 9)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    good.check()
    # the mutations did reach the checks behind the CRC
    assert seen - {ErrorCode.NONE}, seen
    assert "Traceback" not in broker.log()
