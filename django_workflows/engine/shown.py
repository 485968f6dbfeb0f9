"""What a task shows the person deciding (``Task(show=...)``), read from the instance's state.

Each line is a label and a value. It is read when someone looks, from the state as it is
then, so it never holds up a command. A key the state does not have is a line that says
so; a ``show`` hook that raises, or returns something that is not label/value pairs, is
one line that says it could not be shown: neither breaks the page that asks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from .context import HookContext, call_directly
from .definition import Task

Problem = Literal["missing", "error"]
LINK_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class Shown:
    """One line: ``problem`` is None, ``"missing"`` (the state has no such key) or
    ``"error"`` (the hook failed; ``value`` is None)."""

    label: str
    value: Any = None
    problem: Problem | None = None

    @property
    def link(self) -> str | None:
        """The value, when it is an http(s) URL: a receipt may be a link, a
        ``javascript:`` one never."""
        if not isinstance(self.value, str) or self.problem is not None:
            return None
        text = self.value.strip()
        try:
            parts = urlsplit(text)
        except ValueError:
            return None
        if parts.scheme.lower() in LINK_SCHEMES and parts.netloc and text == self.value:
            return text
        return None

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "value": self.value, "link": self.link,
                "problem": self.problem}


MISSING = object()


def value_at(state: Mapping[str, Any], path: str) -> Any:
    """``state[path]``, or through a dotted path (``receipt.url``, ``lines.0.amount``);
    :data:`MISSING` when it leads nowhere."""
    if path in state:
        return state[path]
    value: Any = state
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def label_of(path: str, titles: Mapping[str, str]) -> str:
    """The state schema's title of a key, or the key in words: ``document_number`` is
    "Document number", ``receipt.url`` "Receipt url"."""
    if path in titles:
        return titles[path]
    words = " ".join(path.replace("_", " ").replace("-", " ").replace(".", " ").split())
    return words[:1].upper() + words[1:]


def as_json(value: Any) -> Any:
    """A value the API can send: JSON as it is, anything else (a Decimal, a date) as text."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


def shown(task: Task, ctx: HookContext, *, titles: Mapping[str, str] | None = None,
          on_error: Callable[[BaseException], None] | None = None,
          call: Callable[..., Any] = call_directly) -> list[Shown]:
    """The lines ``task`` shows for the state in ``ctx``. ``titles``: the state schema's
    titles by key. ``on_error`` hears what a ``show`` hook raised (to log it)."""
    if task.show is None:
        return []
    if not callable(task.show):
        return [_line(ctx.state, key, titles or {}) for key in task.show]
    try:
        return [Shown(str(label), as_json(value)) for label, value in _pairs(call(task.show,
                                                                                  ctx))]
    except Exception as error:  # a hook's failure is one line, never the page's
        if on_error is not None:
            on_error(error)
        return [Shown("Could not be shown", None, "error")]


def _line(state: Mapping[str, Any], key: str, titles: Mapping[str, str]) -> Shown:
    value = value_at(state, key)
    if value is MISSING:
        return Shown(label_of(key, titles), None, "missing")
    return Shown(label_of(key, titles), as_json(value))


def _pairs(result: Any) -> list[tuple[Any, Any]]:
    if result is None:
        return []
    if isinstance(result, Mapping):
        return list(result.items())
    if isinstance(result, str | bytes) or not isinstance(result, Iterable):
        raise TypeError(f"show returned {type(result).__name__}, not label/value pairs")
    pairs = []
    for item in result:
        if isinstance(item, str | bytes) or not isinstance(item, Iterable):
            raise TypeError(f"show returned {item!r}, not a (label, value) pair")
        pair = tuple(item)
        if len(pair) != 2:
            raise TypeError(f"show returned {item!r}, not a (label, value) pair")
        pairs.append((pair[0], pair[1]))
    return pairs
