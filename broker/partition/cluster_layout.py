"""Several broker processes on one machine, shown to clients as a cluster (a prototype).

One event loop uses one core. The design ``docs/scaling.md`` recommends for
N cores is N broker processes, each a Kafka node of its own with its own
listener port and log dir, each leading a share of every topic's partitions.
Clients already route every produce and fetch to a partition's leader, so
no request is forwarded between processes and every partition keeps one
writer. This module is that layout, behind the ``cluster.nodes`` key
(empty: the broker is alone, as before)::

    cluster.nodes = 0@127.0.0.1:9092,1@127.0.0.1:9093
    partition p of every topic is led by the node listed (p mod 2)-th
    the group coordinator is the first node listed, and leads the internal
    topics (``__consumer_offsets``)

What the prototype leaves out (docs/scaling.md, "What a full build needs"):
topics must exist on every node (created before the nodes start), replicas
and the ISR are the leader alone, admin requests (CreateTopics, configs) act
on the node they reach, and the addresses given are every listener's.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.errors import InvalidConfigError


@dataclass(frozen=True, slots=True)
class NodeAddress:
    node_id: int
    host: str
    port: int


class ClusterLayout:
    """The nodes of the machine and who leads which partition."""

    __slots__ = ("_count", "node_id", "nodes")

    def __init__(self, nodes: list[NodeAddress], node_id: int) -> None:
        if not any(n.node_id == node_id for n in nodes):
            raise InvalidConfigError(
                f"Invalid value for configuration cluster.nodes: node.id {node_id} is not listed"
            )
        self.nodes = nodes
        self.node_id = node_id
        self._count = len(nodes)

    @classmethod
    def parse(cls, values: tuple[str, ...] | None, node_id: int) -> ClusterLayout | None:
        """``id@host:port`` entries (the ``cluster.nodes`` key); None when empty."""
        if not values:
            return None
        nodes = []
        for value in values:
            ident, at, address = value.strip().partition("@")
            host, colon, port = address.rpartition(":")
            try:
                node = NodeAddress(int(ident), host.strip("[]"), int(port))
            except ValueError:
                node = None
            if node is None or not at or not colon or not host:
                raise InvalidConfigError(
                    f"Invalid value {value} for configuration cluster.nodes: expected id@host:port"
                )
            nodes.append(node)
        if len({n.node_id for n in nodes}) != len(nodes):
            raise InvalidConfigError(
                "Invalid value for configuration cluster.nodes: a node id is listed twice"
            )
        return cls(nodes, node_id)

    def leader_of(self, topic: str, partition: int) -> NodeAddress:
        if topic.startswith("__"):
            return self.coordinator  # internal topics: their coordinator's
        return self.nodes[partition % self._count]

    def leads(self, topic: str, partition: int) -> bool:
        return self.leader_of(topic, partition).node_id == self.node_id

    @property
    def coordinator(self) -> NodeAddress:
        """The node that coordinates consumer groups."""
        return self.nodes[0]
