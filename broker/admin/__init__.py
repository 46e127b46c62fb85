"""Command-line tools that talk to a running broker over the Kafka protocol.

* ``client.py`` -- a small blocking Kafka client (one connection, ApiVersions,
  request/response with this package's own codecs).
* ``acls.py`` -- ``broker acls``, kafka-acls.sh's options on top of it.
* ``groups.py`` -- the consumer group requests (``GroupAdmin``: list, describe,
  delete, committed offsets, simple commits, topic partitions and offsets).
* ``consumer_groups.py`` -- ``broker groups``, kafka-consumer-groups.sh's
  options on top of ``groups.py``.
* ``topic_requests.py`` -- the topic, config, offset and log dir requests
  (``TopicAdmin``), with ``topic_filter.py`` (``--topic`` regexes,
  ``--topic-partitions`` rules) and ``java_order.py`` (HashMap order).
* ``topics.py``, ``configs.py``, ``offsets.py``, ``log_dirs.py`` --
  ``broker topics``, ``configs``, ``offsets``, ``log-dirs``: kafka-topics.sh,
  kafka-configs.sh, kafka-get-offsets.sh and kafka-log-dirs.sh.
"""
