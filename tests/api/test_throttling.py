"""Throttling comes from the project's REST_FRAMEWORK settings (scope "workflows")."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.throttling import UserRateThrottle

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db]


class TwoPerMinute(UserRateThrottle):
    rate = "2/min"


@pytest.fixture
def throttled(settings):
    cache.clear()
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": [
        f"{__name__}.TwoPerMinute"]}
    yield
    cache.clear()


def test_a_configured_throttle_answers_429_with_retry_after(api, throttled):
    answers = [api.get("/api/instances/") for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[-1].json()["code"] == "throttled"
    assert int(answers[-1]["Retry-After"]) > 0


def test_without_throttle_classes_nothing_is_throttled(api):
    assert {api.get("/api/instances/").status_code for _ in range(5)} == {200}
