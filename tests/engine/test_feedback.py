"""The feedback phase of an operation, as people see it (SEED-RULES O-30..33)."""

from __future__ import annotations

import pytest

from django_workflows.engine import OperationSnapshot, Progress, feedback

START = 1000.0


def running(**fields) -> OperationSnapshot:
    return OperationSnapshot(id="op", step="s", title="Op", status="running",
                             started_at=START, **fields)


@pytest.mark.parametrize(("elapsed", "phase"), [
    (0.0, "none"), (0.199, "none"), (0.2, "activity"), (0.999, "activity"),
    (1.0, "indeterminate"), (9.99, "indeterminate"), (10.0, "status"), (600, "status")])
def test_without_a_total_the_phase_follows_the_time_it_has_run(elapsed, phase):
    assert feedback(running(), START + elapsed).phase == phase


def test_with_a_total_it_is_determinate_with_a_percent_after_a_second():
    found = feedback(running(progress=Progress(1, 3, "labels")), START + 2)

    assert (found.phase, found.percent, found.message) == ("determinate", 33, "labels")


def test_the_percent_is_kept_within_0_and_100():
    assert feedback(running(progress=Progress(7, 5)), START + 2).percent == 100
    assert feedback(running(progress=Progress(-1, 5)), START + 2).percent == 0


def test_a_stalled_operation_shows_its_message_only():
    found = feedback(running(progress=Progress(3, None, "Waiting for the bank")), START + 30)

    assert (found.phase, found.percent, found.message) == ("status", None,
                                                           "Waiting for the bank")


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled", "blocked", "skipped"])
def test_a_finished_operation_shows_nothing(status):
    done = OperationSnapshot(id="op", step="s", title="Op", status=status, started_at=START,
                             completed_at=START + 5, progress=Progress(5, 5))

    assert feedback(done, START + 60).phase == "none"


def test_a_queued_operation_that_never_started_shows_nothing():
    queued = OperationSnapshot(id="op", step="s", title="Op", status="queued")

    assert feedback(queued, START).phase == "none"
