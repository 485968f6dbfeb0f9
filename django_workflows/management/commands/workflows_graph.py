from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ... import registry
from ...graph import to_dot, to_mermaid, to_svg
from ...models import WorkflowInstance
from ...reading.queries import marks_of

RENDERERS = {"svg": to_svg, "mermaid": to_mermaid, "dot": to_dot}


class Command(BaseCommand):
    help = ("Print a workflow definition as a diagram: SVG (the admin's drawing), Mermaid or "
            "Graphviz DOT. With --instance, the steps of that instance are marked.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("workflow", help="The id of a registered workflow.")
        parser.add_argument("--format", choices=sorted(RENDERERS), default="svg",
                            help="svg (default), mermaid or dot.")
        parser.add_argument("--instance", default=None,
                            help="An instance id: mark its completed, skipped, current and "
                                 "failed steps.")

    def handle(self, *args: Any, workflow: str, format: str, instance: str | None,
               **options: Any) -> None:
        definition = registry.find(workflow)
        if definition is None:
            known = ", ".join(sorted(d.id for d in registry.all_definitions())) or "none"
            raise CommandError(f'No workflow "{workflow}" is registered (registered: {known}).')
        marks = None
        if instance:
            try:
                row = WorkflowInstance.objects.get(pk=instance)
            except (WorkflowInstance.DoesNotExist, ValidationError):
                raise CommandError(f"No workflow instance {instance}.") from None
            if row.workflow != definition.id:
                raise CommandError(f"Instance {instance} is a {row.workflow!r} instance, "
                                   f"not {definition.id!r}.")
            marks = marks_of(row)
        output = RENDERERS[format](definition, marks)
        self.stdout.write(output, ending="" if output.endswith("\n") else "\n")
