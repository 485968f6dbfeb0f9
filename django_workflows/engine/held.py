"""The commands a paused instance holds for resume (``while_paused="held"``), by name, and
how one is made again from what the snapshot keeps of it (``PauseSnapshot.held``).

The registry lives below the rules: ``commands.py`` fills it as it declares the commands
(and imports the rules to do so), and the rules that apply what was held read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .snapshot import HeldInput


class Holdable(Protocol):
    @classmethod
    def from_held(cls, values: Mapping[str, Any]) -> Any: ...


HELD: dict[str, type[Holdable]] = {}
"""The commands a paused instance holds for resume, by name."""


def held_command(held: HeldInput) -> Any:
    """A command a paused instance held, made again from its JSON."""
    return HELD[held.command].from_held(held.values)
