"""What the instance page says the instance waits for, and its form to send the signal by hand.

The words read :func:`django_workflows.reading.waiting.waiting_of`, as the API's ``waiting``
does. The form is offered to those ``services.access.may_send`` allows, and sends
through ``services.signal(..., instance=..., user=...)``, which judges the sender again;
whatever it refuses becomes a message or an error beside the field, never an error page.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .. import clock, services
from ..exceptions import InvalidPayload, NotAllowed, StateTooLarge, WorkflowError
from ..inputs import json_text as jsontext
from ..inputs.storable import MAX_STATE_DEPTH, json_problems, problem_lines
from ..models import WorkflowInstance
from ..reading.waiting import Waiting, waiting_of
from ..services.access import may_send


class SignalForm(forms.Form):
    """The signal the page showed, a JSON payload and an optional message id."""

    signal = forms.CharField(widget=forms.HiddenInput, max_length=200)
    payload = forms.CharField(
        label="Payload", initial="{}", strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 40, "class": "dwf-json",
                                     "spellcheck": "false",  # as wide as its section
                                     "style": "width: 100%; box-sizing: border-box"}),
        help_text="Any JSON value; the signal's schema, if it has one, checks it.")
    message_id = forms.CharField(
        label="Message id", required=False, max_length=200,
        help_text="Optional: the same id again is acknowledged and changes nothing.")

    def clean_payload(self) -> Any:
        text = self.cleaned_data["payload"]
        try:  # strict: NaN, 1e999 or a 5000-digit integer is a message, not a 500
            payload = jsontext.loads(text)
        except jsontext.NestedTooDeeply:
            raise forms.ValidationError(f"The payload is nested deeper than {MAX_STATE_DEPTH} "
                                        "levels.", code="too_deep") from None
        except jsontext.InvalidJSON as error:
            raise forms.ValidationError(f"Enter valid JSON: {error}", code="invalid") from None
        problems = json_problems(payload)
        if problems:  # a database would refuse it with an error: say what to fix instead
            raise forms.ValidationError(problem_lines(problems), code="not_storable")
        return payload

    def clean_message_id(self) -> str | None:
        value = self.cleaned_data["message_id"]
        if json_problems(value):
            raise forms.ValidationError("A message id cannot hold NUL characters or unpaired "
                                        "surrogates.", code="not_storable")
        return value or None


def when(moment: datetime) -> str:
    """A time as people read it, in the current time zone: ``14:05 UTC`` today,
    ``3 Dec 2026 14:05 UTC`` on another day."""
    local, today = timezone.localtime(moment), timezone.localtime(clock.now_datetime()).date()
    shown = f"{local:%H:%M}" if local.date() == today else f"{local.day} {local:%b %Y %H:%M}"
    return f"{shown} {local.tzname()}"


def _until(prefix: str, moment: datetime | None) -> SafeString:
    if moment is None:
        return SafeString("")  # format_html() without arguments is refused from Django 6
    return format_html('{} <time datetime="{}">{}</time>', prefix, moment.isoformat(),
                       when(moment))


def words_of(waiting: Waiting) -> SafeString:
    """What the instance waits for, in a sentence: "Waiting for the signal
    payment-confirmed (correlation pi_1) until 14:05 UTC"."""
    if waiting.kind == "signal":
        correlation = format_html(" (correlation <code>{}</code>)", waiting.correlation) \
            if waiting.correlation is not None else ""
        return format_html("Waiting for the signal <code>{}</code>{}{}", waiting.name,
                           correlation, _until(" until", waiting.until))
    if waiting.kind == "timer":
        return format_html("Waiting{} (timer)", _until(" until", waiting.until))
    task_url = reverse("admin:django_workflows_workflowtask_change", args=[waiting.task])
    return format_html('Waiting for the task <a href="{}">{}</a>{}', task_url, waiting.name,
                       _until(", due", waiting.until))


def waiting_context(request: HttpRequest, instance: WorkflowInstance,
                    form: SignalForm | None = None) -> dict[str, Any]:
    """What the page's waiting part shows: the words, and the form for one who may send."""
    waiting = waiting_of(instance.snap)
    if waiting is None:
        return {"waiting": None, "waiting_words": "", "signal_form": None}
    sends = waiting.kind == "signal" and waiting.name is not None and \
        may_send(request.user, instance.workflow, waiting.name, instance)
    if sends and form is None:
        form = SignalForm(initial={"signal": waiting.name})
    return {"waiting": waiting, "waiting_words": words_of(waiting),
            "signal_form": form if sends else None}


def send_signal(model_admin: ModelAdmin[WorkflowInstance], request: HttpRequest,
                instance: WorkflowInstance, form: SignalForm) -> bool:
    """Send the form's signal to the instance; False to show the form again with its
    errors, True when the page's messages say what happened."""
    if not form.is_valid():
        return False
    name, payload = form.cleaned_data["signal"], form.cleaned_data["payload"]
    message_id = form.cleaned_data["message_id"]
    waiting = waiting_of(instance.snap)
    if waiting is None or waiting.kind != "signal" or waiting.name != name:
        model_admin.message_user(request, f'Not sent: this instance no longer waits for the '
                                          f'signal "{name}".', messages.WARNING)
        return True
    try:
        sent = services.signal(instance.workflow, name, payload, instance=instance,
                               message_id=message_id, user=request.user)
    except InvalidPayload as error:
        form.add_error("payload", [str(problem) for problem in error.field_errors]
                       or [error.reason])
        return False
    except StateTooLarge as error:
        form.add_error("payload", error.reason)
        return False
    except NotAllowed as error:
        model_admin.message_user(request, f"Not sent: {error}", messages.ERROR)
        return True
    except WorkflowError as error:  # not waiting any more, busy, gone...
        model_admin.message_user(request, f"Not sent: {getattr(error, 'reason', error)}",
                                 messages.ERROR)
        return True
    # A message id seen before answers what became of that first signal.
    seen = f'The message id "{message_id}" was seen before. ' if sent.repeated else ""
    if sent.taken_by:
        moved = sent.taken_by[0]
        if not sent.repeated:
            model_admin.log_change(request, instance, f'Sent the signal "{name}" (through the '
                                                      "service layer).")
        model_admin.message_user(request, f'{seen}The signal "{name}" was taken: the instance '
                                          f"is {moved.get_status_display().lower()}, at step "
                                          f'"{moved.current_step}".',
                                 messages.INFO if sent.repeated else messages.SUCCESS)
    else:
        model_admin.message_user(request, f'{seen}The signal "{name}" is kept: the instance did '
                                          "not take it now; its step takes it when it waits "
                                          "for it.", messages.WARNING)
    return True
