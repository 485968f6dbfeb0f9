"""The workflow page in a real browser: opened from the definitions page, its counts, and a
step that opens the changelist filtered to it."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import reverse

from django_workflows import registry, services

from .conftest import screenshot
from .test_browser_changelist import listed
from .test_workflow_page import PARCEL, TIMES, moved_by_hand, packed_after

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def parcel():
    registry.register(PARCEL, origin="tests.admin.test_browser_workflow_page")
    yield
    registry.unregister(PARCEL.id)


@pytest.fixture
def clock(monkeypatch):
    return moved_by_hand(monkeypatch)  # the live server's thread reads it too


def badges(page, step: str) -> list[str]:
    return page.eval_on_selector_all(f'#dwf-workflow-diagram g[data-step="{step}"] '
                                     "g.dwf-count text", "ts => ts.map(t => t.textContent)")


def test_the_workflow_page_from_the_definitions_page_to_a_steps_instances(page, clock):
    for _ in range(2):
        services.create("page-parcel", start=True)  # at "pack"
    at_check = [packed_after(clock, 240), packed_after(clock, 120, bad="Nowhere")]
    at_check += [packed_after(clock, minutes * 60, bad="Atlantis") for minutes in (3, 5, 30)]
    clock.advance(60)
    page.goto(reverse("admin:django_workflows_workflowinstance_definitions"))

    page.click('tr[data-workflow="page-parcel"] a.dwf-workflow-page-link')
    page.wait_for_url("**/definitions/page-parcel/")

    assert page.inner_text("h1") == "Send a parcel"
    assert badges(page, "pack") == ["2 running"]
    assert badges(page, "check") == ["1 running", "4 failed"]
    pack = '#dwf-workflow-steps tr[data-step="pack"]'
    assert [page.inner_text(f"{pack} .dwf-step-{cell}") for cell in ("stays", "median", "p95")
            ] == ["5", "4.0 min", "30.0 min"]
    check = '#dwf-workflow-steps tr[data-step="check"]'
    assert page.inner_text(f"{check} .dwf-step-failures") == "4"
    assert page.inner_text(f"{check} .dwf-step-errors").splitlines() == [
        f"3 {TIMES} Address unknown: Atlantis", f"1 {TIMES} Address unknown: Nowhere"]
    screenshot(page, "docs-workflow-page")  # docs/images/admin-workflow-page.png

    page.click('#dwf-workflow-diagram a.dwf-step-link:has(g[data-step="check"])')
    page.wait_for_url("**/workflowinstance/?*")

    query = parse_qs(urlparse(page.url).query)
    assert query == {"workflow": ["page-parcel"], "current_step": ["check"]}
    assert sorted(listed(page)) == sorted(str(instance.pk) for instance in at_check)
