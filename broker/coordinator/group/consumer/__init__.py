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
    classic_members.py     classic members inside a consumer group (online migration)

A group id names one group, classic or consumer. As Kafka 4.0
(``group.consumer.migration.policy``, default bidirectional), a classic group
of consumers is converted when a consumer protocol member joins it, a
consumer group serves classic members, and goes back to classic when its
last consumer protocol member leaves.
"""
