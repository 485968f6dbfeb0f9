"""What goes away, and when: a name that moved warns for two minor versions, then goes.

As Django's ``RemovedInDjangoXXWarning``: a project may turn the warning into an error
(``python -W error::django_workflows.deprecation.RemovedIn03Warning``) to find what it must
change before the version that removes the old name."""

from __future__ import annotations

import warnings


class RemovedIn03Warning(DeprecationWarning):
    """A name that django-workflows 0.3 no longer has."""


def moved(old: str, new: str) -> None:
    """Warn that the module ``old`` is now ``new`` (docs/upgrading.md lists each move)."""
    warnings.warn(f"{old} moved to {new}; import it from there ({old} goes in 0.3)",
                  RemovedIn03Warning, stacklevel=3)
