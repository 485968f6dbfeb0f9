"""The few Django ORM internals the hand-written SQL relies on, behind one adapter.

Rows read with our own SQL must come out as a queryset would make them (the
database's values through the fields' converters, then ``Model.from_db``), and
rows inserted with it must look saved to the ORM afterwards (a primary key, and
``_state`` saying which database holds them). Django documents ``from_db`` and
``get_db_prep_save``, not the compiler's converters nor ``_state``: those are
used here and nowhere else, and ``tests/services/test_orm_adapter.py`` pins what
they do on every supported Django version.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

from django.db.models import Field, Model
from django.db.models.sql import Query

M = TypeVar("M", bound=Model)


class RowReader(Generic[M]):
    """Makes model instances of ``model`` from rows of its concrete columns, in order."""

    def __init__(self, model: type[M], connection: Any) -> None:
        self.model = model
        self.alias = connection.alias
        meta = model._meta
        self.fields: list[Field[Any, Any]] = list(meta.concrete_fields)
        self.attnames = [field.attname for field in self.fields]
        self.compiler = connection.ops.compiler("SQLCompiler")(Query(model), connection,
                                                               connection.alias)
        self.converters = self.compiler.get_converters(
            [field.get_col(meta.db_table) for field in self.fields])

    def first(self, rows: Iterable[Sequence[Any]]) -> M | None:
        """The instance of the first row (None: no row)."""
        rows = list(rows)
        if not rows:
            return None
        if self.converters:
            rows = list(self.compiler.apply_converters(rows, self.converters))
        return self.model.from_db(self.alias, self.attnames, list(rows[0]))


def mark_saved(row: Model, pk: Any, alias: str) -> None:
    """``row`` was inserted with primary key ``pk`` into database ``alias``: the ORM may
    now update, refresh or delete it as one it saved itself."""
    row.pk = pk
    row._state.adding = False
    row._state.db = alias
