"""Hand-written descriptions of the Kafka messages this broker speaks, grouped by API.

Each module transcribes Kafka 3.9's
``clients/src/main/resources/common/message/<Name>{Request,Response}.json``
into the DSL of ``broker/protocol/schema.py`` (field names in snake_case,
every version range, nullable range, default and tag kept) and shows the
wire layout in its docstring. ``API_MESSAGES`` pairs each request with its
response, in API-key order.
"""

from __future__ import annotations

from broker.protocol.schema import MessageSpec
from broker.protocol.schemas.acls import (
    CREATE_ACLS_REQUEST,
    CREATE_ACLS_RESPONSE,
    DELETE_ACLS_REQUEST,
    DELETE_ACLS_RESPONSE,
    DESCRIBE_ACLS_REQUEST,
    DESCRIBE_ACLS_RESPONSE,
)
from broker.protocol.schemas.api_versions import API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE
from broker.protocol.schemas.cluster import (
    DESCRIBE_CLUSTER_REQUEST,
    DESCRIBE_CLUSTER_RESPONSE,
    DESCRIBE_LOG_DIRS_REQUEST,
    DESCRIBE_LOG_DIRS_RESPONSE,
    FIND_COORDINATOR_REQUEST,
    FIND_COORDINATOR_RESPONSE,
)
from broker.protocol.schemas.configs import (
    ALTER_CONFIGS_REQUEST,
    ALTER_CONFIGS_RESPONSE,
    DESCRIBE_CONFIGS_REQUEST,
    DESCRIBE_CONFIGS_RESPONSE,
    INCREMENTAL_ALTER_CONFIGS_REQUEST,
    INCREMENTAL_ALTER_CONFIGS_RESPONSE,
)
from broker.protocol.schemas.fetch import FETCH_REQUEST, FETCH_RESPONSE
from broker.protocol.schemas.init_producer_id import (
    INIT_PRODUCER_ID_REQUEST,
    INIT_PRODUCER_ID_RESPONSE,
)
from broker.protocol.schemas.metadata import METADATA_REQUEST, METADATA_RESPONSE
from broker.protocol.schemas.offsets import (
    DELETE_RECORDS_REQUEST,
    DELETE_RECORDS_RESPONSE,
    LIST_OFFSETS_REQUEST,
    LIST_OFFSETS_RESPONSE,
    OFFSET_FOR_LEADER_EPOCH_REQUEST,
    OFFSET_FOR_LEADER_EPOCH_RESPONSE,
)
from broker.protocol.schemas.produce import PRODUCE_REQUEST, PRODUCE_RESPONSE
from broker.protocol.schemas.topics import (
    CREATE_PARTITIONS_REQUEST,
    CREATE_PARTITIONS_RESPONSE,
    CREATE_TOPICS_REQUEST,
    CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_REQUEST,
    DELETE_TOPICS_RESPONSE,
)

API_MESSAGES: tuple[tuple[MessageSpec, MessageSpec], ...] = tuple(
    sorted(
        [
            (PRODUCE_REQUEST, PRODUCE_RESPONSE),
            (FETCH_REQUEST, FETCH_RESPONSE),
            (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
            (METADATA_REQUEST, METADATA_RESPONSE),
            (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
            (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
            (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
            (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
            (DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
            (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
            (OFFSET_FOR_LEADER_EPOCH_REQUEST, OFFSET_FOR_LEADER_EPOCH_RESPONSE),
            (DESCRIBE_ACLS_REQUEST, DESCRIBE_ACLS_RESPONSE),
            (CREATE_ACLS_REQUEST, CREATE_ACLS_RESPONSE),
            (DELETE_ACLS_REQUEST, DELETE_ACLS_RESPONSE),
            (DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
            (ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
            (DESCRIBE_LOG_DIRS_REQUEST, DESCRIBE_LOG_DIRS_RESPONSE),
            (CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
            (INCREMENTAL_ALTER_CONFIGS_REQUEST, INCREMENTAL_ALTER_CONFIGS_RESPONSE),
            (DESCRIBE_CLUSTER_REQUEST, DESCRIBE_CLUSTER_RESPONSE),
        ],
        key=lambda pair: pair[0].api_key,
    )
)
