"""Command-line tools that talk to a running broker over the Kafka protocol.

* ``client.py`` -- a small blocking Kafka client (one connection, ApiVersions,
  request/response with this package's own codecs).
* ``acls.py`` -- ``broker acls``, kafka-acls.sh's options on top of it.
* ``groups.py`` -- the consumer group requests (``GroupAdmin``: list, describe,
  delete, committed offsets, simple commits, topic partitions and offsets).
* ``consumer_groups.py`` -- ``broker groups``, kafka-consumer-groups.sh's
  options on top of ``groups.py``.
"""
