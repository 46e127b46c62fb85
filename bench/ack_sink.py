"""An ack-only Kafka sink: the upper bound a broker's produce path is compared with.

``python -m bench.ack_sink --port P [--partitions N]`` serves, on 127.0.0.1:

* ApiVersions -- exactly the broker's API list and version ranges (read from
  ``broker.handlers.registry.HANDLER_CLASSES``), so a client negotiates the
  same versions and features (message format, codecs) against both;
* Metadata -- every requested topic exists with N partitions led by the sink;
* Produce -- success for every partition, base offsets counted from each
  batch's record count (4 bytes of its header); acks=0 gets no answer;
* Fetch -- every requested partition answered at once as an empty, idle log
  (no records, high watermark 0), whatever max_wait_ms says: the floor of a
  consumer polling partitions that have nothing new.

Nothing is validated, decompressed or stored; any other API closes the
connection. Frames are cut from one receive buffer and answered in order.
Prints ``ready <port>`` on stdout once listening.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
from typing import Any

from broker.handlers.registry import HANDLER_CLASSES
from broker.protocol import decode_request, encode_response, parse_request_header
from broker.protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    MetadataResponse,
    ProduceResponse,
)

_SIZE = struct.Struct(">i")
_COUNT = struct.Struct(">i")
API_VERSIONS = sorted((c.API_KEY, c.MIN_VERSION, c.MAX_VERSION) for c in HANDLER_CLASSES)


class Sink:
    def __init__(self, port: int, partitions: int) -> None:
        self.port = port
        self.partitions = partitions
        self.next_offset: dict[tuple[str, int], int] = {}

    def answer(self, frame: memoryview) -> Any:
        header = parse_request_header(frame)
        key = header.api_key
        if key == 0:
            request = decode_request(header, frame)
            topics = []
            for td in request.topic_data:
                parts = []
                for pd in td.partition_data:
                    tp = (td.name, pd.index)
                    base = self.next_offset.get(tp, 0)
                    records = pd.records
                    count = _COUNT.unpack_from(records, 57)[0] if len(records) >= 61 else 1
                    self.next_offset[tp] = base + count
                    parts.append(
                        ProduceResponse.PartitionProduceResponse(
                            index=pd.index,
                            error_code=0,
                            base_offset=base,
                            log_append_time_ms=-1,
                            log_start_offset=0,
                        )
                    )
                topics.append(
                    ProduceResponse.TopicProduceResponse(name=td.name, partition_responses=parts)
                )
            if request.acks == 0:
                return None
            return encode_response(header, ProduceResponse(responses=topics)).segments
        if key == 1:
            request = decode_request(header, frame)
            body = FetchResponse(
                responses=[
                    FetchResponse.FetchableTopicResponse(
                        topic=t.topic,
                        topic_id=t.topic_id,
                        partitions=[
                            FetchResponse.PartitionData(
                                partition_index=p.partition,
                                error_code=0,
                                high_watermark=0,
                                last_stable_offset=0,
                                log_start_offset=0,
                                aborted_transactions=None,
                                records=b"",
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ],
            )
            return encode_response(header, body).segments
        if key == 18:
            # above v4 the broker answers a v0 body with UNSUPPORTED_VERSION (KIP-511)
            unsupported = header.api_version > 4
            body = ApiVersionsResponse(
                error_code=35 if unsupported else 0,
                api_keys=[
                    ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                    for k, lo, hi in API_VERSIONS
                ],
            )
            return encode_response(header, body, version=0 if unsupported else None).segments
        if key == 3:
            request = decode_request(header, frame)
            names = [t.name for t in request.topics or []]
            body = MetadataResponse(
                brokers=[
                    MetadataResponse.MetadataResponseBroker(
                        node_id=0, host="127.0.0.1", port=self.port, rack=None
                    )
                ],
                cluster_id="ack-sink",
                controller_id=0,
                topics=[
                    MetadataResponse.MetadataResponseTopic(
                        error_code=0,
                        name=name,
                        is_internal=False,
                        partitions=[
                            MetadataResponse.MetadataResponsePartition(
                                error_code=0,
                                partition_index=p,
                                leader_id=0,
                                leader_epoch=0,
                                replica_nodes=[0],
                                isr_nodes=[0],
                                offline_replicas=[],
                            )
                            for p in range(self.partitions)
                        ],
                    )
                    for name in names
                ],
            )
            return encode_response(header, body).segments
        raise ConnectionError(f"API key {key} is not served by the sink")


class SinkProtocol(asyncio.Protocol):
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        view = memoryview(buf)
        pos = 0
        out: list[Any] = []
        try:
            while len(buf) - pos >= 4:
                (size,) = _SIZE.unpack_from(buf, pos)
                if len(buf) - pos - 4 < size:
                    break
                segments = self.sink.answer(view[pos + 4 : pos + 4 + size])
                if segments:
                    out += [bytes(s) for s in segments]
                pos += 4 + size
        except Exception:
            view.release()
            assert self.transport is not None
            self.transport.abort()
            return
        view.release()
        if pos:
            del buf[:pos]
        if out and self.transport is not None:
            self.transport.writelines(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--partitions", type=int, default=1)
    args = parser.parse_args()

    async def serve() -> None:
        sink = Sink(args.port, args.partitions)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: SinkProtocol(sink), "127.0.0.1", args.port)
        print(f"ready {args.port}", flush=True)
        async with server:
            await server.serve_forever()

    import uvloop

    uvloop.run(serve())


if __name__ == "__main__":
    main()
