"""docs/limits.md's code, run as written: its definition registered, its test run as a
reader would copy it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from django_workflows import Limit, Rate, registry
from django_workflows.conf import IMMEDIATE_RUNNER
from django_workflows.models import Attempt

PAGE = Path(__file__).resolve().parents[2] / "docs" / "limits.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.fixture
def page():
    definition, test = BLOCK.findall(PAGE.read_text())
    names: dict = {}
    exec(definition, names)  # the page's own code, as a reader runs it
    registry.register(names["invoicing"], origin="docs/limits.md")
    yield names, test
    registry.unregister("invoicing")


def test_the_pages_definition_declares_a_limit_and_a_rate(page):
    names, _ = page
    operations = names["invoicing"].operations_by_id

    assert operations["charge"].concurrency == Limit(key=names["merchant"], max=5)
    assert operations["report-sale"].rate == Rate(key="tax-office-api", limit=100, per=60)


@pytest.mark.django_db(transaction=True)
def test_the_pages_test_passes(page):
    _, test = page
    names: dict = {}
    exec(test, names)

    # The page's test needs the immediate runner, as its comment says.
    with override_settings(DJANGO_WORKFLOWS={**settings.DJANGO_WORKFLOWS,
                                             "RUNNER": IMMEDIATE_RUNNER}):
        names["test_a_merchants_sixth_charge_waits_for_a_slot"]()

    assert Attempt.objects.filter(target="charge", status="finished").count() == 6
