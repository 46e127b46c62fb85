"""The typed stub of the generated classes: up to date, and naming exactly the runtime classes."""

from __future__ import annotations

import ast
import inspect

from broker.protocol import messages, stubs
from broker.protocol.data import Data
from broker.protocol.messages import CODECS
from broker.protocol.schema import field, message


def _stub_classes() -> dict[str, ast.ClassDef]:
    tree = ast.parse(stubs.STUB_PATH.read_text(encoding="utf-8"))
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


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
    stale.write_text(stubs.render(stubs.specs()).replace("base_offset: int", "base_offset: str"))
    assert stubs.main(["--check", "--path", str(stale)]) == 1
    assert "base_offset: str" in capsys.readouterr().out
    assert stubs.main(["--path", str(stale)]) == 0
    assert stubs.main(["--check", "--path", str(stale)]) == 0


def test_stub_names_every_runtime_message_class():
    declared = _stub_classes()
    assert set(declared) == set(CODECS)
    for name, codec in CODECS.items():
        assert getattr(messages, name) is codec.cls


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
    text = stubs.render([spec])
    assert "    count: int  #" not in text  # no note for a field in every version
    assert "    count: int\n" in text
    assert "    name: str | None  # v1+, nullable v1+\n" in text
    assert "    data: Sized | None  # nullable v0+\n" in text
    assert "    ids: list[UUID]\n" in text
    assert "        count: int = -1,\n" in text
    assert "        name: str | None = None,\n" in text
    assert "        ids: list[UUID] = ...,\n" in text
    assert "        blob: bytes = ...,\n" in text
    request = message(
        "ExampleRequest",
        api_key=0,
        valid="0",
        flexible="none",
        fields=[
            field("data", "records", nullable="0+"),
        ],
    )
    assert "    data: memoryview | None  # nullable v0+\n" in stubs.render([request])
