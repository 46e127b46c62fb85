"""The APIs this codec speaks: key, name, valid and flexible version ranges.

Derived from the schemas (``schemas/``), so a range is stated once. The
handler registry answers ApiVersions from this table and rejects versions
outside ``min_version..max_version`` with UNSUPPORTED_VERSION.

    key  name                     versions  flexible
      0  Produce                  0-11      9+
      1  Fetch                    0-17      12+
      2  ListOffsets              0-9       6+
      3  Metadata                 0-12      9+
      8  OffsetCommit             0-9       8+
      9  OffsetFetch              0-9       6+
     10  FindCoordinator          0-6       3+
     11  JoinGroup                0-9       6+
     12  Heartbeat                0-4       4+
     13  LeaveGroup               0-5       4+
     14  SyncGroup                0-5       4+
     15  DescribeGroups           0-5       5+
     16  ListGroups               0-5       3+
     18  ApiVersions              0-4       3+   (response header always v0)
     19  CreateTopics             0-7       5+
     20  DeleteTopics             0-6       4+
     21  DeleteRecords            0-2       2+
     22  InitProducerId           0-5       2+
     23  OffsetForLeaderEpoch     0-4       4+
     29  DescribeAcls             0-3       2+
     30  CreateAcls               0-3       2+
     31  DeleteAcls               0-3       2+
     32  DescribeConfigs          0-4       4+
     33  AlterConfigs             0-2       2+
     35  DescribeLogDirs          0-4       2+
     37  CreatePartitions         0-3       2+
     42  DeleteGroups             0-2       2+
     44  IncrementalAlterConfigs  0-1       1+
     47  OffsetDelete             0         none
     60  DescribeCluster          0-1       0+
     68  ConsumerGroupHeartbeat   0-1       0+
     69  ConsumerGroupDescribe    0-1       0+
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from broker.protocol.schema import MessageSpec, Versions
from broker.protocol.schemas import API_MESSAGES

API_VERSIONS_KEY = 18


@dataclass(frozen=True)
class ApiKey:
    key: int
    #: Kafka's name (``ApiKeys.name``), e.g. "Produce"
    name: str
    min_version: int
    max_version: int
    flexible: Versions
    request: MessageSpec
    response: MessageSpec

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    @property
    def first_flexible_version(self) -> int:
        return self.flexible.low


def _build() -> dict[int, ApiKey]:
    table = {}
    for request, response in API_MESSAGES:
        if (request.api_key, request.valid, request.flexible) != (
            response.api_key,
            response.valid,
            response.flexible,
        ):
            raise AssertionError(f"{request.name} and {response.name} disagree on versions")
        high = request.valid.high
        if high is None:
            raise AssertionError(f"{request.name} needs a closed version range")
        table[request.api_key] = ApiKey(
            key=request.api_key,
            name=request.name.removesuffix("Request"),
            min_version=request.valid.low,
            max_version=high,
            flexible=request.flexible,
            request=request,
            response=response,
        )
    return table


#: every API this codec speaks, by key (read-only)
API_KEYS: Mapping[int, ApiKey] = MappingProxyType(_build())
