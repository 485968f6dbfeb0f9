#!/usr/bin/env python
"""Instructions per no-op operation on a worker's path (the claim, the run, the record), or
per ``services.next``, counted by Valgrind: the same on a slow day as on a fast one, where
CPU time moves by ±10 % between two runs of the same code on a busy machine.

    .venv/bin/python bench/instructions.py                  # this tree against HEAD
    .venv/bin/python bench/instructions.py --before HEAD~3  # against another commit
    .venv/bin/python bench/instructions.py --before ""      # this tree alone
    .venv/bin/python bench/instructions.py --path next      # a command's client side

It needs ``valgrind`` (Debian's package). It makes a database of its own and starts
instances: of ``bench-noop``, whose attempts wait, as ``bench/operations.py --profile``
does; with ``--path next``, of bench/transitions.py's workflow (manual steps, ~1 KB of
state). Then, for each tree, it runs the path in one process (``run_attempt`` with no
qcluster, or one ``services.next`` on each instance) under cachegrind twice: over one
instance, and over one and ``--operations`` more. The difference, over ``--operations``,
is what one costs: start-up, imports and the first one's statements being prepared are in
both and cancel out. Python's hash seed is fixed, so the count repeats to about 0.5 %. The
server's work is not counted: this is the client's side only. Both trees must share the
migrations.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTRUCTIONS = re.compile(r"I\s+refs:\s+([\d,]+)")


def run_path(path: str, tree: str, targets_file: str, first: int, last: int) -> None:
    """In a child: ``path`` over ``targets[first:last]`` (attempt tokens or instance ids),
    with ``tree``'s code."""
    sys.path.insert(0, tree)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_operations"
    import django

    django.setup()
    targets = json.loads(Path(targets_file).read_text())[first:last]
    if path == "next":
        from bench.transitions import register_workflow
        from django_workflows import services

        register_workflow()
        for instance_id in targets:
            services.next(instance_id)
        return
    from django_workflows.runners.worker import run_attempt

    ran = sum(run_attempt(token, heartbeat_thread=True) for token in targets)
    if ran != len(targets):
        raise SystemExit(f"{len(targets) - ran} of {len(targets)} attempts did not run")


def counted(path: str, tree: Path, targets_file: str, first: int, last: int) -> int:
    """The instructions of a child running ``path`` over ``targets[first:last]`` on ``tree``."""
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, __file__, "--child", path, str(tree), targets_file, str(first),
         str(last)],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"})
    found = INSTRUCTIONS.search(done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"the run on {tree} failed:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def per_operation(path: str, tree: Path, targets_file: str, start: int, operations: int
                  ) -> float:
    """Instructions per operation: a run over 1 + ``operations`` targets less one over 1
    (each warms up on its first)."""
    one = counted(path, tree, targets_file, start, start + 1)
    more = counted(path, tree, targets_file, start + 1, start + 2 + operations)
    return (more - one) / operations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=200,
                        help="operations counted per tree (after one that warms up)")
    parser.add_argument("--before", default="HEAD",
                        help="the commit to count beside this tree (\"\": none)")
    parser.add_argument("--path", choices=["worker", "next"], default="worker",
                        help="a worker's no-op operation, or a command's next")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        path, tree, targets_file, first, last = options.child
        run_path(path, tree, targets_file, int(first), int(last))
        return
    sys.argv = sys.argv[:1]
    sys.path.insert(0, str(ROOT))
    from bench import operations
    from bench.calibration import calibration_line
    from bench.limits import before_tree

    with operations.database(), tempfile.NamedTemporaryFile("w", suffix=".json") as targets, \
            before_tree(options.before) if options.before else nullcontext() as before:
        trees = [("this tree", ROOT)] + ([(options.before, before)] if before else [])
        wanted = len(trees) * (options.operations + 2)
        json.dump(started(options.path, wanted), targets)
        targets.flush()
        os.environ["DWF_BENCH_DB"] = operations.settings.DATABASES["default"]["NAME"]
        counts = {}
        for number, (name, tree) in enumerate(trees):
            counts[name] = per_operation(options.path, tree, targets.name,
                                         number * (options.operations + 2), options.operations)
            print(f"{name}: {counts[name] / 1e6:.3f} million instructions per "
                  f"{'next' if options.path == 'next' else 'operation'}", flush=True)
    line = f"{options.path}: {options.operations} per tree"
    if len(counts) == 2:
        line += (f"; this tree over {options.before}: "
                 f"{counts['this tree'] / counts[options.before]:.3f}")
    print(f"{line}; {calibration_line()}")


def started(path: str, count: int) -> list[str]:
    """``count`` started instances for ``path``: their waiting attempts' tokens (worker), or
    their ids (next)."""
    from django.test.utils import override_settings

    from bench import operations

    if path == "next":
        from bench.transitions import WORKFLOW, register_workflow
        from django_workflows import services

        register_workflow()
        return [str(services.create(WORKFLOW, start=True).pk) for _ in range(count)]
    operations.use_broker("orm")
    operations.clear("orm")
    operations.Recorder.tokens = []
    with override_settings(DJANGO_WORKFLOWS={"RUNNER": "bench.operations.Recorder"}):
        operations.start_instances(count)
    return list(operations.Recorder.tokens)


if __name__ == "__main__":
    main()
