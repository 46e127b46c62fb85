"""The partitions this broker leads: validate then append, producer-state checks, topics.

``partition.py`` owns one partition's produce checks and append path, ``producer_append.py``
the idempotent-producer checks (``ProducerAppendInfo.java``), ``replica_manager.py`` the
set of partitions and topic creation, ``internal_topics.py`` the topics clients may not
produce to (``Topic.isInternal``).
"""
