"""A customer cannot fake a run of the nightly stock report (issue 36): an onboarding
created with the reference of a night's run is no run of the schedule, in the API nor in
the admin; and nobody but the schedule gives the stock report such a reference.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from django_workflows import registry
from django_workflows.models import WorkflowInstance
from django_workflows.services.schedules import sync_schedules
from example_project.shop.workflows import nightly_stock_report
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.needs_api,
              pytest.mark.urls("tests.example.urls")]

A_NIGHT = "nightly-stock-report@2026-12-08T02:00:00+00:00"


@pytest.fixture(autouse=True)
def schedule():
    nightly = nightly_stock_report()
    registry.register_schedule(nightly, origin="tests.example.test_schedule_run_references")
    sync_schedules()
    try:
        yield nightly
    finally:
        registry.unregister_schedule(nightly.id)


def api_client(user):
    from rest_framework.test import APIClient  # here: without the [api] extra the module loads

    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_onboarding_with_a_night_s_reference_is_no_run_of_the_schedule(customer):
    made = api_client(customer).post("/api/instances/", {
        "workflow": "onboarding", "reference": A_NIGHT}, format="json")
    assert made.status_code == 201

    staff = UserFactory(username="stock-keeper", is_staff=True, is_superuser=True)
    assert api_client(staff).get("/api/schedules/nightly-stock-report/").json()["runs"] == 0
    admin = Client()
    admin.force_login(staff)
    listed = admin.get(reverse("admin:django_workflows_workflowschedule_changelist"))
    assert '<a class="dwf-schedule-runs"' in listed.content.decode()
    assert ">0 runs</a>" in listed.content.decode()


def test_staff_cannot_give_the_stock_report_a_night_s_reference_either(operator):
    operator.is_superuser = True  # may create anything: the refusal is the reference's
    operator.save()

    response = api_client(operator).post("/api/instances/", {
        "workflow": "stock-report", "reference": A_NIGHT}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "reference_reserved"
    assert list(response.json()["fields"]) == ["reference"]
    assert not WorkflowInstance.objects.filter(workflow="stock-report").exists()
