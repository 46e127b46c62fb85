"""The group coordinator for one broker: classic groups (Kafka 3.9), consumer groups of the
KIP-848 protocol (Kafka 4.0; ``consumer/``) and committed offsets.

Modules::

    config.py          Kafka's group.* / offsets.* keys, declared here, read into GroupConfig
    partitioner.py     which __consumer_offsets partition a group lives in (Java's hashCode)
    errors.py          the group errors, as KafkaError subclasses
    timer.py           keyed timers on the event loop (one per member / group and purpose)
    member.py          ClassicGroupMember
    classic_group.py   ClassicGroup: states, members, protocol selection
    rebalance.py       the join phase, its timers and the propagation of assignments
    classic.py         JoinGroup / SyncGroup / Heartbeat / LeaveGroup (GroupMetadataManager)
    offsets.py         OffsetCommit / OffsetFetch / OffsetDelete, expiration (OffsetMetadataManager)
    shard.py           one __consumer_offsets partition: groups, offsets, replay of records
    writer.py          appends a shard's records and waits for them as acks=all does
    loader.py          reads a partition back at start, in slices
    coordinator.py     the facade the handlers call: routing, load state, admin operations
    consumer/          consumer groups: ConsumerGroupHeartbeat, assignors, their records

Everything runs on the event loop thread: no locks, timers are ``call_later``. An
operation answers through a ``DelayedReply`` (``broker/delayed.py``): at once, or
later (a parked Join/Sync, a commit waiting for its record to be durable).
"""
