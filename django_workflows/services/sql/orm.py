"""The Django ORM internals the hand-written SQL relies on, behind one adapter.

Rows read with our own SQL must come out as a queryset would make them: the
database's values through the converters a queryset applies (the backend's, then
the field's ``from_db_value``), then ``Model.from_db``. Django documents
``from_db``, not how a queryset finds and applies its converters. These four are
the internals used, here and nowhere else:

- ``Query(model).get_compiler(connection=...)``: a compiler of the model's query;
- ``Field.get_col(alias)``: a column of the model's table, as the compiler selects it;
- ``SQLCompiler.get_converters(columns)`` and ``.apply_converters(rows, converters)``.

``tests/services/test_orm_adapter.py`` holds them to what the ORM itself loads, on
every supported Django version (``scripts/test``: 5.2, 6.0 and 6.1).
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
        self.compiler = Query(model).get_compiler(connection=connection)
        self.converters = self.compiler.get_converters(
            [field.get_col(meta.db_table) for field in self.fields])

    def first(self, rows: Iterable[Sequence[Any]]) -> M | None:
        """The instance of the first row (None: no row)."""
        rows = list(rows)
        if not rows:
            return None
        if self.converters:
            rows = list(self.compiler.apply_converters(rows[:1], self.converters))
        return self.model.from_db(self.alias, self.attnames, list(rows[0]))
