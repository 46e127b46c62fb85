"""Small additions to :mod:`tests.integration.wire` for the read-back tests.

* :func:`produce` -- one uncompressed (or compressed) v2 batch through a
  :class:`~tests.integration.wire.RawClient` (Produce v9, acks=1), checked,
  returning its base offset.
* :func:`metric_samples` / :func:`metric_sum` -- samples of one metric in the
  broker's Prometheus text, read by a line scan (the full parser costs tens of
  milliseconds per call on a big exposition, and some tests read it per case).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from broker.records.builder import build_v2_batch
from broker.records.record import SimpleRecord
from tests.integration.wire import RawClient, only_partition, produce_request


def v2_batch(
    values: Sequence[bytes], *, timestamp: int | None = None, compression_type: int = 0
) -> bytes:
    """A v2 batch of keyless records, as a client would send it."""
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    records = [SimpleRecord(ts, None, v) for v in values]
    return bytes(build_v2_batch(records, compression_type=compression_type).buffer)


def produce(client: RawClient, topic: str, values: Sequence[bytes]) -> int:
    """Produce v9 (acks=1) of one batch to partition 0; the base offset."""
    p = only_partition(client.call(produce_request({(topic, 0): v2_batch(values)}), 9))
    assert p.error_code == 0, p
    return int(p.base_offset)


_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metric_samples(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    """(labels, value) of every sample called ``name`` in Prometheus text
    (label values as escaped in the text: ours need no unescaping)."""
    out = []
    for line in exposition.splitlines():
        if not line.startswith(name) or line[len(name) : len(name) + 1] not in ("{", " "):
            continue
        head, _, value = line.rpartition(" ")
        out.append((dict(_LABEL.findall(head)), float(value)))
    return out


def metric_sum(exposition: str, name: str, **labels: str) -> float:
    """Sum of the samples called ``name`` whose labels include ``labels``."""
    return sum(
        value
        for got, value in metric_samples(exposition, name)
        if all(got.get(k) == v for k, v in labels.items())
    )
