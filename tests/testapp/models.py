"""Models that tests need."""

from __future__ import annotations

from django.db import models


class Note(models.Model):
    """A row a hook writes, to see whether its writes were kept or rolled back."""

    text = models.CharField(max_length=200)

    def __str__(self) -> str:
        return self.text
