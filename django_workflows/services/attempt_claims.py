"""Claims recorded on the attempt's row only.

A worker claims an attempt with one fenced ``UPDATE`` of the attempt's own row
(``status`` queued -> running), never the instance's: the instance records the
claim with its next change. Every unit of work therefore asks, under the
instance's lock, which of the attempts its snapshot still holds as unclaimed a
worker did claim, and the engine records those first (``claimed=``), so that
each command sees the work as it is. Their rows are locked while the unit
decides: a claim that comes meanwhile waits for it, and finds an attempt the
unit stopped no longer queued.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import engine
from ..models import Attempt, AttemptStatus

# A worker claimed them: running, or ended with a result kept on the row (reported).
CLAIMED = (AttemptStatus.RUNNING, AttemptStatus.REPORTED)


def claims_of(tree: engine.WorkflowSnapshot, *, known: Mapping[str, float] | None = None,
              lock: bool = True, running: Mapping[str, Mapping[str, Any]] | None = None
              ) -> list[engine.ClaimedAttempt]:
    """The attempts of ``tree`` workers claimed that its snapshots do not record yet.

    ``known``: tokens whose claim the caller knows (a worker reporting its own
    attempt), with when: no query for those. ``lock``: lock the rows asked for
    (a unit of work); a dry run (what applies) only reads them. ``running``: the
    root's running attempts as a page read them (``queries.live_attempts``).
    """
    pending = engine.unclaimed_tokens(tree)
    if not pending:
        return []
    known = dict(known or {})
    if running is not None:  # it covers every token of the root; none is asked for again
        known.update({token: row["claimed_at"].timestamp() for token, row in running.items()
                      if row.get("claimed_at") is not None})
        pending = [(i, t) for i, t in pending if i != tree.id or t in known]
    claimed = [(instance_id, token, known[token]) for instance_id, token in pending
               if token in known]
    owners = {token: instance_id for instance_id, token in pending if token not in known}
    if owners:
        rows = Attempt.objects.filter(token__in=list(owners))
        if lock:
            rows = rows.select_for_update()
        claimed += [(owners[token], token, claimed_at.timestamp()) for token, status, claimed_at
                    in rows.values_list("token", "status", "claimed_at")
                    if status in CLAIMED and claimed_at is not None]
    return sorted(claimed, key=lambda claim: claim[2])
