"""Finished instances by the million, for the benchmarks that measure as the tables grow.

Copies of one finished instance (its row, its events, its attempts) are made in
SQL on PostgreSQL, 100,000 at a time, under a workflow name of their own so a
benchmark can tell them from its own rows. ``fill_waiting`` copies an instance that
waits for a deadline (a timer), each copy with a deadline row of its own that falls due
a day later or more: the pending timers of bench/deadlines.py ``--pending``.
"""

from __future__ import annotations

from typing import Any

FILLER = "bench-filler"  # the workflow name of the copies


def columns(model: Any, *left_out: str) -> list[str]:
    return [f.column for f in model._meta.concrete_fields if f.column not in left_out]


def fill(template: Any, total: int) -> None:
    """Copies of the instance ``template`` (a pk) until ``total`` copies are in the tables."""
    from django.db import connection

    from django_workflows.models import Attempt, WorkflowEvent, WorkflowInstance

    instances, events = WorkflowInstance._meta.db_table, WorkflowEvent._meta.db_table
    attempts = Attempt._meta.db_table
    copied = columns(WorkflowInstance, "id", "workflow")
    event_columns, attempt_columns = (columns(WorkflowEvent, "id", "instance_id"),
                                      columns(Attempt, "token", "instance_id"))
    have = WorkflowInstance.objects.filter(workflow=FILLER).count()
    with connection.cursor() as cursor:
        while have < total:
            count = min(100_000, total - have)
            cursor.execute("CREATE TEMPORARY TABLE bench_new_ids AS SELECT n, "
                           "gen_random_uuid() AS id FROM generate_series(%s, %s) n",
                           [have + 1, have + count])
            cursor.execute(
                f"INSERT INTO {instances} (id, workflow, {', '.join(copied)}) "
                f"SELECT n.id, %s, {', '.join(f't.{c}' for c in copied)} "
                f"FROM bench_new_ids n, {instances} t WHERE t.id = %s", [FILLER, template])
            if cursor.rowcount != count:
                raise RuntimeError(f"the template instance {template} is gone")
            cursor.execute(
                f"INSERT INTO {events} (instance_id, {', '.join(event_columns)}) "
                f"SELECT n.id, {', '.join(f'e.{c}' for c in event_columns)} "
                f"FROM bench_new_ids n, {events} e WHERE e.instance_id = %s", [template])
            cursor.execute(
                f"INSERT INTO {attempts} (token, instance_id, {', '.join(attempt_columns)}) "
                f"SELECT 'filler-' || n.n || '-' || a.token, n.id, "
                f"{', '.join(f'a.{c}' for c in attempt_columns)} "
                f"FROM bench_new_ids n, {attempts} a WHERE a.instance_id = %s", [template])
            cursor.execute("DROP TABLE bench_new_ids")
            have += count
        # What a bulk load leaves to do (vacuum, the checkpoint) is not what is measured.
        for table in (instances, events, attempts):
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("CHECKPOINT")


def fill_waiting(template: Any, kind: str, total: int) -> None:
    """Copies of the waiting instance ``template`` (a pk; its row only) until ``total``
    copies wait, each with a ``kind`` deadline due a day from now plus n seconds."""
    from django.db import connection

    from django_workflows.models import Deadline, WorkflowInstance

    instances, deadlines = WorkflowInstance._meta.db_table, Deadline._meta.db_table
    copied = columns(WorkflowInstance, "id", "workflow")
    have = Deadline.objects.filter(instance__workflow=FILLER, kind=kind).count()
    with connection.cursor() as cursor:
        while have < total:
            count = min(100_000, total - have)
            cursor.execute("CREATE TEMPORARY TABLE bench_new_ids AS SELECT n, "
                           "gen_random_uuid() AS id FROM generate_series(%s, %s) n",
                           [have + 1, have + count])
            cursor.execute(
                f"INSERT INTO {instances} (id, workflow, {', '.join(copied)}) "
                f"SELECT n.id, %s, {', '.join(f't.{c}' for c in copied)} "
                f"FROM bench_new_ids n, {instances} t WHERE t.id = %s", [FILLER, template])
            if cursor.rowcount != count:
                raise RuntimeError(f"the template instance {template} is gone")
            cursor.execute(
                f"INSERT INTO {deadlines} (instance_id, kind, token, due_at) "
                f"SELECT n.id, %s, 'filler-' || n.n, now() + interval '1 day' "
                f"+ n.n * interval '1 second' FROM bench_new_ids n", [kind])
            cursor.execute("DROP TABLE bench_new_ids")
            have += count
        for table in (instances, deadlines):
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("CHECKPOINT")
