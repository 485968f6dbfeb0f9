"""The rules of the commands, as plain functions of a :class:`~..change.Change`.

One module per family:

- ``navigation``: what people do (start, next, back, skip, validate, update_state,
  retry, cancel), each rule one function whose checks come first;
- ``steps``: entering, leaving and settling steps, and following a nested child;
- ``work``: a step's background work handed out and told to stop;
- ``results``: work coming back (attempts claimed, finished, interrupted);
- ``deadlines``: step timeouts, attempt timeouts and retry delays falling due;
- ``saga``: rollback, a plan of compensations (and the record it leaves);
- ``paused``: what a paused instance refuses, holds for resume, or lets by;
- ``recovery``: pause, resume and rewind.
"""
