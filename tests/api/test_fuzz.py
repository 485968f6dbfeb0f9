"""A property-based fuzz of the API from its own OpenAPI schema (schemathesis).

Every operation of ``/api/schema/``, read from a live server, gets a bounded
number of generated requests, valid ones and invalid ones, signed in as a
superuser. Most valid requests that name an instance name a real one (in
several statuses), so the commands reach the engine and not only 404s.
No answer may be a 5xx or break the schema (status codes, content types,
bodies, headers); invalid input must be refused with a 4xx. The test prints
how many requests it made.

``DWF_FUZZ_EXAMPLES`` sets the examples per operation and mode (default 20:
about 550 requests, half a minute); the fuzzes of the headers and of the admin
scale with it, all three together under a minute on two cores.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from django_workflows.engine import TASK_COMMANDS
from django_workflows.services import COMMAND_NAMES

pytestmark = [pytest.mark.needs_api, pytest.mark.django_db(transaction=True),
              pytest.mark.slow]

EXAMPLES = int(os.environ.get("DWF_FUZZ_EXAMPLES", "20"))

# What the fuzz may create. Background work runs inside the live server (the
# immediate runner), so the workflows made for the real-cluster tests are left
# out: they sleep for seconds, and one kills its own process on purpose.
FUZZED_WORKFLOWS = ["wizard", "long-manual", "back-office", "parent", "child-check",
                    "compensated", "guarded-exit", "restricted", "failing-hook", "approval"]


def real_instances(owner: Any) -> list[str]:
    from tests.factories import WorkflowInstanceFactory

    made = [
        WorkflowInstanceFactory(owner=owner),
        WorkflowInstanceFactory(owner=owner, started=True),
        WorkflowInstanceFactory(owner=owner, blocked=True),
        WorkflowInstanceFactory(owner=owner, workflow="long-manual", started=True),
        WorkflowInstanceFactory(owner=owner, workflow="parent", started=True, commands=["next"]),
        WorkflowInstanceFactory(owner=owner, workflow="compensated", started=True,
                                commands=["next"]),
        WorkflowInstanceFactory(owner=owner, workflow="guarded-exit", started=True),
        WorkflowInstanceFactory(owner=owner, started=True, commands=["cancel"]),
    ]
    return [str(instance.pk) for instance in made]


def real_tasks() -> list[str]:
    """Open tasks of claims owned by someone else (a claimant may not decide their own)."""
    from django_workflows import services
    from tests.factories import UserFactory

    claimant = UserFactory(username="claimant")
    made = [services.next(services.create("approval", owner=claimant, start=True),
                          user=claimant) for _ in range(3)]
    return [str(instance.tasks.get().pk) for instance in made]


def test_fuzzing_the_api_from_its_schema_finds_no_server_error(live_server, capsys):
    import hypothesis
    import requests
    import schemathesis
    from hypothesis import strategies as st
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.core.failures import Failure, FailureGroup
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    from tests.factories import UserFactory

    fuzzer = UserFactory(username="fuzzer", superuser=True)  # password "password"
    instances = real_instances(fuzzer)
    tasks = real_tasks()
    raw = requests.get(f"{live_server.url}/api/schema/?format=json", auth=("fuzzer", "password"),
                       timeout=30).json()
    assert set(FUZZED_WORKFLOWS) <= set(raw["components"]["schemas"]["WorkflowEnum"]["enum"])
    raw["components"]["schemas"]["WorkflowEnum"]["enum"] = FUZZED_WORKFLOWS
    schema = schemathesis.openapi.from_dict(raw)
    # The test signs every request in itself; no made-up Authorization headers.
    schema.config.generation.update(with_security_parameters=False)
    checks = [not_a_server_error, status_code_conformance, content_type_conformance,
              response_schema_conformance, response_headers_conformance]
    requests_made: list[int] = []
    server_errors: list[str] = []
    failures: dict[str, str] = {}  # one example per kind of failure

    def exercise(case: Any, real: int | None) -> None:
        negative = case.meta is not None and case.meta.generation.mode == "negative"
        if real is not None and not negative and "id" in (case.path_parameters or {}):
            named = tasks if case.path.startswith("/api/tasks/") else instances
            case.path_parameters["id"] = named[real % len(named)]
        response = case.call(base_url=live_server.url, auth=("fuzzer", "password"),
                             timeout=30)
        requests_made.append(response.status_code)
        if response.status_code >= 500:
            server_errors.append(f"{response.status_code}: {case.as_curl_command()}")
        try:
            case.validate_response(response, checks=[
                *checks, *([negative_data_rejection] if negative else [])])
        except (Failure, FailureGroup) as error:
            key = f"{case.method} {case.path}: {type(error).__name__}"
            failures.setdefault(key, str(error)[:2000])

    # /api/schema/ is drf-spectacular's own view, not part of the contract.
    operations = [operation for operation in (r.ok() for r in schema.get_all_operations())
                  if operation.path != "/api/schema/"]
    # The root, the two lists, create, an instance, its state, events, tasks and an
    # operation's journal, the definitions, one per command, the task inbox, a task and one
    # per task command, sending a signal: every operation.
    # ... then POST /api/signals/ (1) and the schedules (2).
    assert len(operations) == 10 + len(COMMAND_NAMES) + 2 + len(TASK_COMMANDS) + 1 + 2
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @hypothesis.settings(max_examples=EXAMPLES, deadline=None, database=None,
                                 phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
                                 suppress_health_check=list(hypothesis.HealthCheck))
            @hypothesis.given(case=operation.as_strategy(generation_mode=mode),
                              real=st.one_of(st.none(), st.integers(0, 7)))
            def run(case: Any, real: int | None) -> None:
                exercise(case, real)

            try:
                run()
            except hypothesis.errors.Unsatisfiable:
                # An operation without input (GET /api/workflows/) has nothing to get wrong.
                assert mode == GenerationMode.NEGATIVE, operation.label

    with capsys.disabled():
        print(f"\nfuzz: {len(requests_made)} requests over {len(operations)} operations, "
              f"{len(server_errors)} server errors, {len(failures)} kinds of schema "
              f"failures; statuses {sorted(set(requests_made))}")
    assert (server_errors, failures) == ([], {}), "\n\n".join(
        [*server_errors, *(f"{k}\n{v}" for k, v in failures.items())])
