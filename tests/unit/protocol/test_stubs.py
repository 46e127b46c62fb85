"""The typed stub of the generated classes: up to date, and naming exactly the runtime classes."""

from __future__ import annotations

import ast
import inspect

import pytest

from broker.protocol import API_KEYS, DecodeError, encode, messages, stubs
from broker.protocol.data import Data
from broker.protocol.header import encode_response_header
from broker.protocol.messages import (
    CODECS,
    MetadataRequest,
    MetadataResponse,
    decode_response_to,
)
from broker.protocol.schema import field, message


def _stub_tree() -> list[ast.stmt]:
    return ast.parse(stubs.STUB_PATH.read_text(encoding="utf-8")).body


def _stub_classes() -> dict[str, ast.ClassDef]:
    """The message classes of the stub (not its type-only ``Request`` base)."""
    return {
        node.name: node
        for node in _stub_tree()
        if isinstance(node, ast.ClassDef) and node.name != "Request"
    }


def _declared(cls: ast.ClassDef) -> tuple[list[str], list[str], dict[str, ast.ClassDef]]:
    """(annotated attributes, __init__ parameters, nested classes) of a stub class."""
    attributes = [
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    inits = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    assert len(inits) == 1, cls.name
    parameters = [a.arg for a in inits[0].args.args[1:]]
    nested = {n.name: n for n in cls.body if isinstance(n, ast.ClassDef)}
    return attributes, parameters, nested


def test_committed_stub_matches_the_schemas():
    assert stubs.check() == []  # else: python -m broker.protocol.stubs


def test_check_fails_on_a_stale_stub(tmp_path, capsys):
    stale = tmp_path / "message_classes.pyi"
    stale.write_text(stubs.render().replace("base_offset: int", "base_offset: str"))
    assert stubs.main(["--check", "--path", str(stale)]) == 1
    assert "base_offset: str" in capsys.readouterr().out
    assert stubs.main(["--path", str(stale)]) == 0
    assert stubs.main(["--check", "--path", str(stale)]) == 0


def test_stub_names_every_runtime_message_class():
    declared = _stub_classes()
    assert set(declared) == set(CODECS)
    for name, codec in CODECS.items():
        assert getattr(messages, name) is codec.cls


def test_each_request_class_names_its_response_class():
    declared = _stub_classes()
    bases = {name: ast.unparse(node.bases[0]) for name, node in declared.items()}
    assert all(len(node.bases) == 1 for node in declared.values())
    for api in API_KEYS.values():
        # the pairing decode_response_to relies on: the stub's and the codec tables' agree
        assert bases[api.request.name] == f"Request[{api.response.name}]"
        assert bases[api.response.name] == "Data"
    order = list(declared)
    for api in API_KEYS.values():
        # mypy needs the base defined above the class (see stubs.render)
        assert order.index(api.response.name) < order.index(api.request.name)


def test_request_base_is_for_the_type_checker_only():
    (base,) = [n for n in _stub_tree() if isinstance(n, ast.ClassDef) and n.name == "Request"]
    assert [ast.unparse(b) for b in base.bases] == ["Data", "Generic[_R_co]"]
    assert not hasattr(messages, "Request")
    assert MetadataRequest.__mro__ == (MetadataRequest, Data, object)


def test_decode_response_to_gives_the_requests_response_class():
    response = MetadataResponse(throttle_time_ms=7, cluster_id="c")
    body = encode(response, 12).to_bytes()
    frame = encode_response_header(3, 1) + body
    correlation_id, decoded = decode_response_to(MetadataRequest(), 12, frame)
    assert correlation_id == 3
    assert type(decoded) is MetadataResponse
    assert decoded == response
    with pytest.raises(DecodeError):
        decode_response_to(MetadataRequest(), 12, frame[: len(frame) // 2])


def test_stub_fields_and_nested_classes_are_the_runtime_ones():
    for name, node in _stub_classes().items():
        root = getattr(messages, name)
        attributes, parameters, nested = _declared(node)
        assert attributes == parameters == list(root.fields), name
        assert parameters == list(inspect.signature(root).parameters), name
        runtime_nested = {attr for attr, value in vars(root).items() if isinstance(value, type)}
        assert set(nested) == runtime_nested, name
        for inner_name, inner in nested.items():
            cls = getattr(root, inner_name)
            assert issubclass(cls, Data)
            inner_attributes, inner_parameters, deeper = _declared(inner)
            assert inner_attributes == inner_parameters == list(cls.fields), cls.__qualname__
            assert not deeper  # nested structs hang off the message class only


def test_field_types_follow_the_codec():
    spec = message(
        "ExampleResponse",
        api_key=0,
        valid="0-3",
        flexible="2+",
        fields=[
            field("count", "int64", default=-1),
            field("name", "string", "1+", nullable="1+", default=None),
            field("data", "records", nullable="0+"),
            field("ids", "[]uuid"),
            field("blob", "bytes"),
        ],
    )
    request = message(
        "ExampleRequest",
        api_key=0,
        valid="0",
        flexible="none",
        fields=[
            field("data", "records", nullable="0+"),
        ],
    )
    text = stubs.render([(request, spec)])
    assert "class ExampleResponse(Data):\n" in text
    assert "class ExampleRequest(Request[ExampleResponse]):\n" in text
    assert text.index("class ExampleResponse") < text.index("class ExampleRequest")
    assert "    count: int  #" not in text  # no note for a field in every version
    assert "    count: int\n" in text
    assert "    name: str | None  # v1+, nullable v1+\n" in text
    assert "    data: Sized | None  # nullable v0+\n" in text
    assert "    ids: list[UUID]\n" in text
    assert "        count: int = -1,\n" in text
    assert "        name: str | None = None,\n" in text
    assert "        ids: list[UUID] = ...,\n" in text
    assert "        blob: bytes = ...,\n" in text
    assert "    data: memoryview | None  # nullable v0+\n" in text
