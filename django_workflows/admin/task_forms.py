"""A real Django form for a task's input, made from its JSON Schema (or pydantic model).

Each property becomes a field: text (a textarea for long text), numbers,
booleans, choices from ``enum`` (or ``oneOf`` of ``const`` values with titles),
dates from ``format: date``, emails from ``format: email``. ``title`` is the
label, ``description`` the help text, ``default`` the initial value, and
``required`` the required fields. A property of another kind (an object, a
list) is asked for as JSON, the one case where a person types JSON.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.validators import RegexValidator

from ..inputs import json_text as jsontext

LONG_TEXT = 200  # characters: a string that may be longer is asked for in a textarea


def _resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` with a local ``$ref`` (``#/$defs/...``, as pydantic writes) followed."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = schema
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _kind(schema: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The property's own schema, and whether it may be null (``anyOf [X, null]``)."""
    node = _resolve(schema, node)
    options = node.get("anyOf") or node.get("oneOf")
    if options and not all("const" in option for option in options):
        kinds = [_resolve(schema, option) for option in options]
        others = [k for k in kinds if k.get("type") != "null"]
        if len(others) == 1:
            merged = {**{k: v for k, v in node.items() if k not in ("anyOf", "oneOf")},
                      **others[0]}
            return merged, len(others) < len(kinds)
    kind = node.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return {**node, "type": others[0] if len(others) == 1 else others}, "null" in kind
    return node, False


def _choices(node: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    if "enum" in node:
        return [(value, str(value)) for value in node["enum"] if value is not None]
    options = node.get("oneOf") or node.get("anyOf")
    if options and all("const" in option for option in options):
        return [(o["const"], o.get("title") or str(o["const"])) for o in options]
    return None


class JSONValueField(forms.CharField):
    """A property that is neither text, a number, a boolean nor a choice: typed as JSON."""

    widget = forms.Textarea(attrs={"rows": 4, "class": "vLargeTextField", "spellcheck": "false"})

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value) or ""  # CharField's empty_value: "" here
        if not text.strip():
            return None
        try:
            return jsontext.loads(text)
        except jsontext.InvalidJSON as error:
            raise forms.ValidationError(f"Enter valid JSON: {error}", code="invalid") from None

    def prepare_value(self, value: Any) -> Any:
        return value if isinstance(value, str) else json.dumps(value)


def _field(node: Mapping[str, Any], required: bool) -> forms.Field:
    options: dict[str, Any] = {"required": required, "label": node.get("title"),
                               "help_text": node.get("description") or ""}
    if "default" in node:
        options["initial"] = node["default"]
    choices = _choices(node)
    kind = node.get("type")
    if choices is not None:
        values = {str(value): value for value, _ in choices}
        blank = [] if required else [("", "—")]
        return forms.TypedChoiceField(choices=blank + [(str(v), label) for v, label in choices],
                                      coerce=values.__getitem__, empty_value=None, **options)
    if kind == "boolean":
        return forms.BooleanField(**{**options, "required": False})
    if kind in ("integer", "number"):
        bounds = {"min_value": node.get("minimum"), "max_value": node.get("maximum")}
        field_class = forms.IntegerField if kind == "integer" else forms.FloatField
        return field_class(**options, **{k: v for k, v in bounds.items() if v is not None})
    if kind == "string":
        text: dict[str, Any] = {"max_length": node.get("maxLength"),
                                "min_length": node.get("minLength")}
        text = {k: v for k, v in text.items() if v is not None}
        if node.get("pattern"):
            options["validators"] = [RegexValidator(node["pattern"])]
        if node.get("format") == "date":
            return forms.DateField(widget=forms.DateInput(attrs={"type": "date"}), **options)
        if node.get("format") == "email":
            return forms.EmailField(**options, **text)
        long = text.get("max_length") is None or text["max_length"] > LONG_TEXT
        widget = forms.Textarea(attrs={"rows": 4, "cols": 60}) if long else None
        return forms.CharField(widget=widget, strip=True, **options, **text)
    return JSONValueField(**options)


def form_for(schema: Mapping[str, Any]) -> type[forms.Form]:
    """A form class with a field per property of ``schema``, in the schema's order."""
    required = set(schema.get("required") or ())
    fields = {}
    for name, prop in (schema.get("properties") or {}).items():
        node, nullable = _kind(schema, prop)
        fields[name] = _field(node, name in required and not nullable)
    return type("TaskInputForm", (forms.Form,), fields)


def input_from(form: forms.Form) -> dict[str, Any]:
    """The cleaned form as the task's input: dates as ISO text, empty optional fields left out."""
    found = {}
    for name, value in form.cleaned_data.items():
        if value in (None, "") and not form.fields[name].required:
            continue
        found[name] = value.isoformat() if isinstance(value, datetime.date) else value
    return found
