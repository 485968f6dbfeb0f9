"""A completed onboarding reopened (issue 36): Back and Rewind leave no step they went
back from among the completed steps, so the list agrees with the history."""

from __future__ import annotations

import pytest

from django_workflows import services

from .test_onboarding import confirm_email, decide, fill, to_identity_check, to_review

pytestmark = pytest.mark.django_db


@pytest.fixture
def onboarded(wf, operator):
    instance = to_identity_check(wf)
    decide(wf, to_review(wf, instance), operator, "approved")
    fill(wf, instance, accept_terms=True)
    wf.next(instance)
    confirm_email(instance)
    done = wf.reload(instance)
    assert done.status == "completed"
    assert done.completed_steps == ["profile", "plan", "identity", "confirm", "email"]
    return done


def test_back_on_a_completed_onboarding_no_longer_lists_email(wf, onboarded):
    reopened = services.back(onboarded, user=onboarded.owner)

    assert (reopened.status, reopened.current_step) == ("running", "confirm")
    assert reopened.history == ["profile", "plan", "identity", "confirm"]
    assert reopened.completed_steps == ["profile", "plan", "identity"]


def test_rewind_to_profile_leaves_no_step_completed(wf, onboarded):
    rewound = services.rewind(onboarded, "profile", user=onboarded.owner)

    assert (rewound.status, rewound.current_step, rewound.history) == (
        "running", "profile", ["profile"])
    assert rewound.completed_steps == []
