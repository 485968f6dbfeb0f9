"""The admin's two forms: a new instance (through ``create``) and the state (``update_state``)."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from .. import registry
from ..exceptions import InvalidState, StateTooLarge
from ..inputs import json_text as jsontext
from ..inputs.storable import MAX_STATE_DEPTH, json_problems, problem_lines


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


class JSONObjectField(forms.CharField):
    """A JSON object typed as text; blank is None when not required."""

    widget = forms.Textarea(attrs={"rows": 12, "cols": 80, "class": "vLargeTextField dwf-json",
                                   "spellcheck": "false"})

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value) or ""  # CharField's empty_value: "" here
        if not text.strip():
            return None
        try:  # strict: NaN, 1e999 or a 5000-digit integer is a message, not a 500
            parsed = jsontext.loads(text)
        except jsontext.NestedTooDeeply:
            raise forms.ValidationError(f"The state is nested deeper than {MAX_STATE_DEPTH} "
                                        "levels.", code="too_deep") from None
        except jsontext.InvalidJSON as error:
            raise forms.ValidationError(f"Enter valid JSON: {error}", code="invalid") from None
        if not isinstance(parsed, dict):
            raise forms.ValidationError("The state must be a JSON object ({...}).",
                                        code="not_an_object")
        problems = json_problems(parsed)
        if problems:  # PostgreSQL would refuse it with an error: say what to fix instead
            raise forms.ValidationError(problem_lines(problems), code="not_storable")
        return parsed


def workflow_choices() -> list[tuple[str, str]]:
    definitions = sorted((d for d in registry.all_definitions() if not d.nested_only),
                         key=lambda d: (d.title or d.id).lower())
    return [(d.id, f"{d.title} ({d.id}, version {d.version})") for d in definitions]


class CreateInstanceForm(forms.Form):
    workflow = forms.ChoiceField(choices=workflow_choices)
    state = JSONObjectField(
        label="Initial state", required=False,
        help_text="A JSON object checked against the workflow's state schema. "
                  "Leave blank for the workflow's own initial state.")
    start = forms.BooleanField(required=False, initial=True,
                               help_text="Start the instance at once (enter its first step).")


class StateForm(forms.Form):
    state = JSONObjectField(label="State", required=True)
    # The revision the form was made from: saving over a newer one is refused. It is a
    # hidden field, so its errors are shown with the form's own (state.html).
    revision = forms.IntegerField(widget=forms.HiddenInput, min_value=0, error_messages={
        key: "This page does not say which revision it was made from. Reload the page, "
             "then edit the state again." for key in ("required", "invalid", "min_value")})


def unread_create_form(problem: str) -> CreateInstanceForm:
    """The add form for a post that could not be read: as first shown, with ``problem``."""
    choices = workflow_choices()
    form = CreateInstanceForm({"workflow": choices[0][0] if choices else "", "state": "",
                               "start": "on"})
    form.add_error("state", problem)
    return form


def unread_state_form(state: Any, revision: int, problem: str) -> StateForm:
    """The state form for a post that could not be read: the saved state, with ``problem``."""
    form = StateForm({"state": pretty_json(state), "revision": str(revision)})
    form.add_error("state", problem)
    return form


def state_errors(error: InvalidState | StateTooLarge) -> list[str]:
    """A state the service refused, as the state field shows it: one line per bad field."""
    return [str(problem) for problem in error.field_errors] or [error.reason]
