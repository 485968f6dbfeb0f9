from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ...conf import workflow_settings
from ...services.retention import purge


class Command(BaseCommand):
    help = ("Delete completed and cancelled workflow instances that finished more than "
            "--older-than days ago (default: DJANGO_WORKFLOWS['RETENTION_DAYS']), with "
            "their events, in small atomic batches; and expired idempotency keys.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--older-than", type=float, default=None, metavar="DAYS")
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--dry-run", action="store_true",
                            help="Count what would be deleted; delete nothing.")

    def handle(self, *args: Any, older_than: float | None, batch_size: int, dry_run: bool,
               **options: Any) -> None:
        days = older_than if older_than is not None else workflow_settings.RETENTION_DAYS
        if days is None:
            raise CommandError("Say how old: --older-than DAYS, or set "
                               "DJANGO_WORKFLOWS['RETENTION_DAYS'].")
        if days < 0 or batch_size < 1:
            raise CommandError("--older-than must be >= 0 and --batch-size >= 1")
        report = purge(timedelta(days=days), batch_size=batch_size, dry_run=dry_run)
        if dry_run:
            self.stdout.write(f"Would delete {report.instances} finished instances")
        else:
            self.stdout.write(str(report))
