"""The log of denied requests (Kafka's ``kafka.authorizer.logger``), rate-limited.

Kafka logs every denial of a resource a client asked for at INFO
(``StandardAuthorizerData.logAuditMessage``)::

    Principal = User:alice is Denied operation = Write from host = 10.0.0.7 on
    resource = Topic:LITERAL:orders for request = Produce

A producer retrying a denied topic would repeat that line for every request,
so the same denial (principal, host, operation, resource, request) is logged
at most once per ``REPEAT_INTERVAL_S``; the count of every denial is in the
``kafka_authorization_failures_total`` metric. Denials a client did not ask
to be told about (Metadata filtering the topic list, authorized operations)
are only logged at DEBUG.
"""

from __future__ import annotations

import logging
import time

from broker.security.acl import AclOperation, ResourceType

log = logging.getLogger("broker.authorizer")

#: the same denial is logged at most once in this many seconds
REPEAT_INTERVAL_S = 60.0
#: distinct denials remembered; past this the memory starts again empty
MAX_REMEMBERED = 4096


class AuditLog:
    def __init__(self) -> None:
        self._last: dict[tuple[str, str, int, int, str, str], float] = {}

    def denied(
        self,
        *,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        request: str,
    ) -> bool:
        """Log one denial (unless logged lately); True when a line was written."""
        key = (principal, host, int(operation), int(resource_type), name, request)
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < REPEAT_INTERVAL_S:
            return False
        if len(self._last) >= MAX_REMEMBERED:
            self._last.clear()
        self._last[key] = now
        log.info(
            "Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s "
            "for request = %s",
            principal,
            operation.pascal,
            host,
            resource_type.pascal,
            name,
            request,
        )
        return True
