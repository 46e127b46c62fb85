"""The group coordinator's errors (``org.apache.kafka.common.errors``), carrying Kafka's codes.

Raised inside the coordinator and turned into a response's error code by
whoever answers (``error.code``); ``GroupError(code, message)`` covers the
codes without a class of their own.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError


class GroupError(KafkaError):
    """A group error with the code given at construction."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or code.name)
        self._code = code

    @property
    def code(self) -> ErrorCode:
        return self._code


def unknown_member(message: str = "") -> GroupError:
    return GroupError(ErrorCode.UNKNOWN_MEMBER_ID, message)


def group_id_not_found(group_id: str) -> GroupError:
    return GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")


def append_error_to_response_error(code: ErrorCode) -> ErrorCode:
    """``GroupMetadataManager.appendGroupMetadataErrorToResponseError`` (also what
    ``GroupCoordinatorService.handleOperationException`` maps a write failure to), but a
    record too large for ``__consumer_offsets`` stays MESSAGE_TOO_LARGE: Kafka answers
    UNKNOWN_SERVER_ERROR, which tells the client nothing (docs/deviations.md)."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.MESSAGE_TOO_LARGE
    if code is ErrorCode.INVALID_FETCH_SIZE:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code
