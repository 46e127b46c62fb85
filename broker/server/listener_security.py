"""What a listener's security protocol asks of its connections.

One :class:`ListenerSecurity` per listener, shared by its connections:

    PLAINTEXT       principal User:ANONYMOUS
    SSL             principal from the client certificate's subject through
                    ssl.principal.mapping.rules (User:ANONYMOUS without one, when
                    ssl.client.auth is none or requested); no rule applying closes
    SASL_PLAINTEXT  the SASL exchange first (server/sasl_gate.py), principal from it
    SASL_SSL        TLS, then the SASL exchange; the principal is the SASL one

It also notices a TLS ClientHello sent to a listener that does not speak
TLS (the frame "size" 0x1603.. is far above any limit): the connection is
closed as for any oversized frame, and counted and logged as such.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker.security.principal_mapping import NoMatchingRule, PrincipalMapper
from broker.security.tls import ReloadingContext, peer_subject
from broker.server.listener import ListenerSpec
from broker.server.tls_handshakes import TLS_ON_PLAINTEXT, HandshakeRecorder, HandshakeWatch

if TYPE_CHECKING:
    from broker.server.connection import Connection

log = logging.getLogger(__name__)

ANONYMOUS = "User:ANONYMOUS"


class ListenerSecurity:
    def __init__(
        self,
        spec: ListenerSpec,
        recorder: HandshakeRecorder,
        *,
        tls: ReloadingContext | None = None,
        watch: HandshakeWatch | None = None,
        mapper: PrincipalMapper | None = None,
        sasl: Any = None,
    ) -> None:
        self.spec = spec
        self.recorder = recorder
        self.tls = tls
        self.watch = watch
        self.mapper = mapper
        #: the listener's SASL settings (``server/sasl_gate.SaslListener``), or None
        self.sasl = sasl

    def connection_made(self, conn: Connection) -> bool:
        """Set the connection's principal (and SASL state); False refuses it."""
        conn.listener_name = self.spec.name
        if self.sasl is not None:
            self.sasl.begin(conn)
            return True
        if self.mapper is not None and conn.transport is not None:
            subject = peer_subject(conn.transport.get_extra_info("ssl_object"))
            if subject is not None:
                try:
                    conn.principal = "User:" + self.mapper.name(subject)
                except NoMatchingRule as exc:
                    log.warning("closing TLS connection from %s: %s", conn.peer, exc)
                    return False
        return True

    def oversized_frame(self, conn: Connection, head: bytes) -> None:
        """A frame size above the limit (the connection closes it): a TLS
        ClientHello on a non-TLS listener, or a SASL token past
        sasl.server.max.receive.size, which Kafka counts as a failed
        authentication ("Failing SASL authentication due to invalid receive size")."""
        if not self.spec.tls and len(head) >= 3 and head[0] == 0x16 and head[1] == 0x03:
            self.recorder.handshake_failed(self.spec.name, TLS_ON_PLAINTEXT)
            log.warning(
                "closing connection from %s: a TLS client on listener %s, which is %s",
                conn.peer,
                self.spec.name,
                self.spec.protocol,
            )
            return
        sasl = conn.sasl
        if sasl is not None and not sasl.authenticated:
            sasl.oversized_token()
