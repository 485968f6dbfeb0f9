"""Hypothesis strategies for hostile input: what the fuzzes of the API and the admin send.

Each mixes values a client would send with the ones that broke us before: NUL
characters, numbers of thousands of digits, numbers JSON cannot carry, deep
nesting, unpaired surrogates, other charsets.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# What a web server hands on of a header: latin-1 text without control characters.
header_characters = st.characters(min_codepoint=0x20, max_codepoint=0xFF) | st.just("\t")


def long_digits() -> st.SearchStrategy[str]:
    """A number of up to 6000 digits (Python's int() reads 4300), sometimes signed."""
    # Hypothesis favours small integers: the lengths that matter are named as well.
    lengths = st.sampled_from([1, 19, 20, 4300, 4301, 5000, 6000]) | st.integers(1, 6000)
    return st.builds(lambda sign, digit, n: sign + digit * n, st.sampled_from(["", "-", "0"]),
                     st.sampled_from("159"), lengths)


def nasty_text(*known: str) -> st.SearchStrategy[str]:
    """Text for a query parameter or a form field: ``known`` values, and worse."""
    return st.one_of(
        st.sampled_from(known) if known else st.nothing(),
        st.text(max_size=30),
        st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=10).map(
            lambda text: f"{text}\x00{text}"),
        long_digits(),
        st.sampled_from(["", " ", "-1", "0", "1.5", "1e999", "NaN", "9" * 20, "\ufeff",
                         "%00", "../", "<script>", "🙂", "\u202e"]),
    )


def json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                                    allow_infinity=False)
    scalars |= st.text(max_size=20)
    return st.recursive(scalars, lambda children: st.lists(children, max_size=4)
                        | st.dictionaries(st.text(max_size=8), children, max_size=4),
                        max_leaves=12)


def json_text(*, object_keys: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """Text typed or sent as JSON: valid objects (some with ``object_keys``) and worse."""
    objects = st.dictionaries(st.sampled_from(object_keys) | st.text(max_size=8) if object_keys
                              else st.text(max_size=8), json_values(), max_size=5)
    broken_numbers = st.builds(
        lambda number: '{"email": "", "plan": null, "n": NUMBER}'.replace("NUMBER", number),
        long_digits() | st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "-Infinity",
                                         "1e-999", "-0", "0.1e400"]))
    return st.one_of(
        objects.map(json.dumps),
        json_values().map(json.dumps),
        broken_numbers,
        st.integers(1, 20_000).map(lambda depth: "[" * depth + "]" * depth),
        st.integers(0, 12_000).map(lambda n: json.dumps({"email": "x" * n, "plan": None})),
        st.sampled_from(['{"email": "\\u0000", "plan": null}', '{"email": "\\ud800"}',
                         '{"\\u0000": 1}', "\ufeff{}", "{", "", "null", "[]", '"x"',
                         '{"email": "a", "email": "b"}']),
        st.text(max_size=40),
    )
