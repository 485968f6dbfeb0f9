"""The example's orders and expense claims do not reopen once completed
(``Workflow(reopen_completed=False)``): Back is refused, in words, instead of reopening a
paid claim or a shipped order by one click."""

from __future__ import annotations

import pytest

from django_workflows import registry, services
from django_workflows.exceptions import WorkflowNotMoved

from .test_expenses import claimed, decide, manager  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("workflow", ["expense-approval"])
def test_the_workflow_does_not_reopen_once_completed(workflow):
    assert registry.get(workflow).reopen_completed is False


def test_back_on_a_paid_claim_is_refused(wf, manager):  # noqa: F811
    claim = claimed(wf)
    done = wf.reload(decide(wf, claim, manager, "approved"))
    assert done.status == "completed"

    with pytest.raises(WorkflowNotMoved) as refused:
        services.back(done)

    assert refused.value.code == "reopen_forbidden"
    assert wf.reload(done).status == "completed"
    assert services.applies(done)["back"].code == "reopen_forbidden"
