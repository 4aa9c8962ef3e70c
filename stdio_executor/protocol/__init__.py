"""The stdio-executor wire protocol: message types, codec and JSON Schema.

Depends only on msgspec and the standard library, so a Python host can use it alone.
"""

from .codec import CommandDecoder, decode_event, encode_event
from .messages import *  # noqa: F403
from .messages import __all__ as _messages_all

__all__ = ["CommandDecoder", "decode_event", "encode_event", *_messages_all]
