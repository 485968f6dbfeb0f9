"""The form a task's schema makes: a field of the right kind for each property."""

from __future__ import annotations

import datetime

import pydantic
from django import forms

from django_workflows.admin.task_forms import form_for, input_from
from django_workflows.engine.schema import json_schema_of

SCHEMA = {
    "type": "object", "required": ["decision", "amount", "due"],
    "properties": {
        "decision": {"enum": ["approved", "rejected"], "title": "Decision"},
        "priority": {"oneOf": [{"const": 1, "title": "Low"}, {"const": 2, "title": "High"}]},
        "note": {"type": "string", "maxLength": 80, "description": "A short note"},
        "letter": {"type": "string"},
        "amount": {"type": "number", "minimum": 0, "maximum": 100},
        "count": {"type": "integer", "minimum": 1},
        "urgent": {"type": "boolean", "default": False},
        "due": {"type": "string", "format": "date"},
        "email": {"type": "string", "format": "email"},
        "extra": {"type": "object"},
    },
}


def test_each_property_becomes_a_field_of_its_kind():
    fields = form_for(SCHEMA)().fields

    kinds = {name: type(field).__name__ for name, field in fields.items()}
    assert kinds == {"decision": "TypedChoiceField", "priority": "TypedChoiceField",
                     "note": "CharField", "letter": "CharField", "amount": "FloatField",
                     "count": "IntegerField", "urgent": "BooleanField", "due": "DateField",
                     "email": "EmailField", "extra": "JSONValueField"}
    assert isinstance(fields["letter"].widget, forms.Textarea)  # long text: a textarea
    assert not isinstance(fields["note"].widget, forms.Textarea)
    assert (fields["decision"].label, fields["note"].help_text) == ("Decision", "A short note")
    assert [c for c in fields["priority"].choices] == [("", "—"), ("1", "Low"), ("2", "High")]
    assert fields["decision"].required and not fields["note"].required


def test_a_filled_form_gives_the_input_the_schema_takes():
    form = form_for(SCHEMA)({"decision": "approved", "priority": "2", "amount": "12.5",
                             "count": "3", "urgent": "on", "due": "2027-01-31", "note": ""})

    assert form.is_valid(), form.errors
    assert input_from(form) == {"decision": "approved", "priority": 2, "amount": 12.5,
                                "count": 3, "urgent": True, "due": "2027-01-31"}


def test_bounds_and_choices_are_checked_by_the_form():
    form = form_for(SCHEMA)({"decision": "maybe", "amount": "101", "due": "soon"})

    assert not form.is_valid()
    assert set(form.errors) == {"decision", "amount", "due"}


def test_a_pydantic_models_schema_makes_a_form_too():
    class Decision(pydantic.BaseModel):
        approved: bool
        comment: str | None = None
        when: datetime.date

    fields = form_for(json_schema_of(Decision))().fields

    assert type(fields["approved"]).__name__ == "BooleanField"
    assert type(fields["comment"]).__name__ == "CharField" and not fields["comment"].required
    assert type(fields["when"]).__name__ == "DateField"
