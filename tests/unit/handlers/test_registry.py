"""Each handler names (``RequestHandler[...]``) the request class its API key decodes to."""

from __future__ import annotations

import typing

import pytest

from broker.handlers.base import RequestHandler
from broker.handlers.config_changes import AlterRequest
from broker.handlers.registry import HANDLER_CLASSES
from broker.protocol.api_keys import API_KEYS
from broker.protocol.messages import CODECS


def _declared_request(cls: type) -> object:
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            if origin is RequestHandler:
                (arg,) = typing.get_args(base)
                return arg
    raise AssertionError(f"{cls.__name__} does not name its request class")


@pytest.mark.parametrize("handler", HANDLER_CLASSES, ids=lambda h: h.__name__)
def test_handler_declares_its_api_request_class(handler):
    request_cls = CODECS[API_KEYS[handler.API_KEY].request.name].cls
    declared = _declared_request(handler)
    if typing.get_origin(declared) is AlterRequest:
        # the two AlterConfigs APIs share a handler over the shape they have in common
        assert {"resources", "validate_only"} <= set(request_cls.fields)
    else:
        assert declared is request_cls
