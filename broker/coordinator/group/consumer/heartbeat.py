"""ConsumerGroupHeartbeat (Kafka 4.0's ``GroupMetadataManager.consumerGroupHeartbeat``).

A heartbeat with epoch 0 joins (the group is created if needed), -1 leaves,
-2 is a static member leaving for a while (its instance id stays reserved
until its session expires); any other epoch is a regular heartbeat. Each
regular heartbeat does three steps::

    1. the member is created or updated (ConsumerGroupMemberMetadata record when it
       changed); the group epoch is bumped (ConsumerGroupMetadata) when a subscription
       changed, the group is new, or the subscribed topics' metadata changed
       (ConsumerGroupPartitionMetadata)
    2. a new target assignment when the group epoch passed the assignment epoch
       (ConsumerGroupTargetAssignmentMember for each changed member, then
       ConsumerGroupTargetAssignmentMetadata)
    3. the member reconciles one step towards its target (ConsumerGroupCurrentMember-
       Assignment), the rebalance timeout running while it must revoke partitions

The answer carries the member id and epoch, the heartbeat interval, and the
assignment when the member sent a full request (a join, or after an error)
or its assignment changed.

A classic group with members is converted to a consumer group when the
migration policy allows an upgrade and its members use the consumer
protocol type (``convertToConsumerGroup``); otherwise it cannot be joined
with this protocol (GROUP_ID_NOT_FOUND, "Group ... is not a consumer
group"). An empty classic group (one holding offsets only) is replaced by
the consumer group. A leave (or a fencing) of the last consumer protocol
member of a group of classic members converts it back (``groups.py``).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Sequence

from broker.coordinator.group.consumer.assignor import PartitionAssignorError
from broker.coordinator.group.consumer.current_assignment import build_current_assignment
from broker.coordinator.group.consumer.group import (
    ConsumerGroup,
    ConsumerGroupState,
    SubscriptionType,
    TopicMetadata,
    subscription_type,
)
from broker.coordinator.group.consumer.groups import ConsumerGroups, TopicFilter, error_response
from broker.coordinator.group.consumer.member import (
    EMPTY_ASSIGNMENT,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroupMember,
    MemberState,
    assignment_to_string,
    has_assigned_partitions_changed,
)
from broker.coordinator.group.consumer.records import (
    current_assignment_record,
    group_epoch_record,
    member_subscription_record,
    member_tombstones,
    subscription_metadata_record,
    target_assignment_record,
)
from broker.coordinator.group.consumer.target_assignment import build_target_assignment
from broker.coordinator.group.errors import GroupError, group_id_not_found, unknown_member
from broker.coordinator.group.records import Record, group_tombstone
from broker.delayed import DelayedReply
from broker.errors import ErrorCode, KafkaError
from broker.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

log = logging.getLogger(__name__)

#: ConsumerGroupHeartbeat v1+: the client generates its member id (KIP-1082)
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
#: members of one group that joined and have not heartbeated since, at most; Kafka
#: admits any number up to group.consumer.max.size (docs/deviations.md)
MAX_UNCONFIRMED_MEMBERS = 10_000


def validate_heartbeat(
    request: ConsumerGroupHeartbeatRequest, api_version: int, assignors: Sequence[str]
) -> None:
    """``throwIfConsumerGroupHeartbeatRequestIsInvalid`` (Kafka 4.0): INVALID_REQUEST with
    Kafka's message, or UNSUPPORTED_ASSIGNOR."""
    epoch = request.member_epoch
    if (
        api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        or epoch > 0
        or epoch == LEAVE_GROUP_MEMBER_EPOCH
    ):
        _throw_if_empty(request.member_id, "MemberId can't be empty.")
    _throw_if_empty(request.group_id, "GroupId can't be empty.")
    _throw_if_empty(request.instance_id, "InstanceId can't be empty.")
    _throw_if_empty(request.rack_id, "RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or len(request.topic_partitions) != 0:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        regex = getattr(request, "subscribed_topic_regex", None)
        if request.subscribed_topic_names is None and regex is None:
            raise _invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining."
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
            f"{', '.join(assignors)}.",
        )


def _invalid(message: str) -> GroupError:
    return GroupError(ErrorCode.INVALID_REQUEST, message)


def _throw_if_empty(value: str | None, message: str) -> None:
    """``throwIfEmptyString``: a value that is present but blank."""
    if value is not None and not value.strip():
        raise _invalid(message)


class ConsumerGroupManager(ConsumerGroups):
    # ---- the request -------------------------------------------------------------------------

    def heartbeat(
        self,
        client_id: str,
        client_host: str,
        request: ConsumerGroupHeartbeatRequest,
        authorized_topics: TopicFilter | None = None,
    ) -> DelayedReply[ConsumerGroupHeartbeatResponse]:
        """A validated ConsumerGroupHeartbeat (``GroupCoordinatorService`` checked it);
        ``authorized_topics`` filters what a regex resolves to by the caller's ACLs (None:
        no authorizer)."""
        try:
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request)
            return self._heartbeat(client_id, client_host, request, authorized_topics)
        except KafkaError as exc:
            return DelayedReply.of(error_response(exc.code, str(exc) or None))

    # ---- a regular heartbeat -----------------------------------------------------------------

    def _heartbeat(
        self,
        client_id: str,
        client_host: str,
        request: ConsumerGroupHeartbeatRequest,
        authorized_topics: TopicFilter | None,
    ) -> DelayedReply[ConsumerGroupHeartbeatResponse]:
        records: list[Record] = []
        group_id = request.group_id
        member_epoch = request.member_epoch
        instance_id = request.instance_id
        owned = request.topic_partitions
        regex = getattr(request, "subscribed_topic_regex", None)
        create = member_epoch == 0
        replaced = self.classic_groups.get(group_id) if create else None
        replaced_state = None if replaced is None else (replaced.state, replaced.previous_state)
        group = self._get_or_maybe_create_group(group_id, create, records)
        member_id = request.member_id or str(uuid.uuid4())  # v0 may leave it to us
        self._throw_if_full(group, member_id)
        if regex:
            _check_regex(regex)
        new_member = create and not group.has_member(member_id)
        if new_member and len(group.unconfirmed) >= MAX_UNCONFIRMED_MEMBERS:
            # a flood of joins with new member ids would each hold a member, its records
            # and a session timer until the session expires
            raise GroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has {MAX_UNCONFIRMED_MEMBERS} members that joined and "
                "have not heartbeated since; retry once they did or their sessions expired.",
            )
        if instance_id is None:
            member = group.member_or_new(member_id, create)
            if create:
                log.info("[GroupId %s] Member %s joins the consumer group using the consumer "
                         "protocol.", group_id, member_id)  # fmt: skip
            _check_member_epoch(member, member_epoch, owned)
        else:
            member = self._static_member(group, member_id, member_epoch=member_epoch,
                                         instance_id=instance_id, owned=owned, create=create,
                                         records=records)  # fmt: skip

        # 1. the member, its subscription, the group epoch
        updated = member.replace(
            instance_id=member.instance_id if instance_id is None else instance_id,
            rack_id=member.rack_id if request.rack_id is None else request.rack_id,
            rebalance_timeout_ms=member.rebalance_timeout_ms
            if request.rebalance_timeout_ms == -1
            else request.rebalance_timeout_ms,
            server_assignor_name=member.server_assignor_name
            if request.server_assignor is None
            else request.server_assignor,
            subscribed_topic_names=member.subscribed_topic_names
            if request.subscribed_topic_names is None
            else frozenset(request.subscribed_topic_names),
            subscribed_topic_regex=member.subscribed_topic_regex if regex is None else regex,
            client_id=client_id,
            client_host=client_host,
            classic_member_metadata=None,
        )
        updated, refreshed, version, group_epoch = self._subscribe_and_reconcile(
            group,
            member,
            updated,
            owned=owned,
            authorized_topics=authorized_topics,
            records=records,
        )
        self.schedule_session_timeout(group_id, member_id)

        response = ConsumerGroupHeartbeatResponse(
            member_id=updated.member_id,
            member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self.config.consumer_group_heartbeat_interval_ms,
        )
        full = member_epoch == 0 or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and owned is not None
        )
        if full or has_assigned_partitions_changed(member, updated):
            response.assignment = _response_assignment(updated.assigned_partitions)
        on_revert = None
        if replaced is not None and replaced_state is not None:
            # a failed write of the classic group's replacement: it comes back
            def on_revert() -> None:
                self.restore_classic_group(replaced, replaced_state)

        reply = self.write_then(group_id, records, response, error_response, on_revert=on_revert)
        # soft state, on the group as the records made it (a new group exists only now)
        registered = self.groups.get(group_id)
        if registered is not None and (not reply.done() or reply.value.error_code == 0):
            if registered is not group:  # a new group: its records made another object
                registered.set_regex_topics(group.regex_topics)
            if refreshed:
                registered.set_metadata_refreshed(version, group_epoch)
            if new_member:
                registered.unconfirmed.add(member_id)
            else:
                registered.unconfirmed.discard(member_id)
        return reply

    def _subscribe_and_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        *,
        owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None,
        authorized_topics: TopicFilter | None,
        records: list[Record],
    ) -> tuple[ConsumerGroupMember, bool, int, int]:
        """Steps 1-3 of a heartbeat (and of a classic member's JoinGroup): the member's
        record, the group epoch, the target assignment, the member's reconciliation.
        Returns the reconciled member, whether the subscription metadata was refreshed, the
        topics version it was refreshed at, and the group epoch."""
        group_id = group.group_id
        bump = group.group_epoch == 0  # a new group moves away from epoch 0
        if updated != member:
            records.append(member_subscription_record(group_id, updated))
            if (
                updated.subscribed_topic_names != member.subscribed_topic_names
                or updated.subscribed_topic_regex != member.subscribed_topic_regex
            ):
                bump = True
        group_epoch = group.group_epoch
        metadata = group.subscription_metadata
        kind = group.subscription_type
        version = self.topics.version
        refreshed = bump or group.has_metadata_expired(version)
        if refreshed:
            new_regex = updated.subscribed_topic_regex
            if group.metadata_version != version or (
                new_regex and new_regex not in group.regex_topics
            ):
                # the topics changed (a regex may match others now) or a regex is new
                self.refresh_regexes(group, new_regex, authorized_topics)
            counts = group.compute_subscribed_topic_names(member, updated)
            metadata = self.compute_subscription_metadata(counts)
            num_members = group.num_members
            if not group.has_member(updated.member_id) and not group.has_static_member(
                updated.instance_id
            ):
                num_members += 1
            kind = subscription_type(counts, num_members)
            if metadata != group.subscription_metadata:
                bump = True
                records.append(subscription_metadata_record(group_id, metadata))
            if bump:
                group_epoch += 1
                records.append(group_epoch_record(group_id, group_epoch))
                log.info("[GroupId %s] Bumped group epoch to %d.", group_id, group_epoch)
                self.meters.rebalances += 1

        # 2. the target assignment
        if group_epoch > group.assignment_epoch:
            target = self._update_target_assignment(
                group,
                group_epoch,
                member=member,
                updated=updated,
                metadata=metadata,
                kind=kind,
                records=records,
            )
            target_epoch = group_epoch
        else:
            target_epoch = group.assignment_epoch
            target = group.target_assignment_of(updated.member_id, updated.instance_id)

        # 3. reconciliation
        updated = self._maybe_reconcile(
            group, updated, target_epoch=target_epoch, target=target, owned=owned, records=records
        )
        return updated, refreshed, version, group_epoch

    def _get_or_maybe_create_group(
        self, group_id: str, create: bool, records: list[Record]
    ) -> ConsumerGroup:
        """``getOrMaybeCreateConsumerGroup``: a new group is not registered (replaying its
        records does it); an empty classic group gives way, a classic group of consumer
        protocol members is converted when the migration policy allows an upgrade."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self.classic_groups.get(group_id)
        if classic is None:
            if not create:
                raise GroupError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found."
                )
            return self.new_group(group_id)
        if create and classic.is_empty:
            # an empty classic group (offsets only) goes: its tombstone, replayed at once
            records.append(group_tombstone(group_id))
            return self.new_group(group_id)
        if create and self.validate_online_upgrade(classic):
            return self.convert_to_consumer_group(classic, records)
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _throw_if_full(self, group: ConsumerGroup, member_id: str) -> None:
        limit = self.config.consumer_group_max_size
        if group.num_members >= limit and (not member_id or not group.has_member(member_id)):
            raise GroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {limit} members.",
            )

    def _static_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        *,
        member_epoch: int,
        instance_id: str,
        owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None,
        create: bool,
        records: list[Record],
        use_classic: bool = False,
    ) -> ConsumerGroupMember:
        """``getOrMaybeSubscribeStaticConsumerGroupMember``: a member using the classic
        protocol (``use_classic``) skips the epoch checks and may replace an instance whose
        member did not leave, as may anyone replacing a classic member."""
        existing = group.static_member(instance_id)
        protocol = "classic" if use_classic else "consumer"
        group_id = group.group_id
        if create:
            if existing is None:
                log.info("[GroupId %s] Static member %s with instance id %s joins the consumer "
                         "group using the %s protocol.", group_id, member_id, instance_id,
                         protocol)  # fmt: skip
                return group.member_or_new(member_id, True)
            if (
                not use_classic
                and not existing.uses_classic_protocol
                and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
            ):
                raise GroupError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the "
                    f"group because the instance id is owned by {existing.member_id} member.",
                )
            new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            # replaceMember: the old member's tombstones (its timers stay; they find nothing)
            records.extend(member_tombstones(group_id, existing.member_id))
            records.append(member_subscription_record(group_id, new))
            records.append(
                target_assignment_record(
                    group_id, member_id, group.target_assignment_of(existing.member_id)
                )
            )
            records.append(current_assignment_record(group_id, new))
            log.info("[GroupId %s] Static member with instance id %s re-joins the consumer group "
                     "using the %s protocol. Created a new member %s to replace the existing "
                     "member %s.", group_id, instance_id, protocol, member_id,
                     existing.member_id)  # fmt: skip
            return new
        if existing is None:
            raise unknown_member(f"Instance id {instance_id} is unknown.")
        _throw_if_instance_fenced(existing, member_id, instance_id)
        if not use_classic:
            _check_member_epoch(existing, member_epoch, owned)
        return existing

    def _update_target_assignment(
        self,
        group: ConsumerGroup,
        group_epoch: int,
        *,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        metadata: dict[str, TopicMetadata],
        kind: SubscriptionType,
        records: list[Record],
    ) -> Assignment:
        name = group.compute_preferred_server_assignor(member, updated) or self.default_assignor
        changes: dict[str, ConsumerGroupMember | None] = {updated.member_id: updated}
        previous = group.static_member_id(updated.instance_id)
        if previous is not None and previous != updated.member_id:
            changes[previous] = None  # the replaced static member
        try:
            result = build_target_assignment(
                group,
                group_epoch,
                assignor=self.assignors[name],
                subscription_metadata=metadata,
                subscription_type=kind,
                updated=changes,
            )
        except PartitionAssignorError as exc:
            message = f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}"
            log.error("[GroupId %s] %s.", group.group_id, message)
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, message) from exc
        log.info("[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.",
                 group.group_id, group_epoch, name)  # fmt: skip
        records.extend(result.records)
        return result.assignment.get(updated.member_id, EMPTY_ASSIGNMENT)

    def _maybe_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        *,
        target_epoch: int,
        target: Assignment,
        owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None,
        records: list[Record],
    ) -> ConsumerGroupMember:
        if member.is_reconciled_to(target_epoch):
            return member
        updated = build_current_assignment(
            member, target_epoch, target, group.current_partition_epoch_of, owned
        )
        if updated != member:
            records.append(current_assignment_record(group.group_id, updated))
            log.debug(
                "[GroupId %s] Member %s new assignment state: epoch=%d, previousEpoch=%d, "
                "state=%s, assignedPartitions=%s and revokedPartitions=%s.",
                group.group_id, updated.member_id, updated.member_epoch,
                updated.previous_member_epoch, updated.state.name,
                assignment_to_string(updated.assigned_partitions),
                assignment_to_string(updated.partitions_pending_revocation),
            )  # fmt: skip
            if updated.uses_classic_protocol:
                pass  # a classic member has join and sync timers instead
            elif updated.state is MemberState.UNREVOKED_PARTITIONS:
                self.schedule_rebalance_timeout(
                    group.group_id,
                    updated.member_id,
                    updated.member_epoch,
                    updated.rebalance_timeout_ms,
                )
            else:
                self.cancel_rebalance_timeout(group.group_id, updated.member_id)
        return updated

    # ---- leaving -----------------------------------------------------------------------------

    def _leave(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> DelayedReply[ConsumerGroupHeartbeatResponse]:
        """``consumerGroupLeave``."""
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        group = self.groups.get(group_id)
        if group is None:
            raise group_id_not_found(group_id)
        response = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=epoch)
        instance_id = request.instance_id
        if instance_id is None:
            member = group.member_or_new(member_id, False)
            log.info("[GroupId %s] Member %s left the consumer group.", group_id, member_id)
            return self.fence_member(group, member, response)
        static = group.static_member(instance_id)
        if static is None:
            raise unknown_member(f"Instance id {instance_id} is unknown.")
        _throw_if_instance_fenced(static, member_id, instance_id)
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            log.info("[GroupId %s] Static Member %s with instance id %s temporarily left the "
                     "consumer group.", group_id, member_id, instance_id)  # fmt: skip
            leaving = static.replace(
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={}
            )
            return self.write_then(
                group_id,
                [current_assignment_record(group_id, leaving)],
                ConsumerGroupHeartbeatResponse(
                    member_id=static.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
                ),
                error_response,
            )
        log.info("[GroupId %s] Static Member %s with instance id %s left the consumer group.",
                 group_id, member_id, instance_id)  # fmt: skip
        return self.fence_member(group, static, response)

    # ---- listing -----------------------------------------------------------------------------

    def states(self) -> dict[str, int]:
        counts = {str(s): 0 for s in ConsumerGroupState if s is not ConsumerGroupState.DEAD}
        for group in self.groups.values():
            counts[str(group.state)] += 1
        return counts


def _check_member_epoch(
    member: ConsumerGroupMember,
    received: int,
    owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None,
) -> None:
    """``throwIfConsumerGroupMemberEpochIsInvalid``: FENCED_MEMBER_EPOCH unless the epoch is
    the member's, or its previous one with a subset of its partitions (the response that
    bumped the epoch may have been lost)."""
    if received > member.member_epoch:
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin.",
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch or not _is_subset(owned, member)
    ):
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin.",
        )


def _is_subset(
    owned: Sequence[ConsumerGroupHeartbeatRequest.TopicPartitions] | None,
    member: ConsumerGroupMember,
) -> bool:
    if owned is None:
        return False
    for topic in owned:
        assigned = member.assigned_partitions.get(topic.topic_id)
        if assigned is None or any(p not in assigned for p in topic.partitions):
            return False
    return True


def _throw_if_instance_fenced(
    member: ConsumerGroupMember, member_id: str, instance_id: str
) -> None:
    if member.member_id != member_id:
        raise GroupError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{member.member_id}.",
        )


def _check_regex(regex: str) -> None:
    try:
        re.compile(regex)
    except re.error as exc:
        raise GroupError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}.",
        ) from exc


def _response_assignment(assignment: Assignment) -> ConsumerGroupHeartbeatResponse.Assignment:
    return ConsumerGroupHeartbeatResponse.Assignment(
        topic_partitions=[
            ConsumerGroupHeartbeatResponse.TopicPartitions(
                topic_id=topic_id, partitions=sorted(partitions)
            )
            for topic_id, partitions in sorted(assignment.items())
        ]
    )
