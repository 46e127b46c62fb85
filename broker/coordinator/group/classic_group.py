"""ClassicGroup: a classic protocol group (Kafka's ``ClassicGroup`` and ``ClassicGroupState``).

States and the transitions allowed into each::

    Empty               <- PreparingRebalance
    PreparingRebalance  <- Stable, CompletingRebalance, Empty
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Dead                <- any

The group counts, per protocol name, the members supporting it; a protocol
is a candidate when every member supports it, and each member votes for its
first candidate (``selectProtocol``). Static members (``group.instance.id``,
KIP-345) are found by instance id; pending members (KIP-394) have been given
a member id but have not joined with it yet.

The consumer protocol's subscription is read as its v0 prefix
(``ConsumerProtocolSubscription``: version INT16, topics [STRING]) to know
the subscribed topics, as Kafka does for offset expiration and OffsetDelete.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Callable

from broker.coordinator.group.errors import GroupError, group_id_not_found, unknown_member
from broker.coordinator.group.member import EMPTY_ASSIGNMENT, ClassicGroupMember, Protocols
from broker.delayed import DelayedReply
from broker.errors import ErrorCode
from broker.protocol.messages import JoinGroupResponse, SyncGroupResponse

CONSUMER_PROTOCOL_TYPE = "consumer"
NO_LEADER = ""
UNKNOWN_MEMBER_ID = ""
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


_VALID_PREVIOUS = {
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {
        GroupState.STABLE,
        GroupState.COMPLETING_REBALANCE,
        GroupState.EMPTY,
    },
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState),
}


def subscribed_topics_of(metadata: bytes) -> set[str] | None:
    """The topics of a consumer subscription (its v0 prefix), None if unreadable."""
    try:
        pos = 2  # version
        (count,) = _INT32.unpack_from(metadata, pos)
        pos += 4
        if count < 0 or count > len(metadata):
            return None
        topics = set()
        for _ in range(count):
            (n,) = _INT16.unpack_from(metadata, pos)
            pos += 2
            if n < 0 or pos + n > len(metadata):
                return None
            topics.add(metadata[pos : pos + n].decode("utf-8"))
            pos += n
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


class ClassicGroup:
    def __init__(
        self,
        group_id: str,
        state: GroupState,
        time_ms: Callable[[], int],
        *,
        generation_id: int = 0,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        leader_id: str | None = None,
        current_state_timestamp: int | None = None,
        on_transition: Callable[[GroupState | None, GroupState], None] | None = None,
    ) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = GroupState.DEAD
        self._time_ms = time_ms
        self.generation_id = generation_id
        self.protocol_type = protocol_type
        self.protocol_name = protocol_name
        self.leader_id = leader_id
        self.current_state_timestamp = (
            time_ms() if current_state_timestamp is None else current_state_timestamp
        )
        self.members: dict[str, ClassicGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.pending_join_members: set[str] = set()
        self.num_awaiting_join = 0
        self.supported_protocols: dict[str, int] = {}
        self.pending_sync_members: set[str] = set()
        self.subscribed_topics: set[str] | None = None
        self.new_member_added = False
        self._on_transition = on_transition
        if on_transition is not None:
            on_transition(None, state)

    def __repr__(self) -> str:
        return f"ClassicGroup({self.group_id!r}, {self.state}, generation {self.generation_id})"

    # ---- state ----------------------------------------------------------------------------

    def is_in_state(self, state: GroupState) -> bool:
        return self.state is state

    @property
    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def transition_to(self, state: GroupState) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(
                f"Group {self.group_id} should be in one of {_VALID_PREVIOUS[state]} states "
                f"before moving to {state} state. Instead it is in {self.state} state."
            )
        self.previous_state = self.state
        self.state = state
        self.current_state_timestamp = self._time_ms()
        if self._on_transition is not None:
            self._on_transition(self.previous_state, state)

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # ---- members --------------------------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ClassicGroupMember:
        return self.members[member_id]

    @property
    def num_members(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def leader(self) -> str:
        """The leader's member id for a JoinGroup response, which only members of
        the group get: a group with members has a leader (Kafka's ``leaderOrNull``
        is never null there; the field is not nullable)."""
        assert self.leader_id is not None, f"group {self.group_id} has no leader"
        return self.leader_id

    def add(
        self, member: ClassicGroupMember, reply: DelayedReply[JoinGroupResponse] | None = None
    ) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(
                    f"Static member with groupInstanceId={member.group_instance_id} cannot be "
                    f"added to group {self.group_id} since it is already a member."
                )
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise RuntimeError("The group and member's protocol type must be the same.")
        if not self.supports_protocols(member.protocol_type, member.protocol_names()):
            raise RuntimeError("None of the member's protocols can be supported.")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, 1)
        member.awaiting_join = reply
        if member.is_awaiting_join:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self._count_protocols(removed, -1)
            if removed.is_awaiting_join:
                self.num_awaiting_join -= 1
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> ClassicGroupMember:
        removed = self.members.pop(old_member_id, None)
        if removed is None:
            raise ValueError(f"Cannot replace non-existing member id {old_member_id}")
        # fence a duplicate waiting with the old member id
        self.complete_join(
            removed,
            JoinGroupResponse(
                members=[],
                member_id=old_member_id,
                protocol_name=None,
                protocol_type=None,
                leader=NO_LEADER,
                error_code=ErrorCode.FENCED_INSTANCE_ID,
            ),
        )
        self.complete_sync(
            removed,
            SyncGroupResponse(
                assignment=b"",
                protocol_name=None,
                protocol_type=None,
                error_code=ErrorCode.FENCED_INSTANCE_ID,
            ),
        )
        new = ClassicGroupMember(
            new_member_id,
            group_instance_id=removed.group_instance_id,
            client_id=removed.client_id,
            client_host=removed.client_host,
            rebalance_timeout_ms=removed.rebalance_timeout_ms,
            session_timeout_ms=removed.session_timeout_ms,
            protocol_type=removed.protocol_type,
            supported_protocols=removed.supported_protocols,
            assignment=removed.assignment,
        )
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return new

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def add_pending_member(self, member_id: str) -> None:
        if self.has_member(member_id):
            raise RuntimeError(f"Attempt to add pending member {member_id} which is a member")
        self.pending_join_members.add(member_id)

    def add_pending_sync_member(self, member_id: str) -> None:
        if not self.has_member(member_id):
            raise RuntimeError(f"Attempt to add pending sync member {member_id}: not a member")
        self.pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        self.pending_sync_members.discard(member_id)

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def has_static_member(self, group_instance_id: str) -> bool:
        return group_instance_id in self.static_members

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None) -> str:
        prefix = client_id if group_instance_id is None else group_instance_id
        return f"{prefix}-{uuid.uuid4()}"

    def validate_member(
        self, member_id: str, group_instance_id: str | None, operation: str
    ) -> None:
        """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID (``ClassicGroup.validateMember``)."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                raise unknown_member()
            if existing != member_id:
                raise GroupError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Request memberId={member_id} for static member with groupInstanceId="
                    f"{group_instance_id} is fenced by existing memberId={existing} during "
                    f"operation {operation}",
                )
        if member_id not in self.members:
            raise unknown_member()

    # ---- protocols -------------------------------------------------------------------------

    def _count_protocols(self, member: ClassicGroupMember, delta: int) -> None:
        for name, _ in member.supported_protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def _candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        if not self.members:
            raise RuntimeError("Cannot select protocol for empty group")
        candidates = self._candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == n for name in protocols
        )

    def update_member(
        self,
        member: ClassicGroupMember,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        reply: DelayedReply[JoinGroupResponse] | None,
    ) -> None:
        self._count_protocols(member, -1)
        member.supported_protocols = protocols
        self._count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        displaced = member.awaiting_join
        if reply is not None and displaced is not None and displaced is not reply:
            # the member joined again before its parked JoinGroup was answered (a client that
            # pipelines, or one retrying on another connection): Kafka leaves the first one
            # unanswered, which would stall a pipelining connection (docs/deviations.md)
            displaced.resolve(
                JoinGroupResponse(
                    member_id=member.member_id, error_code=ErrorCode.REBALANCE_IN_PROGRESS
                )
            )
        if reply is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif reply is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.awaiting_join = reply

    # ---- replies ---------------------------------------------------------------------------

    def complete_join(self, member: ClassicGroupMember, response: JoinGroupResponse) -> bool:
        if member.awaiting_join is None:
            return False
        reply, member.awaiting_join = member.awaiting_join, None
        self.num_awaiting_join -= 1
        reply.resolve(response)
        return True

    def complete_sync(self, member: ClassicGroupMember, response: SyncGroupResponse) -> bool:
        if member.awaiting_sync is None:
            return False
        reply, member.awaiting_sync = member.awaiting_sync, None
        reply.resolve(response)
        return True

    def complete_all_joins(self, code: ErrorCode) -> None:
        for member_id, member in list(self.members.items()):
            self.complete_join(member, JoinGroupResponse(member_id=member_id, error_code=code))

    def complete_all_syncs(self, code: ErrorCode) -> None:
        for member in list(self.members.values()):
            self.complete_sync(member, SyncGroupResponse(error_code=code))

    # ---- generations -----------------------------------------------------------------------

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            found = subscribed_topics_of(member.metadata(self.protocol_name))
            if found is None:
                return None
            topics |= found
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY)
        self.pending_sync_members.clear()

    def current_members_metadata(self) -> list[JoinGroupResponse.JoinGroupResponseMember]:
        """The member list a leader gets in its JoinGroup response."""
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise RuntimeError(f"Cannot obtain member metadata for group in state {self.state}")
        return [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(self.protocol_name),
            )
            for m in self.members.values()
        ]

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    # ---- offsets and admin ------------------------------------------------------------------

    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> None:
        """``ClassicGroup.validateOffsetCommit`` (non-transactional)."""
        if self.state is GroupState.DEAD:
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation_id < 0 and self.state is GroupState.EMPTY:
            return  # a simple consumer or an admin client: allowed while the group is empty
        if generation_id >= 0 or member_id or group_instance_id is not None:
            self.validate_member(member_id, group_instance_id, "offset-commit")
            if generation_id != self.generation_id:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
        elif self.state is not GroupState.EMPTY:
            raise unknown_member()
        if self.state is GroupState.COMPLETING_REBALANCE:
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)

    def validate_offset_fetch(self) -> None:
        if self.state is GroupState.DEAD:
            raise group_id_not_found(self.group_id)

    def validate_offset_delete(self) -> None:
        if self.state is GroupState.DEAD:
            raise group_id_not_found(self.group_id)
        if (
            self.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE,
                           GroupState.COMPLETING_REBALANCE)
            and not self.uses_consumer_protocol()
        ):  # fmt: skip
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)

    def validate_delete_group(self) -> None:
        if self.state is GroupState.DEAD:
            raise group_id_not_found(self.group_id)
        if self.state in (
            GroupState.STABLE,
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
        ):
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)

    def offset_expiration_base(self) -> Callable[[int], int] | None:
        """``offsetExpirationCondition``: maps a commit timestamp to the time its
        retention counts from, or None when no offset of the group may expire."""
        if self.protocol_type is not None:
            if self.state is GroupState.EMPTY:
                since = self.current_state_timestamp
                return lambda commit_ts: commit_ts if since is None or since < 0 else since
            if (
                self.uses_consumer_protocol()
                and self.subscribed_topics is not None
                and self.state is GroupState.STABLE
            ):
                return lambda commit_ts: commit_ts
            return None
        return lambda commit_ts: commit_ts  # a simple consumer's group


def reset_assignments(group: ClassicGroup) -> None:
    for member in group.members.values():
        member.assignment = EMPTY_ASSIGNMENT
