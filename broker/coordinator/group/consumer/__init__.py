"""Consumer groups of the KIP-848 protocol, as Kafka 4.0's group coordinator serves them.

Modules::

    member.py              ConsumerGroupMember (immutable), MemberState, the epochs of the API
    group.py               ConsumerGroup: members, epochs, target assignment, partition epochs,
                           derived state, offset validation by member epoch
    current_assignment.py  one reconciliation step of a member (CurrentAssignmentBuilder)
    assignor.py            what an assignor sees (GroupSpec) and its errors
    uniform.py             the uniform assignor (default), range_assignor.py the range one
    target_assignment.py   a new target assignment and its records (TargetAssignmentBuilder)
    records.py             the ConsumerGroup* records of __consumer_offsets
    groups.py              the shard's consumer groups: writes, replay, timers, describing
    heartbeat.py           ConsumerGroupHeartbeat: join, heartbeat, leave

A group id names one group, classic or consumer: the migration policy is
"disabled" (docs/deviations.md), so a classic group with members refuses
this protocol and a consumer group with members refuses classic members.
"""
