"""Hostile input and other people's instances: the API and the admin, through real requests.

Django's test client and DRF's APIClient, real sessions and HTTP Basic, CSRF
enforced where a browser would be: users cannot read or act on others'
instances, acting needs the change permission, CSRF guards the admin and the
session-authenticated API, the state size limit holds, and django-q2 is
given ids only (the payloads are decoded from the ORM broker's queue).
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from django_workflows import services
from django_workflows.conf import DJANGO_Q_RUNNER, workflow_settings
from django_workflows.models import Attempt, WorkflowEvent, WorkflowInstance
from tests.factories import UserFactory

if TYPE_CHECKING:
    from rest_framework.test import APIClient

pytestmark = [pytest.mark.django_db, pytest.mark.needs_api]

PASSWORD = "password"  # tests.factories.UserFactory's
ACTIONS = ("start", "next", "back", "skip", "validate", "retry", "cancel", "rollback")


def user(username: str, *codenames: str, **fields: Any) -> Any:
    made = UserFactory(username=username, **fields)
    made.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="django_workflows", codename__in=codenames))
    return type(made).objects.get(pk=made.pk)  # no stale permission cache


def api_client(*, csrf: bool = False) -> APIClient:
    """DRF's test client, imported here: without the [api] extra the module still loads."""
    from rest_framework import test

    return test.APIClient(enforce_csrf_checks=csrf)


def api_as(who: Any, *, csrf: bool = False) -> APIClient:
    """A client logged in with a real session (CSRF enforced when ``csrf``)."""
    client = api_client(csrf=csrf)
    assert client.login(username=who.username, password=PASSWORD)
    return client


def csrf_token(client: Client, page: str = "/admin/login/") -> str:
    client.get(page)  # a page with a form sets the cookie
    return client.cookies["csrftoken"].value


def basic(who: Any) -> dict[str, str]:
    token = base64.b64encode(f"{who.username}:{PASSWORD}".encode()).decode()
    return {"HTTP_AUTHORIZATION": f"Basic {token}"}


def fingerprint(instance: WorkflowInstance) -> tuple[Any, ...]:
    """What must not change when a request is refused."""
    row = WorkflowInstance.objects.get(pk=instance.pk)
    return (row.status, row.current_step, row.revision, row.state,
            WorkflowEvent.objects.filter(instance=row).count())


@pytest.fixture
def owner(db: None) -> Any:
    return user("owner")


@pytest.fixture
def stranger(db: None) -> Any:
    return user("stranger")


@pytest.fixture
def instance(owner: Any) -> WorkflowInstance:
    started = services.create("wizard", owner=owner, user=owner, start=True,
                              state={"email": "owner@example.com", "plan": None})
    services.create("wizard", owner=owner, user=owner)  # a second one, never shown to others
    return started


def admin_page(instance: WorkflowInstance) -> str:
    return f"/admin/django_workflows/workflowinstance/{instance.pk}/change/"


# -- other users' instances through the API ------------------------------------------------


def test_another_users_instance_is_404_for_every_read(instance: WorkflowInstance,
                                                      stranger: Any) -> None:
    client = api_as(stranger)
    assert client.get(f"/api/instances/{instance.pk}/").status_code == 404
    assert client.get(f"/api/instances/{instance.pk}/events/").status_code == 404
    listing = client.get("/api/instances/").json()
    assert listing["count"] == 0 and listing["results"] == []
    # Filtering by id or owner does not reveal it either.
    assert client.get(f"/api/instances/?id={instance.pk}").json()["count"] == 0


@pytest.mark.parametrize("action", ACTIONS)
def test_another_users_instance_is_404_for_every_action(instance: WorkflowInstance,
                                                        stranger: Any, action: str) -> None:
    before = fingerprint(instance)
    answer = api_as(stranger).post(f"/api/instances/{instance.pk}/{action}/", {},
                                   format="json")
    assert answer.status_code == 404, answer.content
    assert answer.json()["code"] == "not_found"
    assert fingerprint(instance) == before


def test_another_users_state_cannot_be_replaced(instance: WorkflowInstance,
                                                stranger: Any) -> None:
    before = fingerprint(instance)
    answer = api_as(stranger).patch(f"/api/instances/{instance.pk}/state/",
                                    {"state": {"email": "mallory@example.com"}}, format="json")
    assert answer.status_code == 404
    assert fingerprint(instance) == before


def test_acting_on_others_instances_needs_the_change_permission(instance: WorkflowInstance
                                                                ) -> None:
    viewer = user("viewer", "view_workflowinstance")
    changer = user("changer", "change_workflowinstance")
    before = fingerprint(instance)
    # The view permission shows it ...
    assert api_as(viewer).get(f"/api/instances/{instance.pk}/").status_code == 200
    # ... but does not let one act on it, nor replace its state.
    assert api_as(viewer).post(f"/api/instances/{instance.pk}/next/").status_code == 403
    assert api_as(viewer).patch(f"/api/instances/{instance.pk}/state/", {"state": {}},
                                format="json").status_code == 403
    assert fingerprint(instance) == before
    # The change permission does.
    moved = api_as(changer).post(f"/api/instances/{instance.pk}/next/")
    assert moved.status_code == 200, moved.content
    assert moved.json()["current_step"] == "plan"


def test_anonymous_requests_are_refused(instance: WorkflowInstance) -> None:
    client = api_client()
    before = fingerprint(instance)
    assert client.get(f"/api/instances/{instance.pk}/").status_code in (401, 403)
    assert client.post(f"/api/instances/{instance.pk}/next/").status_code in (401, 403)
    assert client.post("/api/instances/", {"workflow": "wizard"},
                       format="json").status_code in (401, 403)
    assert fingerprint(instance) == before


# -- the admin -------------------------------------------------------------------------------


def test_a_customer_cannot_reach_the_admin(instance: WorkflowInstance, owner: Any) -> None:
    """Even the instance's owner: the admin is for staff."""
    client = Client()
    client.force_login(owner)
    before = fingerprint(instance)
    page = client.get(admin_page(instance))
    assert page.status_code == 302 and "/admin/login/" in page["Location"]
    posted = client.post(admin_page(instance), {"_command": "next",
                                                "revision": instance.revision})
    assert posted.status_code == 302 and "/admin/login/" in posted["Location"]
    assert client.get(f"{admin_page(instance)[:-7]}live/").status_code == 302
    assert fingerprint(instance) == before


def test_staff_without_permissions_see_and_do_nothing(instance: WorkflowInstance) -> None:
    client = Client()
    client.force_login(user("intern", is_staff=True))
    before = fingerprint(instance)
    assert client.get(admin_page(instance)).status_code == 403
    assert client.get(f"{admin_page(instance)[:-7]}live/").status_code == 403
    assert client.get("/admin/django_workflows/workflowinstance/").status_code == 403
    assert client.post(admin_page(instance), {"_command": "cancel"}).status_code == 403
    assert client.post(admin_page(instance), {"_state": "1", "state": "{}",
                                              "revision": instance.revision}
                       ).status_code == 403
    assert fingerprint(instance) == before


def test_admin_commands_need_the_change_permission(instance: WorkflowInstance) -> None:
    viewer = Client()
    viewer.force_login(user("staff-viewer", "view_workflowinstance", is_staff=True))
    before = fingerprint(instance)
    assert viewer.get(admin_page(instance)).status_code == 200
    for data in ({"_command": "next", "revision": instance.revision},
                 {"_state": "1", "state": '{"email": "x@y.com"}',
                  "revision": instance.revision}):
        viewer.post(admin_page(instance), data)
    bulk = viewer.post("/admin/django_workflows/workflowinstance/",
                       {"action": "cancel_selected", "_selected_action": [instance.pk]})
    assert bulk.status_code in (200, 302)
    assert fingerprint(instance) == before

    changer = Client()
    changer.force_login(user("staff-changer", "view_workflowinstance",
                             "change_workflowinstance", is_staff=True))
    changer.post(admin_page(instance), {"_command": "next", "revision": instance.revision})
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "plan"


# -- CSRF ---------------------------------------------------------------------------------------


def test_admin_commands_need_the_csrf_token(instance: WorkflowInstance) -> None:
    client = Client(enforce_csrf_checks=True)
    staff = user("staff-csrf", "view_workflowinstance", "change_workflowinstance",
                 is_staff=True)
    assert client.login(username=staff.username, password=PASSWORD)
    before = fingerprint(instance)
    refused = client.post(admin_page(instance), {"_command": "cancel",
                                                 "revision": instance.revision})
    assert refused.status_code == 403
    assert fingerprint(instance) == before
    token = csrf_token(client, admin_page(instance))
    done = client.post(admin_page(instance), {"_command": "cancel",
                                              "revision": instance.revision,
                                              "csrfmiddlewaretoken": token})
    assert done.status_code == 302
    assert WorkflowInstance.objects.get(pk=instance.pk).status == "cancelled"


def test_session_api_writes_need_the_csrf_token(instance: WorkflowInstance,
                                                owner: Any) -> None:
    client = api_as(owner, csrf=True)
    before = fingerprint(instance)
    count = WorkflowInstance.objects.count()
    assert client.get(f"/api/instances/{instance.pk}/").status_code == 200  # reads need none
    for answer in (client.post(f"/api/instances/{instance.pk}/next/"),
                   client.patch(f"/api/instances/{instance.pk}/state/", {"state": {}},
                                format="json"),
                   client.post("/api/instances/", {"workflow": "wizard"}, format="json")):
        assert answer.status_code == 403, answer.content
        assert "CSRF" in answer.json()["detail"]
    assert fingerprint(instance) == before
    assert WorkflowInstance.objects.count() == count
    moved = client.post(f"/api/instances/{instance.pk}/next/",
                        HTTP_X_CSRFTOKEN=csrf_token(client))
    assert moved.status_code == 200, moved.content


def test_http_basic_needs_no_csrf_token(instance: WorkflowInstance, owner: Any) -> None:
    """No cookie, so no request a third-party page could forge: no token needed."""
    client = api_client(csrf=True)
    moved = client.post(f"/api/instances/{instance.pk}/next/", **basic(owner))
    assert moved.status_code == 200, moved.content
    wrong = client.post(f"/api/instances/{instance.pk}/next/",
                        HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"owner:nope").decode())
    assert wrong.status_code in (401, 403)


# -- the state size limit ----------------------------------------------------------------------


def big_state() -> dict[str, Any]:
    limit = workflow_settings.MAX_STATE_BYTES
    return {"email": "a@b.com", "filler": "x" * (limit + 1)}


def test_a_state_over_the_limit_is_413_and_not_stored(instance: WorkflowInstance,
                                                      owner: Any) -> None:
    client = api_client()
    client.force_authenticate(owner)
    before = fingerprint(instance)
    count = WorkflowInstance.objects.count()
    replaced = client.patch(f"/api/instances/{instance.pk}/state/", {"state": big_state()},
                            format="json")
    assert replaced.status_code == 413, replaced.content
    created = client.post("/api/instances/", {"workflow": "wizard", "state": big_state()},
                          format="json")
    assert created.status_code == 413, created.content
    assert fingerprint(instance) == before
    assert WorkflowInstance.objects.count() == count
    # Just under the limit (counted in UTF-8 bytes of compact JSON) is stored.
    limit = workflow_settings.MAX_STATE_BYTES
    fits = {"email": "a@b.com", "filler": ""}
    fits["filler"] = "é" * ((limit - len('{"email":"a@b.com","filler":""}')) // 2)
    assert client.patch(f"/api/instances/{instance.pk}/state/", {"state": fits},
                        format="json").status_code == 200


def test_a_state_over_the_limit_is_an_error_in_the_admin_form(instance: WorkflowInstance
                                                              ) -> None:
    client = Client()
    client.force_login(user("root", is_superuser=True, is_staff=True))
    before = fingerprint(instance)
    import json

    page = client.post(admin_page(instance), {"_state": "1",
                                              "state": json.dumps(big_state()),
                                              "revision": instance.revision})
    assert page.status_code == 200  # the form again, with the error
    form = page.context["state_form"]
    assert any("larger" in e or "limit" in e or "bytes" in e
               for e in form.errors.get("state", [])), form.errors
    assert fingerprint(instance) == before


# -- django-q2 gets ids, never objects -------------------------------------------------------


@pytest.mark.needs_q2
def test_django_q2_payloads_hold_only_ids(owner: Any, settings: Any,
                                          django_capture_on_commit_callbacks: Any) -> None:
    """Enqueue with the ORM broker, then decode what the workers would unpickle."""
    from django_q.conf import Conf
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "RUNNER": DJANGO_Q_RUNNER}
    assert Conf.ORM, "the test settings use django-q2's ORM broker"
    marker = f"user-input-{uuid.uuid4().hex}"
    with django_capture_on_commit_callbacks(execute=True):
        created = services.create("back-office", owner=owner, user=owner, start=True)
        services.update_state(created, {"note": marker}, user=owner)
    tokens = set(Attempt.objects.filter(instance=created).values_list("token", flat=True))
    assert tokens
    tasks = [SignedPackage.loads(row.payload) for row in OrmQ.objects.all()]
    ours = [t for t in tasks if t["func"] == "django_workflows.runners.django_q.tasks.run_attempt"]
    assert ours, tasks
    uuid_text = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
    for task in ours:
        args = task["args"]
        assert all(type(arg) is str for arg in args), args  # no objects, no dicts
        assert args[0] in tokens
        assert all(arg in tokens or (uuid_text.match(arg) and arg == str(created.pk))
                   for arg in args), args
        assert task["kwargs"] == {}
        assert marker not in repr(task)
