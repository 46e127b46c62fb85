"""Storage: partition logs in Kafka 3.9's on-disk format.

Validated batches land on disk exactly as Kafka writes them, so Kafka's
tools read our log directories and we read theirs (``files.py`` has the
directory layout). Modules, bottom up:

``errors``           storage failures (none caused by a client)
``files``            names of files and folders
``index``            mmap'd fixed-width index files (``offset_index``, ``time_index``)
``transaction_index`` a segment's ``.txnindex``: its aborted transactions
``file_records``     a segment's ``.log``: appends, header walks, file slices
``record_times``     record offsets/timestamps inside batches (ListOffsets only)
``segment``          one segment: append with index entries, reads, truncation
``log_segments``     the ordered segments of a partition
``scan``             the recovery scan (``_recover_py`` / compiled ``_recover_c``)
``recovery``         loading and recovering a partition (``LogLoader``)
``checkpoints``      checkpoint files, clean-shutdown marker, partition.metadata, meta.properties
``producer_state``   idempotent producers, their transactions, ``.snapshot`` files
``leader_epoch``     leader-epoch cache and its checkpoint
``local_log``        segments, LEO, rolls, reads, deletion, flushing (thread contract)
``unified_log``      the partition log the partition layer uses
``config_store``     persisted topic config overrides
``manager``          all partitions of all log dirs, topic configs, ticks, shutdown
``dump``             ``broker dump-log`` (kafka-dump-log.sh's output)

The API the partition and server layers use is summed up in ``docs/storage.md``.

Threading: one partition's log is used from one thread at a time; its
``flush`` may run concurrently from a flusher thread (``local_log.py``
explains why that is safe).
"""
