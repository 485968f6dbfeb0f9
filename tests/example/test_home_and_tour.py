"""The home page, the favicon, and the tour's live cases started again from the home page."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import override_settings

from django_workflows.conf import DJANGO_Q_RUNNER, workflow_settings
from django_workflows.models import WorkflowInstance, WorkflowTask
from example_project.shop import tour

from .browser import off_the_browsers_thread, screenshot

pytestmark = pytest.mark.urls("tests.example.urls")


@pytest.fixture
def queued_work():
    """Background work goes to django-q2's queue, as on the demo; no worker runs it here."""
    with override_settings(DJANGO_WORKFLOWS={**workflow_settings.user_settings,
                                             "RUNNER": DJANGO_Q_RUNNER}):
        yield


@pytest.fixture
def demo_users(transactional_db, queued_work):
    """The demo's users and instances, as ``./scripts/demo`` makes them."""
    call_command("workflows_demo_data", stdout=StringIO())
    return {user.username: user for user in get_user_model().objects.all()}


def test_the_favicon_is_an_icon(client):
    answer = client.get("/favicon.ico")

    assert answer.status_code == 200
    assert answer["Content-Type"] == "image/svg+xml"
    assert answer.content.startswith(b"<svg")


def test_the_home_page_is_a_shop_page(client, db):
    page = client.get("/").content.decode()

    assert '<link rel="stylesheet" href="/static/shop/shop.css">' in page
    assert '<a href="/" class="brand">Example shop</a>' in page
    assert 'href="/wizard/"' in page and 'href="/admin/"' in page


@pytest.mark.needs_q2
def test_only_staff_are_offered_the_live_cases(client, demo_users):
    client.force_login(demo_users["alice"])
    assert "start-live-cases" not in client.get("/").content.decode()

    client.force_login(demo_users["operator"])
    assert "start-live-cases" in client.get("/").content.decode()


@pytest.mark.needs_q2
def test_staff_start_a_slow_a_failing_and_a_declined_order_and_a_claim_to_approve(
        client, demo_users):
    before = set(WorkflowInstance.objects.values_list("pk", flat=True))
    client.force_login(demo_users["operator"])

    answer = client.post("/tour/live-cases/", follow=True)

    assert answer.redirect_chain == [("/", 302)]
    started = WorkflowInstance.objects.exclude(pk__in=before).filter(parent=None)
    orders = {o.reference: o for o in started.filter(workflow="order-fulfilment")}
    assert sorted(orders) == ["D-1006", "D-1007", "D-1008"]  # after the demo data's orders
    slow, failing, declined = orders["D-1006"], orders["D-1007"], orders["D-1008"]
    assert (slow.status, slow.state["payment_method"]) == ("running", "pm_card_slow")
    assert [(op["id"], op["status"]) for op in slow.operations] == [("charge-card", "queued")]
    assert (failing.status, failing.state["address"]["country"]) == ("running", "IS")
    assert (declined.status, declined.state["payment_method"]) == ("running",
                                                                   "pm_card_declined")
    [claim] = started.filter(workflow="expense-approval")
    assert (claim.status, claim.owner.username) == ("running", "bob")
    assert WorkflowTask.objects.get(instance=claim, status="open").candidates == [
        "group:managers"]
    page = answer.content.decode()
    assert "Started the tour's live cases" in page
    for instance in (slow, failing, declined, claim):
        assert f"/admin/django_workflows/workflowinstance/{instance.pk}/" in page


@pytest.mark.needs_q2
def test_pressed_twice_it_starts_them_twice_with_new_order_numbers(client, demo_users):
    client.force_login(demo_users["operator"])

    client.post("/tour/live-cases/")
    client.post("/tour/live-cases/")

    references = WorkflowInstance.objects.filter(
        workflow="order-fulfilment", reference__isnull=False).values_list("reference", flat=True)
    assert sorted(references) == [f"D-{n}" for n in range(1001, 1012)]


@pytest.mark.needs_q2
def test_a_customer_cannot_start_them(client, demo_users):
    count = WorkflowInstance.objects.count()
    client.force_login(demo_users["alice"])

    assert client.post("/tour/live-cases/").status_code == 403
    assert client.get("/tour/live-cases/").status_code == 405
    assert WorkflowInstance.objects.count() == count


@pytest.mark.needs_q2
def test_without_the_demo_users_it_says_what_to_run(client, db, queued_work):
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="olga", is_staff=True))

    page = client.post("/tour/live-cases/", follow=True).content.decode()

    assert "run manage.py workflows_demo_data first" in page
    assert not WorkflowInstance.objects.exists()


def test_the_slow_banks_wait_fits_in_one_attempt_and_in_the_orders_wait_for_it():
    from example_project.shop import payments
    from example_project.shop.bank import fake_bank
    from example_project.shop.fulfilment import fulfilment

    slow = payments.config()["SLOW_LATENCY"]
    assert fake_bank.steps[0].operations[0].timeout > slow
    assert fulfilment.step("confirmation").wait.timeout > slow


def test_next_order_number_follows_the_highest_given(db):
    assert tour.next_order_number() == "D-1001"


# -- in a browser ----------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.needs_q2
def test_the_home_page_looks_like_the_shop_and_starts_the_live_cases(
        browser, live_server, transactional_db, queued_work):
    off_the_browsers_thread(lambda: call_command("workflows_demo_data", stdout=StringIO()))
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        page.goto("/")
        # shop.css applies: the page is the shop's column, with its header and cards.
        assert page.evaluate("getComputedStyle(document.querySelector('main')).maxWidth") \
            == "576px"
        assert page.evaluate(
            "getComputedStyle(document.querySelector('.card')).borderTopStyle") == "solid"
        assert page.request.get("/favicon.ico").status == 200
        page.click("text=Log in")
        page.fill("#id_username", "operator")
        page.fill("#id_password", "operator-demo")
        page.click("button[type=submit]")
        page.wait_for_url(live_server.url + "/")
        screenshot(page, "home-operator")

        page.click("#start-live-cases")
        page.wait_for_selector(".message.success")
        screenshot(page, "home-live-cases-started")
        links = page.eval_on_selector_all(".message.success a", "links => links.map(a => "
                                          "a.textContent)")
        assert links == ["order D-1006", "order D-1007", "order D-1008", "bob's expense claim",
                         "your tasks"]
        page.click("text=order D-1006")
        page.wait_for_url("**/admin/django_workflows/workflowinstance/*/change/")
        assert "D-1006" in page.content()
    finally:
        context.close()
