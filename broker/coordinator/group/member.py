"""ClassicGroupMember: one member of a classic group (Kafka's ``ClassicGroupMember``).

A member carries its supported protocols in preference order
(``(name, metadata)`` pairs from its JoinGroup), its timeouts, its
assignment, and the replies parked for it: the JoinGroup waiting for the
join phase to end and the SyncGroup waiting for the leader's assignment.
"""

from __future__ import annotations

from broker.delayed import DelayedReply
from broker.protocol.messages import JoinGroupResponse, SyncGroupResponse

Protocols = tuple[tuple[str, bytes], ...]
EMPTY_ASSIGNMENT = b""


class ClassicGroupMember:
    __slots__ = (
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "client_host",
        "client_id",
        "group_instance_id",
        "is_new",
        "member_id",
        "protocol_type",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "supported_protocols",
    )

    def __init__(
        self,
        member_id: str,
        *,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        supported_protocols: Protocols,
        assignment: bytes = EMPTY_ASSIGNMENT,
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = supported_protocols
        self.assignment = assignment
        self.awaiting_join: DelayedReply[JoinGroupResponse] | None = None
        self.awaiting_sync: DelayedReply[SyncGroupResponse] | None = None
        self.is_new = False

    def __repr__(self) -> str:
        return (
            f"ClassicGroupMember(member_id={self.member_id!r}, "
            f"group_instance_id={self.group_instance_id!r}, client_id={self.client_id!r})"
        )

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def has_satisfied_heartbeat(self) -> bool:
        """New members expire even while awaiting join; others awaiting a
        rebalance satisfy the expected heartbeats."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, metadata in self.supported_protocols:
            if name == protocol_name:
                return metadata
        raise ValueError(f"Member does not support protocol {protocol_name}")

    def matches(self, protocols: Protocols) -> bool:
        return protocols == self.supported_protocols

    def vote(self, candidates: set[str]) -> str:
        """The first of the member's protocols (its preference order) among ``candidates``."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError("Member does not support any of the candidate protocols")

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}
