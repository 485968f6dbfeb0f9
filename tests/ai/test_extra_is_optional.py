"""The ai extra is optional: without Pydantic AI the app, its admin (with the instance
page's conversation tag) and its services load, and django_workflows.ai says what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WITHOUT_PYDANTIC_AI = """
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pydantic_ai" or name.startswith("pydantic_ai."):
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, NotInstalled())
import django
django.setup()
import django_workflows.admin, django_workflows.services, django_workflows.reading.conversations
import django_workflows.templatetags.workflows_agents
from django.template.loader import get_template
get_template("admin/django_workflows/workflowinstance/detail.html")
assert not any(name.startswith("pydantic_ai") for name in sys.modules)
try:
    import django_workflows.ai
except ImportError as error:
    print(error)
"""


def test_the_app_loads_without_pydantic_ai_and_the_ai_module_names_the_extra():
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYDANTIC_AI], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        'django_workflows.ai needs the ai extra: pip install "django-durable-workflows[ai]"')
