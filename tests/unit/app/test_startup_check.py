"""``broker serve`` refusing a configuration in one line, ``broker serve --check``, and the
"did you mean" of a misspelt key (broker/startup.py, broker/config.py ``suggest_key``).

In-process through ``broker.cli.main``: a configuration error stops ``run``
before an event loop starts, and ``--check`` never starts one, so nothing
here binds a port (tests/integration/test_startup_errors.py has the ports).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.cli import main
from broker.config import BrokerConfig, suggest_key
from broker.errors import InvalidConfigError
from tests.integration.security_setup import Pki

FORM = "expected NAME://host:port[,NAME://host:port]"


def serve(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("broker: ")
    return lines[0]


@pytest.mark.parametrize(
    ("listeners", "words"),
    [
        ("PLAINTEXT//127.0.0.1:9092", ["'PLAINTEXT//127.0.0.1:9092'", "no '://'", FORM]),
        ("://127.0.0.1:9092", ["no listener name", FORM]),
        ("PLAINTEXT://127.0.0.1:notaport", ["port 'notaport'", "is not a number", FORM]),
        ("PLAINTEXT://127.0.0.1", ["no port", FORM]),
        ("PLAINTEXT://127.0.0.1:70000", ["port 70000", "out of range", FORM]),
        (
            "FOO://127.0.0.1:9092",
            ["listener FOO", "add FOO:<PROTOCOL> to listener.security.protocol.map"],
        ),
        (
            "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093",
            ["different name", "PLAINTEXT is used twice"],
        ),
        ("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092", ["different port", "9092"]),
    ],
)
def test_a_malformed_listeners_value_is_one_line_naming_the_part(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, listeners: str, words: list[str]
) -> None:
    for extra in ([], ["--check"]):
        code, _, err = serve(
            capsys, *extra, "--override", f"listeners={listeners}", "--override",
            f"log.dirs={tmp_path / 'data'}",
        )  # fmt: skip
        line = one_line(err)
        assert code == 2
        assert line.startswith("broker: configuration error: Invalid value")
        assert "configuration listeners" in line
        for word in words:
            assert word in line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("key", "close"),
    [
        ("num.partiton", "num.partitions"),
        ("log.retension.hours", "log.retention.hours"),
        ("auto.create.topic.enable", "auto.create.topics.enable"),
        ("listener.name.mtls.ssl.client.auht", "listener.name.mtls.ssl.client.auth"),
        ("listener.name.sasl_ssl.plain.sasl.jaas.confg", "listener.name.sasl_ssl.plain.sasl.jaas.config"),
    ],
)  # fmt: skip
def test_a_misspelt_key_gets_the_nearest_declared_one(key: str, close: str) -> None:
    assert suggest_key(key) == close
    with pytest.raises(InvalidConfigError) as err:
        BrokerConfig.from_properties({key: "3"})
    assert str(err.value) == f"Unknown configuration key: {key} (did you mean {close}?)"


def test_a_key_like_no_other_gets_no_guess() -> None:
    assert suggest_key("zzzzzz") is None
    with pytest.raises(InvalidConfigError, match=r"^Unknown configuration key: zzzzzz$"):
        BrokerConfig.from_properties({"zzzzzz": "1"})


def test_misspelt_keys_in_a_file_and_in_an_override(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partiton=3\n")
    code, _, err = serve(capsys, str(props))
    assert code == 2
    assert one_line(err) == (
        "broker: configuration error: Unknown configuration key: num.partiton"
        " (did you mean num.partitions?)"
    )
    code, _, err = serve(capsys, "--check", "--override", "log.segment.byte=1024")
    assert code == 2
    assert "did you mean log.segment.bytes?" in one_line(err)


def test_bad_values_and_unreadable_files_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = serve(capsys, "--override", "num.partitions=three")
    assert code == 2
    assert "Invalid value three for configuration num.partitions" in one_line(err)
    code, _, err = serve(capsys, str(tmp_path / "missing.properties"))
    assert code == 2
    line = one_line(err)
    assert f"cannot read the properties file {tmp_path / 'missing.properties'}" in line
    assert "No such file or directory" in line
    code, _, err = serve(capsys, str(tmp_path))
    assert code == 2 and "Is a directory" in one_line(err)
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes(b"num.partitions=3\n# caf\xe9\n")
    code, _, err = serve(capsys, str(latin1))
    assert code == 2
    assert "is not UTF-8 text (byte 0xe9 at offset 22)" in one_line(err)
    code, _, err = serve(capsys, "--override", "metrics.listener=localhost")
    assert code == 2
    assert "configuration metrics.listener: expected host:port" in one_line(err)
    code, _, err = serve(capsys, "--override", "num.partitions")
    assert code == 2 and "Malformed override 'num.partitions'" in one_line(err)


def test_check_accepts_a_configuration_without_touching_the_log_dirs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "not" / "made"
    code, out, err = serve(
        capsys, "--check", "--override", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://:9093",
        "--override", f"log.dirs={data}", "--override", "metrics.listener=",
        *pki_overrides(tmp_path, "SSL"),
    )  # fmt: skip
    assert code == 0, err
    assert out == (
        "configuration OK: listeners PLAINTEXT://127.0.0.1:9092 (PLAINTEXT),"
        " SSL://:9093 (SSL, client certificates none); metrics.listener off;"
        f" log.dirs {data}\n"
    )
    assert not data.parent.exists()


def pki_overrides(tmp_path: Path, listener: str, **extra: str) -> list[str]:
    pki = Pki.make(tmp_path / "pki")
    settings = {**pki.server_overrides(listener), **extra}
    return [a for k, v in settings.items() for a in ("--override", f"{k}={v}")]


def test_check_loads_the_tls_stores_and_sasl_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The key store is read: a wrong key password is found by --check, as by a start."""
    listeners = ["--override", "listeners=SASL_SSL://127.0.0.1:0"]
    scram = {"listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    code, _, err = serve(capsys, "--check", *listeners, *pki_overrides(tmp_path, "SASL_SSL"))
    assert code == 2  # SASL_SSL with Kafka's default mechanism, GSSAPI
    assert "configuration sasl.enabled.mechanisms" in one_line(err)
    bad = pki_overrides(
        tmp_path, "SASL_SSL", **scram, **{"listener.name.sasl_ssl.ssl.key.password": "no"}
    )
    code, _, err = serve(capsys, "--check", *listeners, *bad)
    assert code == 2
    assert "wrong ssl.key.password" in one_line(err)
    code, out, err = serve(
        capsys, "--check", *listeners, *pki_overrides(tmp_path, "SASL_SSL", **scram)
    )
    assert code == 0, err
    assert "SASL_SSL://127.0.0.1:0 (SASL_SSL, client certificates none, SCRAM-SHA-512)" in out
