"""Reading JSON text that people and programs send: strictly, so what is read can be stored.

Python's ``json`` reads ``NaN`` and ``Infinity``, turns ``1e999`` into infinity,
and raises an unhelpful error on an integer of more than 4300 digits. JSON
(RFC 8259) carries none of them and PostgreSQL's jsonb refuses the first two,
so :func:`loads` refuses them all with a message that says what is wrong. The
API's body parser and the admin's JSON fields read through it.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Python reads at most this many digits into an int by default; a fixed limit here, so a
# project that raises Python's does not let integers through that it then cannot print.
MAX_INTEGER_DIGITS = 4300


class InvalidJSON(ValueError):
    """The text is not JSON this app accepts; the message says why."""


class NestedTooDeeply(InvalidJSON):
    """The text nests arrays or objects deeper than Python can read."""


def _integer(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise InvalidJSON(f"an integer of {digits} digits is longer than the "
                          f"{MAX_INTEGER_DIGITS} digits a number may have")
    return int(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidJSON(f"{text[:40]} is out of range for a JSON number")
    return value


def _no_constant(name: str) -> Any:
    raise InvalidJSON(f"{name} is not valid JSON")


def loads(text: str) -> Any:
    """``json.loads`` without NaN, Infinity, overflowing numbers or endless integers.

    Raises :class:`InvalidJSON` (a ``ValueError``) for anything else that is not JSON.
    """
    try:
        return json.loads(text, parse_int=_integer, parse_float=_finite,
                          parse_constant=_no_constant)
    except RecursionError:
        raise NestedTooDeeply("nested too deeply") from None
    except InvalidJSON:
        raise
    except ValueError as error:  # json.JSONDecodeError
        raise InvalidJSON(str(error)) from None
