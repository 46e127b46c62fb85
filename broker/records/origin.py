"""``AppendOrigin``: who appends (``storage/.../log/AppendOrigin.java``).

CLIENT for produce requests; COORDINATOR for transaction markers and the
group/transaction coordinators; REPLICATION for followers; RAFT_LEADER for
KRaft. The validator's batch checks (``LogValidator.validateBatch``) and the
base-offset rule apply to CLIENT only. Lives here because both ``validator``
and ``log`` use it.
"""

from __future__ import annotations

import enum


class AppendOrigin(enum.Enum):
    REPLICATION = "replication"
    COORDINATOR = "coordinator"
    CLIENT = "client"
    RAFT_LEADER = "raft_leader"
