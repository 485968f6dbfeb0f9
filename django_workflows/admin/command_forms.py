"""What a command's button asks for, as a Django form made from the command's declaration.

Each field a command takes becomes a form field of its kind (``engine.Input``): text,
a number, a checkbox, a choice, or JSON for objects, lists and any value. Its inputs
are named ``<command>-<field>`` (the form's prefix), so the buttons of one page never
mix up each other's fields; the fields the page fills in from where a button is (the
operation it acts on, the journal entry a retry starts from) are hidden.
"""

from __future__ import annotations

from typing import Any

from django import forms

from .. import engine


def _form_field(taken: engine.Input, hidden: bool) -> forms.Field:
    options: dict[str, Any] = {"required": taken.required, "label": taken.name.capitalize()}
    if hidden:  # the page fills it in: of its kind (a position is a number), not shown
        options["widget"] = forms.HiddenInput
        if taken.kind == "integer":
            return forms.IntegerField(**options)
        return forms.CharField(**options)
    if taken.kind == "text":
        return forms.CharField(max_length=1000, **options)
    if taken.kind == "integer":
        return forms.IntegerField(**options)
    if taken.kind == "number":
        return forms.FloatField(**options)
    if taken.kind == "boolean":
        return forms.BooleanField(**{**options, "required": False})
    if taken.kind == "choice":
        return forms.TypedChoiceField(choices=[(c, c) for c in taken.choices],
                                      coerce=lambda value: value, **options)
    if taken.kind in ("object", "array", "json"):
        return forms.JSONField(widget=forms.Textarea(attrs={"rows": 3, "cols": 40}),
                               **options)
    raise TypeError(f"Command {taken.name!r}: the admin cannot ask for {taken.name!r}")


class CommandForm(forms.Form):
    """The form of what ``declared`` takes (the field it acts on hidden), its inputs named
    ``<command>-<field>``."""

    def __init__(self, declared: type[engine.PersonCommand], data: Any = None,
                 **options: Any) -> None:
        super().__init__(data, prefix=declared.name, **options)
        filled = declared.filled_by_page()
        for taken in declared.inputs():
            self.fields[taken.name] = _form_field(taken, hidden=taken.name in filled)


def bound_form(declared: type[engine.PersonCommand], data: Any = None, *,
               offered: dict[str, tuple[Any, ...]] | None = None, **initial: Any
               ) -> forms.Form:
    """The form of ``declared`` with its ``<command>-<field>`` names, bound to ``data``.

    ``offered``: for a field, the values to offer as a choice now (the declaration's
    ``offered``: ``rewind``'s earlier steps) instead of a text to type.
    """
    form = CommandForm(declared, data, initial=initial or None)
    for name, values in (offered or {}).items():
        field = form.fields.get(name)
        if field is not None and values and not isinstance(field.widget, forms.HiddenInput):
            form.fields[name] = forms.TypedChoiceField(
                choices=[(value, value) for value in values], coerce=lambda value: value,
                required=field.required, label=field.label)
    return form


def given_values(form: forms.Form) -> dict[str, Any]:
    """What a valid form gives the command: a field left blank is not given (its default)."""
    return {name: value for name, value in form.cleaned_data.items() if value not in ("", None)}
