"""What ``AdminConnection`` says when a PLAINTEXT tool meets a TLS or SASL listener.

A fake socket plays each listener's answer to the tool's bytes (the real
listeners are in tests/integration/test_topic_tools.py)."""

from __future__ import annotations

import pytest

from broker.admin.client import AdminClientError, AdminConnection, BrokerRefused, check
from broker.errors import ErrorCode
from broker.protocol.messages import ApiVersionsResponse, MetadataRequest, encode


class FakeSocket:
    """Answers with ``replies`` (bytes each recv, then b"" = closed, or an OSError)."""

    def __init__(self, *replies: bytes | OSError) -> None:
        self.replies = list(replies)
        self.sent = b""

    def sendall(self, data: bytes) -> None:
        self.sent += data

    def recv(self, n: int) -> bytes:
        if not self.replies:
            return b""
        reply = self.replies.pop(0)
        if isinstance(reply, OSError):
            raise reply
        if len(reply) > n:
            self.replies.insert(0, reply[n:])
        return reply[:n]

    def close(self) -> None:
        pass


def connect(sock: FakeSocket) -> AdminConnection:
    conn = AdminConnection(sock, ("127.0.0.1", 9093))  # type: ignore[arg-type]
    conn._negotiate()
    return conn


def api_versions_answer() -> bytes:
    body = encode(ApiVersionsResponse(error_code=0, api_keys=[]), 3).to_bytes()
    frame = (1).to_bytes(4, "big") + body  # correlation id 1
    return len(frame).to_bytes(4, "big") + frame


def test_closed_before_api_versions_may_need_tls_or_sasl() -> None:
    with pytest.raises(AdminClientError) as exc:
        connect(FakeSocket())
    text = str(exc.value)
    assert "closed the connection without answering ApiVersions" in text
    assert "may need TLS or SASL" in text and "--command-config FILE" in text
    assert "security.protocol=SSL" in text


def test_reset_before_api_versions_is_the_same_hint() -> None:
    with pytest.raises(AdminClientError, match="may need TLS or SASL"):
        connect(FakeSocket(ConnectionResetError(104, "Connection reset by peer")))


def test_a_tls_alert_record_says_tls() -> None:
    alert = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46])  # fatal protocol_version
    with pytest.raises(AdminClientError) as exc:
        connect(FakeSocket(alert))
    assert "answered ApiVersions with a TLS alert: the listener needs TLS" in str(exc.value)
    assert "--command-config FILE" in str(exc.value)


def test_closed_after_api_versions_may_need_sasl() -> None:
    conn = connect(FakeSocket(api_versions_answer()))
    with pytest.raises(AdminClientError) as exc:
        conn.call(MetadataRequest(topics=None), 1)
    text = str(exc.value)
    assert "answered ApiVersions, then closed the connection on Metadata" in text
    assert "may need SASL" in text and "sasl.jaas.config" in text


def test_illegal_sasl_state_names_the_fix() -> None:
    with pytest.raises(BrokerRefused, match="may need SASL: pass --command-config FILE"):
        check(ErrorCode.ILLEGAL_SASL_STATE, "Metadata")
    with pytest.raises(BrokerRefused) as plain:
        check(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Metadata")
    assert "SASL" not in str(plain.value)
