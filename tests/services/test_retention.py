"""Retention: workflows_purge deletes old finished instances, and nothing else."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from django_workflows import services
from django_workflows.models import IdempotencyKey, WorkflowEvent, WorkflowInstance

pytestmark = pytest.mark.django_db


def finished(workflow: str = "wizard", *, days_ago: float, cancel: bool = True):
    instance = services.create(workflow, start=True)
    instance = services.cancel(instance) if cancel else instance
    WorkflowInstance.objects.filter(pk=instance.pk).update(
        completed_at=timezone.now() - timedelta(days=days_ago))
    return instance


def purge(*args: str) -> str:
    out = StringIO()
    call_command("workflows_purge", *args, stdout=out)
    return out.getvalue()


def test_purge_deletes_finished_instances_older_than_the_age_with_their_events():
    old = finished(days_ago=40)

    output = purge("--older-than", "30")

    assert not WorkflowInstance.objects.filter(pk=old.pk).exists()
    assert not WorkflowEvent.objects.filter(instance_id=old.pk).exists()
    assert "Deleted 1 finished instances" in output


def test_purge_keeps_recent_and_unfinished_instances():
    recent = finished(days_ago=5)
    running = services.create("wizard", start=True)
    WorkflowInstance.objects.filter(pk=running.pk).update(
        updated_at=timezone.now() - timedelta(days=400))

    purge("--older-than", "30")

    assert WorkflowInstance.objects.filter(pk__in=[recent.pk, running.pk]).count() == 2


def test_purge_deletes_a_finished_parent_with_its_children():
    parent = services.create("parent", start=True)
    parent = services.next(parent)
    child_id = parent.nested_id
    services.cancel(parent)
    WorkflowInstance.objects.filter(pk=parent.pk).update(
        completed_at=timezone.now() - timedelta(days=90))

    purge("--older-than", "30")

    assert not WorkflowInstance.objects.filter(pk__in=[parent.pk, child_id]).exists()


def test_purge_works_in_batches():
    for _ in range(5):
        finished(days_ago=60)

    output = purge("--older-than", "30", "--batch-size", "2")

    assert "Deleted 5 finished instances in 3 batches" in output
    assert WorkflowInstance.objects.count() == 0


def test_purge_deletes_the_idempotency_keys_of_deleted_instances_and_expired_keys():
    with_key = services.create("wizard", idempotency_key="k1")
    services.cancel(with_key)
    WorkflowInstance.objects.filter(pk=with_key.pk).update(
        completed_at=timezone.now() - timedelta(days=60))
    lonely = IdempotencyKey.objects.create(scope="", key="old", fingerprint="x",
                                           created_at=timezone.now() - timedelta(days=3))

    purge("--older-than", "30")

    assert not IdempotencyKey.objects.filter(key="k1").exists()
    assert not IdempotencyKey.objects.filter(pk=lonely.pk).exists()


def test_dry_run_counts_and_deletes_nothing():
    finished(days_ago=40)

    output = purge("--older-than", "30", "--dry-run")

    assert output.strip() == "Would delete 1 finished instances"
    assert WorkflowInstance.objects.count() == 1


@override_settings(DJANGO_WORKFLOWS={"RETENTION_DAYS": 10})
def test_the_age_defaults_to_the_retention_setting():
    finished(days_ago=11)

    purge()

    assert WorkflowInstance.objects.count() == 0


def test_purge_without_an_age_says_how_to_give_one():
    with pytest.raises(CommandError, match="--older-than DAYS"):
        purge()
