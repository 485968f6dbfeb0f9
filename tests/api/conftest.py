"""Helpers for the API tests: users with each kind of access, clients, instances.

Without the [api] extra these modules cannot even be imported; they are then
left out of the run (and ``needs_api`` would skip them anyway).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

if importlib.util.find_spec("rest_framework") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

from django_workflows.models import WorkflowInstance
from tests.factories import UserFactory, WorkflowInstanceFactory


def url(instance: WorkflowInstance | str, action: str = "") -> str:
    """``/api/instances/<id>/`` or ``/api/instances/<id>/<action>/``."""
    pk = instance.pk if isinstance(instance, WorkflowInstance) else instance
    return f"/api/instances/{pk}/{action}/" if action else f"/api/instances/{pk}/"


def with_permission(codename: str, **fields: Any) -> Any:
    user = UserFactory(**fields)
    user.user_permissions.add(Permission.objects.get(codename=codename,
                                                     content_type__app_label="django_workflows"))
    return type(user).objects.get(pk=user.pk)  # a fresh object: no stale permission cache


@pytest.fixture
def owner(db: None) -> Any:
    return UserFactory(username="owner")


@pytest.fixture
def stranger(db: None) -> Any:
    return UserFactory(username="stranger")


@pytest.fixture
def viewer(db: None) -> Any:
    """May see every instance (the model's view permission), act only on their own."""
    return with_permission("view_workflowinstance", username="viewer")


@pytest.fixture
def changer(db: None) -> Any:
    """May see and act on every instance (the model's change permission)."""
    return with_permission("change_workflowinstance", username="changer")


@pytest.fixture
def superuser(db: None) -> Any:
    return UserFactory(username="root", superuser=True)


@pytest.fixture
def client_as() -> Callable[[Any], APIClient]:
    """An API client signed in as ``user`` (None: anonymous)."""
    def make(user: Any) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client
    return make


@pytest.fixture
def api(client_as: Callable[[Any], APIClient], owner: Any) -> APIClient:
    """A client signed in as ``owner``."""
    return client_as(owner)


@pytest.fixture
def make_instance(owner: Any) -> Callable[..., WorkflowInstance]:
    """An instance of ``owner``'s, made by the service: ``make_instance(started=True)``."""
    def make(**options: Any) -> WorkflowInstance:
        options.setdefault("owner", owner)
        return WorkflowInstanceFactory(**options)
    return make
