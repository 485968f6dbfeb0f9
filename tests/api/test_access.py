"""Who sees and acts on what (DESIGN.md §4, Access), on every endpoint.

Owners see and act on their own instances; the model's view permission shows
all instances, its change permission acts on all; superusers do everything;
anyone else's instance answers 404. A definition may refuse more
(``restricted`` refuses each action to users named ``no-<action>``).
"""

from __future__ import annotations

import base64

import pytest

from django_workflows import Step, Transition, Workflow, registry
from django_workflows.models import WorkflowInstance
from django_workflows.services import COMMAND_NAMES
from tests.api.conftest import url
from tests.factories import UserFactory, WorkflowInstanceFactory

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]

READS = ["", "events", "tasks"]  # detail, the event log and the tasks


def listed(client) -> set[str]:
    return {item["id"] for item in client.get("/api/instances/").json()["results"]}


# -- authentication ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/workflows/", "/api/workflows/wizard/",
                                  "/api/instances/"])
def test_anonymous_reads_answer_401(client_as, path):
    response = client_as(None).get(path)

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_anonymous_create_answers_401_and_creates_nothing(client_as):
    response = client_as(None).post("/api/instances/", {"workflow": "wizard"}, format="json")

    assert response.status_code == 401
    assert not WorkflowInstance.objects.exists()


def test_anonymous_command_answers_401(client_as, make_instance):
    assert client_as(None).post(url(make_instance(), "start")).status_code == 401


def test_http_basic_authentication_is_accepted(client_as, owner, make_instance):
    instance = make_instance()
    client = client_as(None)
    client.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(
        b"owner:password").decode())

    assert client.get(url(instance)).status_code == 200


def test_wrong_basic_credentials_answer_401(client_as, owner):
    client = client_as(None)
    client.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"owner:nope").decode())

    assert client.get("/api/instances/").status_code == 401


def test_session_authentication_is_accepted(client_as, owner, make_instance):
    instance = make_instance()
    client = client_as(None)
    client.login(username="owner", password="password")

    assert client.get(url(instance)).status_code == 200


# -- owners and strangers ----------------------------------------------------------------


def test_the_owner_sees_their_instance_in_the_list(api, make_instance):
    instance = make_instance()

    assert listed(api) == {str(instance.pk)}


def test_another_user_s_instance_is_not_listed(client_as, stranger, make_instance):
    make_instance()

    assert listed(client_as(stranger)) == set()


@pytest.mark.parametrize("read", READS)
def test_another_user_s_instance_answers_404_to_reads(client_as, stranger, make_instance, read):
    response = client_as(stranger).get(url(make_instance(), read))

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_another_user_s_instance_answers_404_to_every_command(client_as, stranger,
                                                              make_instance, command):
    instance = make_instance(started=True)

    response = client_as(stranger).post(url(instance, command))

    assert response.status_code == 404
    assert instance.revision == WorkflowInstance.objects.get(pk=instance.pk).revision


def test_another_user_s_instance_answers_404_to_a_state_update(client_as, stranger,
                                                                make_instance):
    response = client_as(stranger).patch(url(make_instance(), "state"), {"state": {}},
                                         format="json")

    assert response.status_code == 404


# -- model permissions and superusers ----------------------------------------------------


def test_the_view_permission_lists_every_instance(client_as, viewer, make_instance):
    instance = make_instance()

    assert listed(client_as(viewer)) == {str(instance.pk)}


@pytest.mark.parametrize("read", READS)
def test_the_view_permission_reads_every_instance(client_as, viewer, make_instance, read):
    assert client_as(viewer).get(url(make_instance(), read)).status_code == 200


def test_the_view_permission_alone_may_not_act_on_others_instances(client_as, viewer,
                                                                    make_instance):
    response = client_as(viewer).post(url(make_instance(), "start"))

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


def test_the_view_permission_alone_may_not_update_others_state(client_as, viewer,
                                                               make_instance):
    response = client_as(viewer).patch(url(make_instance(), "state"), {"state": {}},
                                       format="json")

    assert response.status_code == 403


def test_a_viewer_acts_on_their_own_instances(client_as, viewer):
    instance = WorkflowInstanceFactory(owner=viewer)

    assert client_as(viewer).post(url(instance, "start")).status_code == 200


def test_the_change_permission_acts_on_every_instance(client_as, changer, make_instance):
    assert client_as(changer).post(url(make_instance(), "start")).status_code == 200


def test_the_change_permission_lists_every_instance(client_as, changer, make_instance):
    instance = make_instance()

    assert listed(client_as(changer)) == {str(instance.pk)}


def test_a_superuser_lists_every_instance(client_as, superuser, make_instance):
    instance = make_instance()

    assert listed(client_as(superuser)) == {str(instance.pk)}


def test_a_superuser_acts_on_every_instance(client_as, superuser, make_instance):
    assert client_as(superuser).post(url(make_instance(), "start")).status_code == 200


# -- the definition's own permission hook ------------------------------------------------


def restricted_for(username: str, **options):
    user = UserFactory(username=username)
    return user, WorkflowInstanceFactory(workflow="restricted", owner=user, **options)


def test_the_definition_hook_allows_what_it_does_not_refuse(client_as):
    user, instance = restricted_for("no-skip")

    assert client_as(user).post(url(instance, "start")).status_code == 200


def test_the_definition_hook_refuses_a_command_with_403(client_as):
    user, instance = restricted_for("no-skip", started=True)

    response = client_as(user).post(url(instance, "skip"))

    assert response.status_code == 403
    assert WorkflowInstance.objects.get(pk=instance.pk).current_step == "one"


def test_the_definition_hook_refuses_a_state_update_with_403(client_as):
    user, instance = restricted_for("no-update_state")

    response = client_as(user).patch(url(instance, "state"), {"state": {}}, format="json")

    assert response.status_code == 403


@pytest.mark.parametrize("read", READS)
def test_the_definition_hook_hides_an_instance_with_404(client_as, read):
    user, instance = restricted_for("no-view")

    assert client_as(user).get(url(instance, read)).status_code == 404


def test_an_instance_the_definition_hides_answers_404_to_commands(client_as):
    user, instance = restricted_for("no-view")

    assert client_as(user).post(url(instance, "start")).status_code == 404


def test_the_definition_hook_leaves_a_workflow_out_of_the_list(client_as):
    user, _ = restricted_for("no-list")
    wizard = WorkflowInstanceFactory(owner=user)

    assert listed(client_as(user)) == {str(wizard.pk)}


@pytest.mark.parametrize("read", READS)
def test_a_workflow_left_out_of_the_list_is_still_read_by_id(client_as, read):
    user, instance = restricted_for("no-list")

    assert client_as(user).get(url(instance, read)).status_code == 200


def test_the_definition_hook_refuses_a_create_with_403(client_as):
    user = UserFactory(username="no-create")

    response = client_as(user).post("/api/instances/", {"workflow": "restricted"},
                                    format="json")

    assert response.status_code == 403


def test_the_definition_hook_applies_to_superusers_too(client_as):
    root = UserFactory(username="no-skip-root", superuser=True)
    instance = WorkflowInstanceFactory(workflow="restricted", started=True)

    assert client_as(root).post(url(instance, "skip")).status_code == 403


def test_a_definition_hook_that_raises_refuses_with_403(client_as, owner, make_instance):
    def broken(user, instance, action):
        if action == "next":
            raise RuntimeError("the hook is broken")
        return True

    registry.register(Workflow(id="api-broken-hook", steps=[Step("a"), Step("b")],
                               transitions=[Transition("a", "b")], permission=broken))
    try:
        instance = make_instance(workflow="api-broken-hook", started=True)

        response = client_as(owner).post(url(instance, "next"))
    finally:
        registry.unregister("api-broken-hook")

    assert response.status_code == 403
