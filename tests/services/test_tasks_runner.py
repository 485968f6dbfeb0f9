"""The Tasks runner in this process, on the database backend of the test settings, without a
worker: what it enqueues, what a run of the sweep's chain does, and what its checks say.
(Real db_worker and rqworker processes: tests/background/test_tasks_runner.py.)"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import django
import pytest
from django.core.signals import request_started
from django.db.models.signals import post_migrate
from django.utils import timezone

from django_workflows import checks, services
from django_workflows.conf import TASKS_RUNNER
from django_workflows.models import Attempt, SweepLease
from django_workflows.services.sweep import LEASE

pytestmark = [pytest.mark.needs_tasks, pytest.mark.django_db,
              pytest.mark.skipif(importlib.util.find_spec("django_tasks_db") is None,
                                 reason="needs the tasks extra")]

SWEEP = "django_workflows.runners.tasks.sweep_chain.chain_run"
RUN_ATTEMPT = "django_workflows.runners.tasks.tasks.run_attempt"


@pytest.fixture
def tasks_runner(settings, monkeypatch):
    """The Tasks runner on the database backend; this process has no sweeper thread."""
    from django_workflows.runners.tasks import sweep_chain

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "RUNNER": TASKS_RUNNER,
                                 "TASKS_BACKEND": "default", "SWEEP_IN_WORKERS": False}
    monkeypatch.setattr(sweep_chain, "_next_look", 0.0)
    return sweep_chain


def rows(path: str):
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult.objects.filter(task_path=path).order_by("enqueued_at")


def test_django_tasks_comes_from_django_6_or_from_the_backport():
    from django_workflows.runners.tasks import compat

    expected = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"
    assert compat.task.__module__.startswith(expected)


def test_the_runner_enqueues_one_task_per_attempt_carrying_only_its_token(
        tasks_runner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        instance = services.create("bg-branches", start=True)

    tokens = set(Attempt.objects.filter(instance=instance).values_list("token", flat=True))
    queued = list(rows(RUN_ATTEMPT))
    assert len(queued) == len(tokens) == 3
    assert {row.args_kwargs["args"][0] for row in queued} == tokens
    assert all(row.args_kwargs == {"args": [row.args_kwargs["args"][0]], "kwargs": {}}
               for row in queued)
    assert {(row.backend_name, row.queue_name) for row in queued} == {
        ("default", tasks_runner.workflow_settings.TASKS_QUEUE)}


def test_handing_out_work_starts_the_sweep_chain_ahead_of_the_work_once(
        tasks_runner, django_capture_on_commit_callbacks):
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            services.create("bg-retrying", start=True)

    (chain,) = rows(SWEEP)
    assert chain.priority == 100 and chain.run_after > timezone.now() + timedelta(days=1000)
    assert set(chain.args_kwargs["kwargs"]) == {"chain"}


def test_a_chain_run_sweeps_and_enqueues_its_next_run_deferred(tasks_runner):
    before = timezone.now()
    tasks_runner.run_chain("one", whole_at=0.0, previous=None, own="run-1")

    lease = SweepLease.objects.get(name=LEASE)
    assert lease.holder == "tasks:one" and lease.swept_at >= before
    (following,) = rows(SWEEP)
    kwargs = following.args_kwargs["kwargs"]
    assert (kwargs["chain"], kwargs["previous"]) == ("one", "run-1")
    assert before < following.run_after <= timezone.now() + timedelta(
        seconds=tasks_runner.GAP)


def test_a_second_chain_ends_while_the_first_is_alive(tasks_runner):
    tasks_runner.run_chain("one", whole_at=0.0, previous=None, own=None)
    tasks_runner.run_chain("two", whole_at=0.0, previous=None, own=None)

    assert [row.args_kwargs["kwargs"]["chain"] for row in rows(SWEEP)] == ["one"]
    assert SweepLease.objects.get(name=tasks_runner.CHAIN).holder == "one"


def test_a_chain_whose_lease_ran_out_is_followed_by_the_next(tasks_runner):
    tasks_runner.run_chain("one", whole_at=0.0, previous=None, own=None)
    SweepLease.objects.filter(name=tasks_runner.CHAIN).update(
        held_until=timezone.now() - timedelta(seconds=1))

    tasks_runner.run_chain("two", whole_at=0.0, previous=None, own=None)

    assert SweepLease.objects.get(name=tasks_runner.CHAIN).holder == "two"


def test_a_chain_stands_by_while_a_sweeper_thread_of_its_process_sweeps(tasks_runner,
                                                                         monkeypatch):
    tasks_runner.run_chain("one", whole_at=0.0, previous=None, own=None)
    monkeypatch.setattr(tasks_runner, "sweeper_beside", lambda: object())

    tasks_runner.run_chain("one", whole_at=0.0, previous=None, own=None)

    assert SweepLease.objects.get(name=LEASE).held_until is None  # handed to the thread
    latest = rows(SWEEP).last()
    assert latest.run_after > timezone.now() + timedelta(seconds=tasks_runner.STANDBY - 1)


def test_a_chain_run_forgets_the_row_of_the_run_before(tasks_runner):
    tasks_runner.start_chain()
    first = rows(SWEEP).get()
    first.status = "SUCCESSFUL"
    first.save()

    tasks_runner.run_chain("one", whole_at=0.0, previous=str(first.pk), own=None)

    assert not rows(SWEEP).filter(pk=first.pk).exists()


def test_a_process_forked_for_one_task_starts_no_sweeper_thread(settings, monkeypatch):
    from django_workflows.runners.tasks import sweep_chain

    monkeypatch.setattr(sweep_chain, "_forked", True)
    assert sweep_chain.sweeper_beside() is None


def test_the_attempt_task_logs_what_goes_wrong_and_does_not_raise(monkeypatch, caplog):
    from django_workflows.runners import worker
    from django_workflows.runners.tasks import tasks

    def broken(token, **kwargs):
        raise RuntimeError("database gone")

    monkeypatch.setattr(worker, "run_attempt", broken)
    monkeypatch.setattr(tasks, "sweeper_beside", lambda: None)
    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        assert tasks.run_attempt.call("a-token") is None

    assert "Attempt a-token failed in its worker" in caplog.text


def test_looking_for_a_chain_starts_one_only_when_none_is_alive(tasks_runner):
    tasks_runner.keep_sweeping()
    assert rows(SWEEP).count() == 1

    tasks_runner._next_look = 0.0
    SweepLease.objects.create(name=tasks_runner.CHAIN, holder="alive",
                              held_until=timezone.now() + timedelta(seconds=10))
    tasks_runner.keep_sweeping()
    assert rows(SWEEP).count() == 1


def test_a_request_and_a_migrate_start_the_chain_when_the_runner_is_the_tasks_one(
        tasks_runner, client):
    from django.apps import apps

    apps.get_app_config("django_workflows")._connect_tasks_runner()
    try:
        client.get("/no-such-page/")
    finally:
        post_migrate.disconnect(dispatch_uid="django_workflows.tasks_sweep",
                                sender=apps.get_app_config("django_workflows"))
        request_started.disconnect(dispatch_uid="django_workflows.tasks_sweep")

    assert rows(SWEEP).count() == 1


# -- checks ---------------------------------------------------------------------------------


def problems(id_: str):
    return [m for m in checks.check_tasks_runner() if m.id == f"django_workflows.{id_}"]


def test_the_test_settings_pass_the_tasks_runners_checks(tasks_runner):
    assert checks.check_tasks_runner() == []


def test_the_checks_ask_nothing_of_tasks_with_another_runner():
    assert checks.check_tasks_runner() == []


def test_e010_a_tasks_backend_that_is_not_configured(tasks_runner, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "TASKS_BACKEND": "nowhere"}
    (problem,) = problems("E010")
    assert "TASKS_BACKEND" in problem.msg and "'nowhere'" in problem.msg


def test_e010_a_queue_the_backend_does_not_have(tasks_runner, settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "TASKS_SWEEP_QUEUE": "sweeps"}
    (problem,) = problems("E010")
    assert "TASKS_SWEEP_QUEUE" in problem.msg and "'sweeps'" in problem.msg


def test_w031_a_backend_that_cannot_defer(tasks_runner, settings):
    immediate = ("django.tasks.backends.immediate.ImmediateBackend" if django.VERSION >= (6, 0)
                 else "django_tasks.backends.immediate.ImmediateBackend")
    settings.TASKS = {**settings.TASKS, "now": {"BACKEND": immediate,
                                                 "QUEUES": [settings.DJANGO_WORKFLOWS[
                                                     "TASKS_QUEUE"]]}}
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "TASKS_BACKEND": "now"}
    (problem,) = problems("W031")
    assert "cannot defer" in problem.msg


@pytest.mark.parametrize("value", ["", 3, None])
def test_e010_a_tasks_backend_or_queue_that_is_not_a_name(settings, value):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "TASKS_QUEUE": value}
    (problem,) = [e for e in checks.check_settings() if e.id == "django_workflows.E010"]
    assert "TASKS_QUEUE" in problem.msg


def test_no_sweep_queue_of_its_own_is_a_setting_that_passes(settings):
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "TASKS_SWEEP_QUEUE": None}
    assert checks.check_settings() == []


@pytest.mark.parametrize(("setting", "value", "said"), [
    ("TASKS_BACKEND", "nowhere", "DJANGO_WORKFLOWS['TASKS_BACKEND'] is 'nowhere', which is not a "
                                 "backend of the TASKS setting"),
    ("TASKS_QUEUE", "elsewhere", "DJANGO_WORKFLOWS['TASKS_QUEUE'] is 'elsewhere', which is not a "
                                 "queue of Tasks backend 'default'")])
def test_a_wrong_backend_or_queue_fails_the_start_with_e010_not_a_traceback(
        tmp_path, setting, value, said):
    """``manage.py check`` as a deploy runs it: the Tasks are made at start-up, on a backend
    and queue that exist, and the check names the setting that is wrong."""
    (tmp_path / "wrong_settings.py").write_text(
        "from tests.settings import *  # noqa: F403\n"
        "DJANGO_WORKFLOWS = {**DJANGO_WORKFLOWS, "
        f"'RUNNER': {TASKS_RUNNER!r}, {setting!r}: {value!r}}}\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "wrong_settings",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}

    done = subprocess.run([sys.executable, "-m", "django", "check"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"(django_workflows.E010) {said}" in done.stderr
