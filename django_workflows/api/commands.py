"""The API's side of the declared commands (``engine/commands.py``), made from their
declarations alone: a request body per command, and a ``POST`` action per command with
its OpenAPI entry.

A viewset lists its commands (:class:`CommandActions`); the actions are made when
the router asks for them, so a command declared after this module was imported gets
its action as soon as the URLs are built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, ClassVar

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from .. import engine
from ..storable import json_problems
from .schema import ETAG, IDEMPOTENCY_KEY, IF_MATCH, described
from .serializers import StateField


class JSONValueField(serializers.JSONField):
    """Any JSON value a database can store."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        problems = json_problems(value)
        if problems:
            raise serializers.ValidationError(problems)
        return value


def field_for(taken: engine.Input, command: type[engine.PersonCommand]) -> serializers.Field:
    """The request body's field for what a command takes, by the kind its type declares."""
    options: dict[str, Any] = {"required": taken.required, "allow_null": taken.nullable,
                               "help_text": f"The {taken.name}"
                                            f"{'' if taken.required else ', if any'}."}
    if taken.kind == "text":
        return serializers.CharField(allow_blank=True, max_length=1000, **options)
    if taken.kind == "integer":
        return serializers.IntegerField(**options)
    if taken.kind == "number":
        return serializers.FloatField(**options)
    if taken.kind == "boolean":
        return serializers.BooleanField(**options)
    if taken.kind == "object":
        return StateField(**options)
    if taken.kind == "array":
        return serializers.ListField(child=JSONValueField(allow_null=True), **options)
    if taken.kind == "json":
        return JSONValueField(**options)
    if taken.kind == "choice":
        return serializers.ChoiceField(choices=list(taken.choices), **options)
    raise TypeError(f"Command {command.name!r}: the API cannot take {taken.name!r}: no JSON "
                    "value says what its type declares")


def command_body(command: type[engine.PersonCommand], *, given: tuple[str, ...] = ()
                 ) -> type[serializers.Serializer]:
    """A serializer of what ``command`` takes (``cancel``: ``{"reason": str}``), but for
    what the URL already ``given`` (a task command's ``task``); one class for each."""
    # A class is hashable; mypy takes a frozen dataclass's type[...] for unhashable (it reads
    # the instances' __hash__ off the class).
    return _command_body(command, given)  # type: ignore[arg-type]


@cache
def _command_body(command: type[engine.PersonCommand], given: tuple[str, ...]
                  ) -> type[serializers.Serializer]:
    fields = {taken.name: field_for(taken, command) for taken in command.inputs()
              if taken.name not in given}
    name = "".join(part.title() for part in command.name.split("_")) + "Body"
    return type(name, (serializers.Serializer,), fields)


class CommandActions:
    """A viewset mixin: ``POST .../<id>/<name>/`` for each command of :attr:`commands`,
    given by :meth:`give` with what its body says it takes."""

    commands: ClassVar[Mapping[str, type[engine.PersonCommand]]]
    operation_prefix: ClassVar[str]  # of the OpenAPI operation ids: "instances", "tasks"
    given_by_url: ClassVar[tuple[str, ...]] = ()  # fields the URL names (a task's "task")

    @classmethod
    def get_extra_actions(cls) -> list[Any]:
        # The declared commands as they are now: an action for each, and none for a
        # command no longer declared (a test's own, say).
        for name, value in list(vars(cls).items()):
            declared = getattr(value, "declared", None)
            if declared is not None and cls.commands.get(name) is not declared:
                delattr(cls, name)
        for name, declared in cls.commands.items():
            if getattr(vars(cls).get(name), "declared", None) is not declared:
                setattr(cls, name, cls.action_for(declared))
        extra: list[Any] = super().get_extra_actions()  # type: ignore[misc]
        return extra

    @classmethod
    def action_for(cls, declared: type[engine.PersonCommand]) -> Callable[..., Response]:
        """The action of ``declared``, described for the OpenAPI schema."""
        def run(self: Any, request: Request, pk: str | None = None) -> Response:
            answer: Response = self.give(request, declared)
            return answer

        run.__name__ = declared.name
        run.__doc__ = declared.summary
        run.declared = declared  # type: ignore[attr-defined]
        body = command_body(declared, given=cls.given_by_url)
        describe = described(operation_id=f"{cls.operation_prefix}_{declared.name}",
                             summary=declared.summary,
                             request=body if body().fields else None,
                             parameters=[IF_MATCH, IDEMPOTENCY_KEY, ETAG],
                             responses=cls.responses_of(declared))
        made: Callable[..., Response] = describe(
            action(detail=True, methods=["post"], url_path=declared.name)(run))
        return made

    @classmethod
    def responses_of(cls, declared: type[engine.PersonCommand]) -> dict[int, OpenApiResponse]:
        raise NotImplementedError

    def taken(self, request: Request, declared: type[engine.PersonCommand]) -> dict[str, Any]:
        """What the body gives the command, checked against what it takes (400 otherwise)."""
        body = request.data
        if not isinstance(body, dict):
            raise serializers.ValidationError({"non_field_errors": [
                "Send no body, or a JSON object."]})
        checked = command_body(declared, given=self.given_by_url)(data=body)
        checked.is_valid(raise_exception=True)
        return dict(checked.validated_data)
