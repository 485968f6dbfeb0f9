"""factory-boy factories for the tests.

Workflow instances are made through :func:`django_workflows.services.create`
and moved with service commands: the service is the only writer of
instances and events, so a factory never saves a row itself.

    WorkflowInstanceFactory()                         # an idle "wizard"
    WorkflowInstanceFactory(started=True)             # running, on its first step
    WorkflowInstanceFactory(blocked=True)             # "wizard" refused by validation
    WorkflowInstanceFactory(workflow="long-manual", started=True, commands=["next"])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import factory
from django.contrib.auth import get_user_model

from django_workflows import services
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import WorkflowInstance


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.django.Password("password")

    class Params:
        superuser = factory.Trait(is_superuser=True, is_staff=True)

    @factory.post_generation
    def permissions(self, create: bool, codenames: Sequence[str] | None, **kwargs: Any) -> None:
        """``UserFactory(permissions=["change_workflowinstance"])``: model permissions."""
        if create and codenames:
            from django.contrib.auth.models import Permission

            self.user_permissions.add(*Permission.objects.filter(codename__in=codenames))


class WorkflowInstanceFactory(factory.Factory):
    """A workflow instance created (and optionally moved) through the service layer."""

    class Meta:
        model = WorkflowInstance

    workflow = "wizard"
    state = None  # None: the definition's initial state
    owner = None
    user = None  # the acting user of create and of the commands
    start = False
    # Service commands run one after the other once the instance exists. A
    # "validation_failed" refusal is kept (it stores the errors); any other
    # refusal fails the factory call.
    commands = ()

    class Params:
        started = factory.Trait(start=True)
        # The wizard's first step refuses "next" without an email: status "blocked".
        blocked = factory.Trait(workflow="wizard", start=True, commands=("next",))

    @classmethod
    def _build(cls, model_class: type[WorkflowInstance], *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Workflow instances are only made through the service: use create()")

    @classmethod
    def _create(cls, model_class: type[WorkflowInstance], *, workflow: str,
                state: dict[str, Any] | None, owner: Any, user: Any, start: bool,
                commands: Sequence[str]) -> WorkflowInstance:
        instance = services.create(workflow, state=state, owner=owner, user=user, start=start)
        for name in commands:
            try:
                services.command(instance, name, user=user)
            except WorkflowNotMoved as refusal:
                if refusal.code != "validation_failed":
                    raise
        if commands:
            instance.refresh_from_db()
        return instance
