"""An API's error response from its schema (Kafka's ``AbstractRequest.getErrorResponse``).

For APIs whose response carries a top-level error code in the version
asked for::

    Response => error_code [error_message] ...   every other field at its default
                ^ the code  ^ the message, where the version has the field

APIs whose error response repeats the request's topics or partitions
(Produce, Metadata, ListOffsets, CreateTopics, ...) have none here: their
callers close the connection instead (docs/deviations.md).
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.protocol.api_keys import ApiKey
from broker.protocol.data import Data
from broker.protocol.messages import CODECS


def error_response(api: ApiKey, version: int, code: ErrorCode, message: str | None) -> Data | None:
    """``api``'s response in ``version`` with ``code`` (and ``message`` where it
    has the field), or None when its response has no top-level error code."""
    fields = {f.name: f for f in api.response.struct.fields}
    code_field = fields.get("error_code")
    if code_field is None or not code_field.present_in(version):
        return None
    # any API's response: its fields by the names the schema gives
    response = CODECS[api.response.name].cls()
    setattr(response, code_field.name, code)
    text = fields.get("error_message")
    if message is not None and text is not None and text.present_in(version):
        setattr(response, text.name, message)
    return response
