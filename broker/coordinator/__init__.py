"""Coordinators: the group coordinator (``group/``) of consumer groups and committed offsets.

A coordinator sits between the handlers and the partitions: it keeps its
state in memory, persists it as records of an internal topic through the
partitions it owns (appends and reads of ``__consumer_offsets``), and
rebuilds it from that topic at start.
"""
