"""Classic members inside a consumer group (Kafka 4.0's online migration, KIP-848).

A consumer group may hold members that speak the classic protocol
(JoinGroup/SyncGroup/Heartbeat/LeaveGroup): those of a classic group it was
converted from, and classic consumers that join it afterwards. They are
consumer group members carrying a ``ClassicMemberMetadata`` (their session
timeout and supported protocols) and are served from the group's state,
as Kafka's ``GroupMetadataManager`` does::

    JoinGroup   classicGroupJoinToConsumerGroup: the member is created or updated from
                its subscription, the group epoch bumped when its subscription changed,
                a new target assignment computed, the member reconciled one step (its
                owned partitions are those of its subscription); answered once written,
                generation = member epoch, no leader (every classic member is a follower)
    SyncGroup   classicGroupSyncToConsumerGroup: the member's assigned partitions, in the
                consumer protocol version it speaks; REBALANCE_IN_PROGRESS when the group
                moved on since it joined
    Heartbeat   classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when the member
                must rejoin to make progress (the group epoch passed its epoch, it must
                revoke partitions, or partitions it waited for were released)
    LeaveGroup  classicGroupLeaveToConsumerGroup: the members' tombstones, the group epoch
                bumped

Timers (keys as Kafka's): the member's session (its classic session
timeout), ``join-<group>-<member>`` (rejoin within the rebalance timeout
once asked to) and ``sync-<group>-<member>`` (sync within the rebalance
timeout after a join); each fences the member when it fires.

A static classic member that replaces the group's last consumer protocol
member converts the group back to classic (``validateOnlineDowngradeWith-
ReplacedMemberId``), without a rebalance.
"""

from __future__ import annotations

import logging
import uuid

from broker.coordinator.group.classic import Caller, requires_known_member_id
from broker.coordinator.group.classic_group import UNKNOWN_MEMBER_ID
from broker.coordinator.group.consumer.group import CONSUMER_PROTOCOL_TYPE, ConsumerGroup
from broker.coordinator.group.consumer.groups import join_timeout_key, sync_timeout_key
from broker.coordinator.group.consumer.heartbeat import ConsumerGroupManager
from broker.coordinator.group.consumer.member import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
)
from broker.coordinator.group.consumer.records import (
    group_epoch_record,
    member_tombstones,
    subscription_metadata_record,
)
from broker.coordinator.group.consumer_protocol import (
    ConsumerProtocolError,
    Subscription,
    deserialize_version,
    encode_assignment,
    parse_subscription,
)
from broker.coordinator.group.errors import GroupError, unknown_member
from broker.coordinator.group.records import Record
from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)


class ClassicMembersManager(ConsumerGroupManager):
    """The consumer group manager that also serves the classic protocol's requests to
    consumer groups (the shard's ``consumer``)."""

    # ---- JoinGroup -----------------------------------------------------------------------------

    def classic_join(
        self, caller: Caller, request: JoinGroupRequest
    ) -> DelayedReply[JoinGroupResponse]:
        """``classicGroupJoinToConsumerGroup`` (a non-empty consumer group)."""
        try:
            return self._classic_join(caller, request)
        except KafkaError as exc:
            return DelayedReply.of(
                JoinGroupResponse(member_id=request.member_id, error_code=exc.code)
            )

    def _classic_join(
        self, caller: Caller, request: JoinGroupRequest
    ) -> DelayedReply[JoinGroupResponse]:
        group_id = request.group_id
        group = self.group(group_id)
        instance_id = request.group_instance_id
        session_timeout_ms = request.session_timeout_ms
        protocols = tuple((p.name, bytes(p.metadata)) for p in request.protocols)
        member_id = request.member_id
        unknown = member_id == UNKNOWN_MEMBER_ID
        if unknown:
            member_id = str(uuid.uuid4())
        self._throw_if_full(group, member_id)
        if not group.supports_classic_protocols(
            request.protocol_type, {name for name, _ in protocols}
        ):
            raise GroupError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"Member {member_id}'s protocols are not supported.",
            )
        if unknown and instance_id is None and requires_known_member_id(caller.api_version):
            log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer "
                     "group. Created a new member id %s and requesting the member to rejoin "
                     "with this id.", group_id, member_id)  # fmt: skip
            return DelayedReply.of(
                JoinGroupResponse(member_id=member_id, error_code=ErrorCode.MEMBER_ID_REQUIRED)
            )
        records: list[Record] = []
        if instance_id is None:
            member = group.member_or_new(member_id, True)
            if not group.has_member(member_id):
                log.info("[GroupId %s] Member %s joins the consumer group using the classic "
                         "protocol.", group_id, member_id)  # fmt: skip
        else:
            member = self._static_member(group, member_id, member_epoch=-1,
                                         instance_id=instance_id, owned=[], create=unknown,
                                         records=records, use_classic=True)  # fmt: skip
        subscription = _subscription(protocols)
        rebalance_timeout_ms = request.rebalance_timeout_ms
        updated = member.replace(
            instance_id=member.instance_id if instance_id is None else instance_id,
            rack_id=member.rack_id if subscription.rack_id is None else subscription.rack_id,
            rebalance_timeout_ms=member.rebalance_timeout_ms
            if rebalance_timeout_ms == -1
            else rebalance_timeout_ms,
            subscribed_topic_names=frozenset(subscription.topics),
            client_id=caller.client_id,
            client_host=caller.client_host,
            classic_member_metadata=ClassicMemberMetadata(session_timeout_ms, protocols),
        )
        owned = self._owned(subscription)
        updated, refreshed, version, group_epoch = self._subscribe_and_reconcile(
            group, member, updated, owned=owned, authorized_topics=None, records=records
        )

        # 4. a static member replacing the last consumer protocol member: back to classic
        replaced = group.static_member_id(instance_id)
        downgrade = replaced is not None and self.validate_online_downgrade_with_replaced_member(
            group, replaced
        )
        response = JoinGroupResponse(
            member_id=updated.member_id,
            generation_id=updated.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=protocols[0][0],
            leader="",
            skip_assignment=False,
            members=[],
        )

        def on_error(code: ErrorCode) -> JoinGroupResponse:
            return JoinGroupResponse(member_id=updated.member_id, error_code=code)

        if downgrade:
            assert replaced is not None
            classic = self.convert_to_classic_group(group, replaced, updated, records)
            reply = self.write_classic_conversion(
                group, classic, records, response, on_error, rebalance=False
            )
        else:
            reply = self.write_then(group_id, records, response, on_error)
            registered = self.groups.get(group_id)
            if refreshed and registered is not None:
                registered.set_metadata_refreshed(version, group_epoch)
        joined_id = updated.member_id
        rebalance_timeout = updated.rebalance_timeout_ms

        def joined(value: JoinGroupResponse) -> JoinGroupResponse:
            if value.error_code != ErrorCode.NONE:
                return value
            self.timer.cancel(join_timeout_key(group_id, joined_id))
            if not downgrade:
                # still a consumer group: the session, and a SyncGroup due in time
                self.schedule_session_timeout(group_id, joined_id, session_timeout_ms)
                self.schedule_sync_timeout(group_id, joined_id, rebalance_timeout)
            return value

        return reply.then(joined)

    def _owned(
        self, subscription: Subscription
    ) -> list[ConsumerGroupHeartbeatRequest.TopicPartitions]:
        """The subscription's owned partitions by topic id (``toTopicPartitions``)."""
        assignment = self.to_assignment(subscription.owned_partitions or [])
        return [
            ConsumerGroupHeartbeatRequest.TopicPartitions(
                topic_id=topic_id, partitions=sorted(parts)
            )
            for topic_id, parts in assignment.items()
        ]

    # ---- SyncGroup -----------------------------------------------------------------------------

    def classic_sync(self, request: SyncGroupRequest) -> DelayedReply[SyncGroupResponse]:
        """``classicGroupSyncToConsumerGroup``."""
        try:
            group = self.group(request.group_id)
            member = _validate_member(group, request.member_id, request.group_instance_id)
            _throw_if_not_classic(member)
            _throw_if_generation_unmatched(member, request.generation_id)
            _throw_if_protocol_unmatched(member, request.protocol_type, request.protocol_name)
            self._throw_if_rebalance_in_progress(group, member)
            assignment = self._prepare_assignment(member)
        except KafkaError as exc:
            return DelayedReply.of(SyncGroupResponse(error_code=exc.code))
        group_id, member_id = group.group_id, member.member_id
        self.timer.cancel(sync_timeout_key(group_id, member_id))
        assert member.classic_member_metadata is not None
        self.schedule_session_timeout(
            group_id, member_id, member.classic_member_metadata.session_timeout_ms
        )
        return DelayedReply.of(
            SyncGroupResponse(
                protocol_type=request.protocol_type,
                protocol_name=request.protocol_name,
                assignment=assignment,
            )
        )

    def _throw_if_rebalance_in_progress(
        self, group: ConsumerGroup, member: ConsumerGroupMember
    ) -> None:
        """``throwIfRebalanceInProgress``: the group epoch passed the member's (unless it
        is still revoking: it rejoins once done)."""
        if (
            group.group_epoch > member.member_epoch
            and member.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            self.schedule_join_timeout_if_absent(
                group.group_id, member.member_id, member.rebalance_timeout_ms
            )
            raise GroupError(
                ErrorCode.REBALANCE_IN_PROGRESS,
                f"A new rebalance is triggered in group {group.group_id} and member "
                f"{member.member_id} should rejoin to catch up.",
            )

    def _prepare_assignment(self, member: ConsumerGroupMember) -> bytes:
        """``prepareAssignment``: the member's assigned partitions in the consumer protocol
        version of its first protocol's subscription."""
        classic = member.classic_member_metadata
        assert classic is not None
        try:
            version = deserialize_version(classic.supported_protocols[0][1])
        except ConsumerProtocolError as exc:
            raise GroupError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                "Malformed embedded consumer protocol in version deserialization.",
            ) from exc
        return encode_assignment(self.to_topic_partitions(member.assigned_partitions), version)

    # ---- Heartbeat -----------------------------------------------------------------------------

    def classic_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        """``classicGroupHeartbeatToConsumerGroup``."""
        try:
            group = self.group(request.group_id)
            member = _validate_member(group, request.member_id, request.group_instance_id)
            _throw_if_not_classic(member)
            _throw_if_generation_unmatched(member, request.generation_id)
        except KafkaError as exc:
            code = exc.code
            if code is ErrorCode.GROUP_ID_NOT_FOUND:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            return HeartbeatResponse(error_code=code)
        group_id, member_id = group.group_id, member.member_id
        assert member.classic_member_metadata is not None
        self.schedule_session_timeout(
            group_id, member_id, member.classic_member_metadata.session_timeout_ms
        )
        error = ErrorCode.NONE
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)
            )
        ):
            error = ErrorCode.REBALANCE_IN_PROGRESS
            self.schedule_join_timeout_if_absent(group_id, member_id, member.rebalance_timeout_ms)
        return HeartbeatResponse(error_code=error)

    # ---- LeaveGroup ----------------------------------------------------------------------------

    def classic_leave(self, request: LeaveGroupRequest) -> DelayedReply[LeaveGroupResponse]:
        """``classicGroupLeaveToConsumerGroup``: answered once the members' tombstones are
        durable (a failed write restores them and answers its error, as Kafka's
        ``handleOperationException``)."""
        group = self.groups.get(request.group_id)
        if group is None:
            return DelayedReply.of(LeaveGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        group_id = group.group_id
        responses = []
        records: list[Record] = []
        leaving: list[ConsumerGroupMember] = []
        for identity in request.members:
            member_id, instance_id = identity.member_id, identity.group_instance_id
            reason = identity.reason or "not provided"
            try:
                if instance_id is None:
                    member = group.member_or_new(member_id, False)
                    _throw_if_not_classic(member)
                    log.info("[Group %s] Dynamic Member %s has left group through explicit "
                             "`LeaveGroup` request; client reason: %s", group_id, member_id,
                             reason)  # fmt: skip
                else:
                    static = group.static_member(instance_id)
                    if static is None:
                        raise unknown_member(f"Instance id {instance_id} is unknown.")
                    if member_id not in (UNKNOWN_MEMBER_ID, static.member_id):
                        raise GroupError(
                            ErrorCode.FENCED_INSTANCE_ID,
                            f"Static member {member_id} with instance id {instance_id} was "
                            f"fenced by member {static.member_id}.",
                        )
                    _throw_if_not_classic(static)
                    member = static
                    member_id = static.member_id
                    log.info("[Group %s] Static Member %s with instance id %s has left group "
                             "through explicit `LeaveGroup` request; client reason: %s",
                             group_id, member_id, instance_id, reason)  # fmt: skip
                records.extend(member_tombstones(group_id, member_id))
                self.cancel_timers(group_id, member_id)
                leaving.append(member)
                responses.append(
                    LeaveGroupResponse.MemberResponse(
                        member_id=member_id, group_instance_id=instance_id
                    )
                )
            except KafkaError as exc:
                responses.append(
                    LeaveGroupResponse.MemberResponse(
                        member_id=member_id, group_instance_id=instance_id, error_code=exc.code
                    )
                )
        if records:
            counts = dict(group.subscribed_topic_names)
            unique = {m.member_id: m for m in leaving}
            for member in unique.values():
                for name in group.member_topics(member):
                    left = counts.get(name, 0) - 1
                    if left > 0:
                        counts[name] = left
                    else:
                        counts.pop(name, None)
            metadata = self.compute_subscription_metadata(counts)
            if metadata != group.subscription_metadata:
                records.append(subscription_metadata_record(group_id, metadata))
            records.append(self._epoch_bump(group))

        def revert() -> None:
            # the members are back: so are their sessions
            for member in leaving:
                assert member.classic_member_metadata is not None
                self.schedule_session_timeout(
                    group_id, member.member_id, member.classic_member_metadata.session_timeout_ms
                )

        return self.write_then(
            group_id,
            records,
            LeaveGroupResponse(members=responses),
            lambda code: LeaveGroupResponse(error_code=code),
            on_revert=revert,
        )

    def _epoch_bump(self, group: ConsumerGroup) -> Record:
        self.meters.rebalances += 1
        return group_epoch_record(group.group_id, group.group_epoch + 1)


def _subscription(protocols: tuple[tuple[str, bytes], ...]) -> Subscription:
    """``deserializeSubscription``: every protocol carries the same subscription."""
    try:
        return parse_subscription(protocols[0][1])
    except (ConsumerProtocolError, IndexError) as exc:
        raise GroupError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            "Malformed embedded consumer protocol in subscription deserialization.",
        ) from exc


def _validate_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerGroupMember:
    """``validateConsumerGroupMember``."""
    if instance_id is None:
        return group.member_or_new(member_id, False)
    member = group.static_member(instance_id)
    if member is None:
        raise unknown_member(
            f"Member with instance id {instance_id} is not a member of group {group.group_id}."
        )
    if member.member_id != member_id:
        raise GroupError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{member.member_id}.",
        )
    return member


def _throw_if_not_classic(member: ConsumerGroupMember) -> None:
    if not member.uses_classic_protocol:
        raise unknown_member(f"Member {member.member_id} does not use the classic protocol.")


def _throw_if_generation_unmatched(member: ConsumerGroupMember, generation_id: int) -> None:
    if member.member_epoch != generation_id:
        raise GroupError(
            ErrorCode.ILLEGAL_GENERATION,
            f"The request generation id {generation_id} is not equal to the member epoch "
            f"{member.member_epoch} of member {member.member_id}.",
        )


def _throw_if_protocol_unmatched(
    member: ConsumerGroupMember, protocol_type: str | None, protocol_name: str | None
) -> None:
    classic = member.classic_member_metadata
    assert classic is not None
    name = classic.supported_protocols[0][0]
    if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise GroupError(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            f"The protocol type {protocol_type} from member {member.member_id} request is not "
            f"equal to the group protocol type {CONSUMER_PROTOCOL_TYPE}.",
        )
    if protocol_name is not None and protocol_name != name:
        raise GroupError(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            f"The protocol name {protocol_name} from member {member.member_id} request is not "
            f"equal to the protocol name {name} returned in the join response.",
        )
