"""What a database cannot store of a JSON value, checked before a state is sent to it.

PostgreSQL's jsonb refuses NUL characters and unpaired surrogates; very deep
nesting is refused too, before anything recurses through it. The API and the
admin's forms check what people type with :func:`json_problems`.
"""

from __future__ import annotations

from typing import Any

MAX_STATE_DEPTH = 100  # levels of nesting a state people send may have


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain NUL characters"
    if any("\ud800" <= char <= "\udfff" for char in text):
        return "must not contain unpaired surrogates"
    return None


def json_problems(value: Any) -> dict[str, Any]:
    """What a database cannot store of a JSON value, as nested field errors (empty: fine)."""
    problems: dict[str, Any] = {}
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) > MAX_STATE_DEPTH:
            _put(problems, path[:MAX_STATE_DEPTH],
                 f"is nested deeper than {MAX_STATE_DEPTH} levels")
            continue
        if isinstance(item, dict):
            for key, child in item.items():
                problem = _bad_text(str(key))
                if problem:
                    _put(problems, path, f"has a key that {problem}")
                else:
                    stack.append((child, (*path, str(key))))
        elif isinstance(item, list):
            stack.extend((child, (*path, str(i))) for i, child in enumerate(item))
        elif isinstance(item, str):
            problem = _bad_text(item)
            if problem:
                _put(problems, path, f"This text {problem}.")
    return problems


def _put(problems: dict[str, Any], path: tuple[str, ...], message: str) -> None:
    node = problems
    for part in path[:-1]:
        existing = node.setdefault(part, {})
        if not isinstance(existing, dict):
            return  # an outer problem is already reported
        node = existing
    key = path[-1] if path else "non_field_errors"
    if not message.endswith("."):
        message = f"This value {message}."
    if isinstance(node.get(key), dict):
        return
    node.setdefault(key, []).append(message)


def problem_lines(problems: dict[str, Any], prefix: str = "") -> list[str]:
    """:func:`json_problems` as lines of text: ``"items.0.name: This text must not ..."``."""
    lines = []
    for key, found in problems.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(found, dict):
            lines += problem_lines(found, name)
        else:
            lines += [m if name == "non_field_errors" else f"{name}: {m}" for m in found]
    return lines
