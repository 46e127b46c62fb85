"""The records of ``__consumer_offsets``, in Kafka 3.9's schemas (a leaf package).

Kafka's group coordinator stores its state as key/value records of the
internal topic ``__consumer_offsets``; both are a version prefix and a
message (``CoordinatorRecordSerde``)::

    key   => record_type:INT16  key message (the record type is the key's version)
    value => version:INT16      value message | null (a tombstone)

    type  key                                        value versions
      0   OffsetCommitKey v0   (group topic partition) OffsetCommitValue v0-4
      1   OffsetCommitKey v1   (same fields)           OffsetCommitValue v0-4
      2   GroupMetadataKey v2  (group)                 GroupMetadataValue v0-4
      3-8 ConsumerGroup*Key    (KIP-848 groups)        ConsumerGroup*Value v0

It lives below ``log/`` (beside ``records/``, importing neither) because
both ``broker dump-log --offsets-decoder`` (the log layer) and the group
coordinator (above the partitions) read these records; the protocol
package's generated codecs sit above the log, so the schemas here have a
small interpreter of their own (``schema.py``).
"""
