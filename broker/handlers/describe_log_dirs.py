"""DescribeLogDirs (key 35), versions 0-4.

Behaviour (``KafkaApis.handleDescribeLogDirsRequest``, ``ReplicaManager.describeLogDirs``):
- Authorization (with an authorizer): DESCRIBE on the cluster, else no
  results and CLUSTER_AUTHORIZATION_FAILED (the top-level error code, v3+;
  older versions get the empty list only).
- One result per configured log dir (absolute path), in configuration order,
  listing the requested partitions it holds (topics null = every partition):
  partition_size is the bytes of its segments, offset_lag 0 (the log end
  offset is the high watermark: one replica), is_future_key false (no
  replica moves between dirs). Topics with none of the requested partitions
  in a dir are left out; requested partitions that do not exist are
  absent, as in Kafka.
- v4: total_bytes and usable_bytes of the dir's file system (statvfs).
  A dir that cannot be read -> KAFKA_STORAGE_ERROR for that dir.

Version notes:
- v1: same as v0. v2+: flexible. v3+: top-level error_code. v4+:
  total_bytes, usable_bytes.
"""

from __future__ import annotations

import logging
import os

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.log.unified_log import UnifiedLog
from broker.protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from broker.security.acl import AclOperation

log = logging.getLogger(__name__)


class DescribeLogDirsHandler(RequestHandler[DescribeLogDirsRequest]):
    API_KEY = 35
    MIN_VERSION = 0
    MAX_VERSION = 4

    def handle(self, ctx: RequestContext, request: DescribeLogDirsRequest) -> Reply:
        if not self.authorize_cluster(ctx, AclOperation.DESCRIBE):
            ctx.count_error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            return DescribeLogDirsResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[]
            )
        lm = self.broker.log_manager
        wanted: set[tuple[str, int]] | None = None
        if request.topics is not None:
            wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
        by_dir: dict[str, dict[str, list[UnifiedLog]]] = {}
        for log_ in lm.all_logs():
            tp = log_.topic_partition
            if wanted is None or (tp.topic, tp.partition) in wanted:
                in_dir = by_dir.setdefault(str(log_.dir.parent), {})
                in_dir.setdefault(tp.topic, []).append(log_)
        results = []
        for log_dir in lm.log_dirs:
            path = str(log_dir)
            try:
                stat = os.statvfs(path)
            except OSError as exc:
                log.warning("cannot describe log dir %s: %s", path, exc)
                ctx.count_error(ErrorCode.KAFKA_STORAGE_ERROR)
                results.append(
                    DescribeLogDirsResponse.DescribeLogDirsResult(
                        error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path, topics=[]
                    )
                )
                continue
            topics = [
                DescribeLogDirsResponse.DescribeLogDirsTopic(
                    name=topic,
                    partitions=[
                        DescribeLogDirsResponse.DescribeLogDirsPartition(
                            partition_index=lg.topic_partition.partition,
                            partition_size=lg.size,
                            offset_lag=0,
                            is_future_key=False,
                        )
                        for lg in sorted(logs, key=lambda lg: lg.topic_partition.partition)
                    ],
                )
                for topic, logs in sorted(by_dir.get(path, {}).items())
            ]
            ctx.count_error(ErrorCode.NONE)
            results.append(
                DescribeLogDirsResponse.DescribeLogDirsResult(
                    error_code=ErrorCode.NONE,
                    log_dir=path,
                    topics=topics,
                    total_bytes=stat.f_blocks * stat.f_frsize,
                    usable_bytes=stat.f_bavail * stat.f_frsize,
                )
            )
        return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=results)
