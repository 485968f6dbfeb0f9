"""The API's side of the declared commands (``engine/commands.py``), made from their
declarations alone: a request body per command (:class:`CommandBody`), and a ``POST``
action per command with its OpenAPI entry (:class:`CommandActions`).

A viewset's actions are made once, with its class, at import: ``InstanceViewSet.cancel``
is the action of ``engine.Cancel``, and ``CommandBody(engine.Cancel)`` its body
(``CancelBody`` in the OpenAPI schema). Nothing changes the class afterwards. A command
declared later (a test's own) gets its action in the URLs made after it, from a subclass
made then (:func:`as_declared_now`), as a restarted site would make the class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from .. import engine
from ..inputs.storable import json_problems
from .schema import ETAG, IDEMPOTENCY_KEY, IF_MATCH, described
from .serializers import AnyField, StateField

V = TypeVar("V")


class JSONValueField(serializers.JSONField):
    """Any JSON value a database can store."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        problems = json_problems(value)
        if problems:
            raise serializers.ValidationError(problems)
        return value


def field_for(taken: engine.Input, command: type[engine.PersonCommand]) -> AnyField:
    """The request body's field for what a command takes, by the kind its type declares."""
    options: dict[str, Any] = {"required": taken.required, "allow_null": taken.nullable,
                               "help_text": taken.help or f"The {taken.name}"
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


# The request body of ``command``: a field for each thing it takes (``cancel``:
# ``{"reason": str}``), but those the URL gives (a task command's ``task``). Said here, not
# in a docstring, which the OpenAPI schema would give every body as its description.
class CommandBody(serializers.Serializer[Any]):

    def __init__(self, command: type[engine.PersonCommand], *args: Any,
                 given_by_url: tuple[str, ...] = (), **kwargs: Any) -> None:
        self.command, self.given_by_url = command, given_by_url
        super().__init__(*args, **kwargs)

    def get_fields(self) -> dict[str, AnyField]:
        return {taken.name: field_for(taken, self.command) for taken in self.command.inputs()
                if taken.name not in self.given_by_url}

    @property
    def component_name(self) -> str:
        """Its name in the OpenAPI schema: ``CancelBody``, ``SkipOperationBody``."""
        return "".join(part.title() for part in self.command.name.split("_")) + "Body"


class CommandBodySchema(OpenApiSerializerExtension):
    """Each command's body is a component of the OpenAPI schema of its own."""

    target_class = CommandBody

    def get_name(self, auto_schema: Any, direction: Any) -> str:
        body: CommandBody = self.target
        return body.component_name

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        mapped: dict[str, Any] = auto_schema._map_serializer(self.target, direction,
                                                             bypass_extensions=True)
        return mapped


if TYPE_CHECKING:  # a mixin of DRF's viewsets (before the API's view in their bases)
    from rest_framework.viewsets import GenericViewSet

    _ViewSet = GenericViewSet[Any]
else:
    _ViewSet = object


class CommandActions(_ViewSet):
    """A viewset with ``POST .../<id>/<name>/`` for each command of :attr:`commands`,
    given by :meth:`give` with what its body says it takes. The actions are made with
    the class, from the commands declared then."""

    commands: ClassVar[Mapping[str, type[engine.PersonCommand]]]  # engine.ACTIONS, ...
    operation_prefix: ClassVar[str]  # of the OpenAPI operation ids: "instances", "tasks"
    given_by_url: ClassVar[tuple[str, ...]] = ()  # fields the URL names (a task's "task")
    # The commands the class has an action for, by name, as declared when it was made.
    command_actions: ClassVar[dict[str, type[engine.PersonCommand]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = dict(cls.commands)
        for name in cls.command_actions.keys() - declared.keys():
            setattr(cls, name, None)  # inherited, of a command no longer declared: no action
        for name, command in declared.items():
            setattr(cls, name, cls.action_for(command))
        cls.command_actions = declared

    @classmethod
    def action_for(cls, declared: type[engine.PersonCommand]) -> Callable[..., Response]:
        """The action of ``declared``, described for the OpenAPI schema."""
        def give(self: CommandActions, request: Request, pk: str | None = None
                 ) -> Response:
            return self.give(request, declared)

        give.__name__ = declared.name  # before @action, which names the URL after it
        give.__qualname__ = f"{cls.__qualname__}.{declared.name}"
        give.__doc__ = declared.summary
        body = CommandBody(declared, given_by_url=cls.given_by_url)
        describe = described(operation_id=f"{cls.operation_prefix}_{declared.name}",
                             summary=declared.summary,
                             request=body if body.fields else None,
                             parameters=[IF_MATCH, IDEMPOTENCY_KEY, ETAG],
                             responses=cls.responses_of(declared))
        made: Callable[..., Response] = describe(
            action(detail=True, methods=["post"], url_path=declared.name)(give))
        return made

    @classmethod
    def responses_of(cls, declared: type[engine.PersonCommand]) -> dict[int, OpenApiResponse]:
        raise NotImplementedError

    def give(self, request: Request, declared: type[engine.PersonCommand]) -> Response:
        """Give the command ``declared`` to what the URL names."""
        raise NotImplementedError

    def get_serializer(self, *args: Any, **kwargs: Any) -> Any:
        # A command's action: its body (what the browsable API's form for it sends).
        declared = self.command_actions.get(self.action or "")
        if declared is None:
            return super().get_serializer(*args, **kwargs)
        kwargs.setdefault("context", self.get_serializer_context())
        return CommandBody(declared, *args, given_by_url=self.given_by_url, **kwargs)

    def taken(self, request: Request, declared: type[engine.PersonCommand]) -> dict[str, Any]:
        """What the body gives the command, checked against what it takes (400 otherwise)."""
        body = request.data
        if not isinstance(body, dict):
            raise serializers.ValidationError({"non_field_errors": [
                "Send no body, or a JSON object."]})
        checked = CommandBody(declared, data=body, given_by_url=self.given_by_url)
        checked.is_valid(raise_exception=True)
        return dict(checked.validated_data)


def as_declared_now(viewset: type[V]) -> type[V]:
    """``viewset`` with an action for each of its commands declared now: itself, or, where
    they changed since it was made (a test declared its own), a subclass made now."""
    if not issubclass(viewset, CommandActions) or viewset.command_actions == dict(
            viewset.commands):
        return viewset
    made: type[V] = type(viewset.__name__, (viewset,), {
        "__module__": viewset.__module__, "__qualname__": viewset.__qualname__,
        "__doc__": viewset.__doc__})
    return made
