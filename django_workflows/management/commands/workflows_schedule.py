from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError

SCHEDULE_NAME = "django-workflows sweep"


class Command(BaseCommand):
    help = ("Install (or update) the django-q2 schedule that sweeps workflow deadlines "
            "every minute; each run keeps sweeping every SWEEP_INTERVAL seconds.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not apps.is_installed("django_q"):
            raise CommandError("django_q is not in INSTALLED_APPS; run `manage.py "
                               "workflows_sweep --loop` as a process of its own instead.")
        from django_q.models import Schedule

        _schedule, created = Schedule.objects.update_or_create(
            name=SCHEDULE_NAME,
            defaults={"func": "django_workflows.tasks.sweep_loop",
                      "schedule_type": Schedule.MINUTES, "minutes": 1, "repeats": -1})
        self.stdout.write(f"{'Installed' if created else 'Updated'} the schedule "
                          f'"{SCHEDULE_NAME}" (every minute).')
