"""Reading a request: strict JSON bodies and merge patches, ``If-Match`` and ``Idempotency-Key``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from django.utils.http import parse_header_parameters
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from ..inputs import json_text as jsontext

IF_MATCH_PATTERN = r'^(\*|(W/)?"[0-9]+"|[0-9]+)$'
IDEMPOTENCY_KEY_PATTERN = r"^[!-~]{1,255}$"  # printable ASCII, no spaces
# A revision is a 64-bit integer at most, on every database (19 digits); an If-Match
# with a longer number is read as this one, which no instance reaches.
MAX_REVISION_DIGITS = 19
BEYOND_ANY_REVISION = 2**63


class JSONBodyParser(JSONParser):
    """Strict JSON in UTF-8: no NaN or Infinity, no numbers that overflow, no endless nesting.

    JSON is UTF-8 (RFC 8259 §8.1): a body may say ``charset=utf-8`` (in any case) or
    nothing; another charset answers 415 rather than being decoded, since a decoder such
    as UTF-7 turns harmless-looking bytes into markup (``+ADw-`` is ``<``).
    """

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        charset = declared_charset(media_type or "")
        if charset is not None and charset.lower() != "utf-8":
            raise exceptions.UnsupportedMediaType(
                media_type or "", detail=f"JSON must be sent as UTF-8, not {charset[:40]!r}: "
                                   "send charset=utf-8 or no charset.",
                code="unsupported_charset")
        try:
            return jsontext.loads(stream.read().decode("utf-8"))
        except jsontext.NestedTooDeeply:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None
        except ValueError as error:  # also UnicodeDecodeError
            raise exceptions.ParseError(f"JSON parse error - {error}") from None


class MergePatchParser(JSONBodyParser):
    """A JSON Merge Patch (RFC 7396), read as strictly as every JSON body."""

    media_type = "application/merge-patch+json"


def is_merge_patch(request: Request) -> bool:
    """Whether the body was declared a merge patch (not only matched by ``*/*``)."""
    media_type, _ = parse_header_parameters(request.content_type or "")
    return media_type.lower() == MergePatchParser.media_type


class NotAStateBody(exceptions.APIException):
    """A state update whose body is not ``{"state": {...}}``: 400 ``invalid``, saying what
    the body must be and naming each field that is wrong in ``fields``."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"

    def __init__(self, detail: str, fields: dict[str, list[str]]) -> None:
        super().__init__({"detail": detail, "code": self.default_code, "fields": fields})


# At most this many stray keys are named in the answer (a hostile body may have thousands).
STRAY_KEYS_NAMED = 10


def check_state_body(data: Any, *, merged: bool) -> None:
    """Raise :class:`NotAStateBody` unless ``data`` is ``{"state": ...}`` with nothing else.

    Keys beside ``state`` are refused rather than ignored: ``{"plan": "pro"}`` sent as a
    merge patch would otherwise answer 200 and change nothing. ``merged``: a merge patch,
    which may leave ``state`` out (``{}`` is the empty patch: no key changes); a replacement
    must give it. A body that is not an object is left to the serializer.
    """
    if not isinstance(data, dict):
        return
    strays = [key for key in data if key != "state"]
    missing = not merged and "state" not in data
    if not strays and not missing:
        return
    what = ("is merged into the instance's state" if merged
            else "replaces the instance's state")
    detail = f'The body of a state update is {{"state": {{...}}}}, whose "state" {what}'
    fields: dict[str, list[str]] = {}
    if missing:
        fields["state"] = ["This field is required."]
    if strays:
        named = [json.dumps(key, ensure_ascii=False)[:80] for key in strays[:STRAY_KEYS_NAMED]]
        more = ", ..." if len(strays) > STRAY_KEYS_NAMED else ""
        detail += f'; put {", ".join(named)}{more} inside "state"'
        for key in strays[:STRAY_KEYS_NAMED]:
            fields[key] = ['Not a field of the body: put it inside "state".']
    raise NotAStateBody(detail + ".", fields)


def merge_patch(target: Any, patch: Any) -> Any:
    """``patch`` applied to ``target`` as RFC 7396 says.

    An object merges key by key, recursively; a key set to null is removed; any
    other value (an array too) replaces what was there.
    """
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def declared_charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a Content-Type header, unquoted; None without one."""
    _, parameters = parse_header_parameters(content_type)
    return parameters.get("charset")


class BadHeader(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "bad_header"


def expected_revision(request: Request) -> int | None:
    """The revision ``If-Match`` names (``"3"``, ``3`` or ``W/"3"``); None without one."""
    value = request.headers.get("If-Match")
    if value is None or value.strip() == "*":
        return None
    if not re.fullmatch(IF_MATCH_PATTERN, value.strip()):
        raise BadHeader(f'If-Match must name one revision, such as "3"; got {value[:60]!r}',
                        "invalid_if_match")
    digits = value.strip().removeprefix("W/").strip('"').lstrip("0") or "0"
    if len(digits) > MAX_REVISION_DIGITS:
        # int() refuses numbers of more than 4300 digits. Such a tag is well formed; it
        # names a revision no instance has, so it is stale (412 with the current ETag).
        return BEYOND_ANY_REVISION
    return int(digits)


def idempotency_key(request: Request) -> str | None:
    value = request.headers.get("Idempotency-Key")
    if value is None:
        return None
    if not re.fullmatch(IDEMPOTENCY_KEY_PATTERN, value):
        raise BadHeader("Idempotency-Key must be 1 to 255 printable ASCII characters "
                        "without spaces", "invalid_idempotency_key")
    return value


def etag(revision: int) -> str:
    return f'"{revision}"'
