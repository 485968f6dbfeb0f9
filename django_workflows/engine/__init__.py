"""The workflow engine: pure Python, no Django.

It turns (definition, snapshot, command) into (new snapshot, events,
effects). The service layer stores snapshots and carries out effects.
"""

from .apply import ALLOWED, Verdict, applies, apply, definitions_of, deliver, load, new_instance
from .attempts import AttemptSink, OperationContext, Work, execute, find_work
from .change import Change, Env
from .commands import (
    ACTIONS,
    COMMANDS,
    TASK_COMMANDS,
    AttemptFinished,
    AttemptInterrupted,
    AttemptOutcome,
    AttemptStarted,
    Back,
    Cancel,
    Claim,
    Command,
    Complete,
    DeadlineDue,
    Next,
    PersonCommand,
    Release,
    Retry,
    Rollback,
    Skip,
    SkipOperation,
    Start,
    UpdateState,
    Validate,
)
from .context import HookContext
from .definition import Branch, Operation, Step, Task, Transition, Workflow
from .errors import (
    Cancelled,
    DefinitionError,
    InvalidState,
    MigrationRequired,
    OperationBlockedError,
    OperationInterruptedError,
    OperationTimeoutError,
    StaleOperation,
    WorkflowError,
)
from .feedback import Feedback, feedback
from .outcome import (
    EVENT_TYPES,
    ClearDeadline,
    DeadlineKind,
    Effect,
    Event,
    Outcome,
    RunAttempt,
    SaveTask,
    SetDeadline,
    StopAttempt,
    changed_nodes,
)
from .schema import FieldError, check_state, validate_state
from .snapshot import (
    BranchSnapshot,
    ErrorInfo,
    OperationSnapshot,
    Progress,
    RollbackItem,
    RollbackPlan,
    TaskSnapshot,
    WorkflowSnapshot,
    from_json,
    to_json,
)

__all__ = [
    "ACTIONS", "ALLOWED", "COMMANDS", "EVENT_TYPES", "TASK_COMMANDS", "AttemptFinished",
    "AttemptInterrupted", "AttemptOutcome", "AttemptSink", "AttemptStarted", "Back", "Branch",
    "BranchSnapshot", "Cancel", "Cancelled", "Change", "Claim", "ClearDeadline", "Command",
    "Complete", "DeadlineDue", "DeadlineKind", "DefinitionError", "Effect", "Env", "ErrorInfo",
    "Event", "Feedback", "FieldError", "HookContext", "InvalidState", "MigrationRequired", "Next",
    "Operation", "OperationBlockedError", "OperationContext", "OperationInterruptedError",
    "OperationSnapshot", "OperationTimeoutError", "Outcome", "PersonCommand", "Progress",
    "Release", "Retry", "Rollback", "RollbackItem", "RollbackPlan", "RunAttempt", "SaveTask",
    "SetDeadline", "Skip", "SkipOperation", "StaleOperation", "Start", "Step", "StopAttempt",
    "Task", "TaskSnapshot", "Transition", "UpdateState", "Validate", "Verdict", "Work", "Workflow",
    "WorkflowError", "WorkflowSnapshot", "applies", "apply", "changed_nodes", "check_state",
    "definitions_of", "deliver", "execute", "feedback", "find_work", "from_json", "load",
    "new_instance", "to_json", "validate_state",
]
