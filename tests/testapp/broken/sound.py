"""Not broken: a sound module, the control case of the autodiscovery tests.

Its nested workflow is not bound at module level, so it is registered only
through the step that nests it.
"""

from __future__ import annotations

from django_workflows import Step, Transition, Workflow

sound = Workflow(
    id="broken-sound",
    steps=[Step("first"), Step("nest", nested=Workflow(id="broken-sound-inner",
                                                        steps=[Step("look")]))],
    transitions=[Transition("first", "nest")],
)
