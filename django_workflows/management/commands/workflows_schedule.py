from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand

SCHEDULE_NAME = "django-workflows sweep"


class Command(BaseCommand):
    help = ("Remove the django-q2 schedule that earlier versions installed for the sweep: "
            "qcluster's workers now sweep by themselves.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not apps.is_installed("django_q"):
            self.stdout.write("django_q is not installed: nothing to do. Without it, run "
                              "`manage.py workflows_sweep --loop` as a process of its own.")
            return
        from django_q.models import Schedule

        removed, _ = Schedule.objects.filter(name=SCHEDULE_NAME).delete()
        self.stdout.write(
            (f'Removed the schedule "{SCHEDULE_NAME}". ' if removed else "No schedule to remove. ")
            + "qcluster's workers sweep by themselves (DJANGO_WORKFLOWS['SWEEP_IN_WORKERS']).")
