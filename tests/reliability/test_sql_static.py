"""SQL is never built from values: a static look at every raw statement in django_workflows.

Every ``execute``/``executemany``/``raw``/``extra``/``RawSQL`` call gets its SQL
either as a literal or as a name whose every assignment is *identifier
material*: literals, quoted identifiers (``quote_name``/``qn``), joins of
those, and other such names. Values always travel as parameters. An f-string,
``%`` or ``.format`` that looks like SQL may only interpolate identifier
material too. The checker is shown to catch the usual mistakes.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_workflows"
SQL_CALLS = {"execute", "executemany", "raw", "extra", "RawSQL"}
QUOTING = {"qn", "quote_name"}
RESHAPING = {"numbered"}  # the statement it is given, its placeholders renumbered
LOOKS_LIKE_SQL = re.compile(r"\b(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|WHERE|VALUES|"
                            r"RETURNING|FOR UPDATE)\b")


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class Checker:
    """Which names hold identifier material only, and which calls break the rule."""

    def __init__(self, tree: ast.AST) -> None:
        self.assigned: dict[str, list[ast.AST]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Subscript):  # cache[key] = "..."
                        target = target.value
                    name = _name(target)
                    if name:
                        self.assigned.setdefault(name, []).append(node.value)
        # Functions of the module that return identifier material (a helper quoting a column).
        self.returns: dict[str, list[ast.AST]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                values = [r.value for r in ast.walk(node) if isinstance(r, ast.Return)]
                self.returns.setdefault(node.name, []).extend(
                    v if v is not None else ast.Constant(None) for v in values)
        # The greatest fixpoint: a name is safe unless one of its values is not, so names
        # defined through each other (a cache read back into a local) stay safe together.
        self.safe: set[str] = set(self.assigned)
        self.quoting: set[str] = {name for name, values in self.returns.items() if values}
        changed = True
        while changed:
            changed = False
            for name, values in self.assigned.items():
                if name in self.safe and not all(self.is_safe(v) for v in values):
                    self.safe.discard(name)
                    changed = True
            for name, values in self.returns.items():
                if name in self.quoting and not all(self.is_safe(v) for v in values):
                    self.quoting.discard(name)
                    changed = True

    def is_safe(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str | int | type(None))
        if isinstance(node, ast.Dict):
            return not node.keys  # an empty cache, filled with safe values
        if isinstance(node, ast.JoinedStr):
            return all(self.is_safe(v.value) for v in node.values
                       if isinstance(v, ast.FormattedValue))
        if isinstance(node, ast.IfExp):
            return self.is_safe(node.body) and self.is_safe(node.orelse)
        if isinstance(node, ast.Name | ast.Attribute):
            return _name(node) in self.safe
        if isinstance(node, ast.Subscript):  # cache[key]
            return self.is_safe(node.value)
        if isinstance(node, ast.ListComp | ast.GeneratorExp):  # [sql for sql in safe]
            return self.is_safe(node.elt)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # ["%s"] * n
            return isinstance(node.left, ast.List) and all(self.is_safe(e)
                                                           for e in node.left.elts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # fragment + fragment
            return self.is_safe(node.left) and self.is_safe(node.right)
        if isinstance(node, ast.Call):
            func = node.func
            if _name(func) in QUOTING or _name(func) in self.quoting:
                return True  # a quoted identifier
            if _name(func) in RESHAPING and len(node.args) == 1:
                return self.is_safe(node.args[0])
            if _name(func) == "int":
                return True  # a number carries no SQL (MariaDB's WAIT n cannot be a parameter)
            if _name(func) == "db_type":
                return True  # a column's type, as the field declares it for the database
            if isinstance(func, ast.Attribute) and func.attr == "get":  # cache.get(key)
                return self.is_safe(func.value)
            if isinstance(func, ast.Attribute) and func.attr == "join" and isinstance(
                    func.value, ast.Constant) and len(node.args) == 1:
                part = node.args[0]
                if isinstance(part, ast.GeneratorExp | ast.ListComp):
                    return self.is_safe(part.elt)
                return self.is_safe(part)
        return False

    @staticmethod
    def is_sql_call(node: ast.Call) -> bool:
        """``cursor.execute(...)``, ``qs.raw(...)``, ``qs.extra(...)``, ``RawSQL(...)``;
        not the services' own ``services.execute(instance, command)`` nor ``engine.execute``."""
        func = node.func
        if isinstance(func, ast.Name):
            return func.id == "RawSQL"
        return (isinstance(func, ast.Attribute) and func.attr in SQL_CALLS
                and _name(func.value) not in ("engine", "services"))

    def problems(self, tree: ast.AST, where: str) -> list[str]:
        found = []
        for node in ast.walk(tree):
            line = f"{where}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Call) and self.is_sql_call(node) and node.args \
                    and not self.is_safe(node.args[0]):
                found.append(f"{line}: SQL built from something other than literals and "
                             f"quoted identifiers: {ast.unparse(node.args[0])[:80]}")
            text = None
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                if LOOKS_LIKE_SQL.search(text) and not self.is_safe(node):
                    found.append(f"{line}: an f-string of SQL interpolates a value: "
                                 f"{ast.unparse(node)[:80]}")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add) and any(
                    isinstance(side, ast.Constant) and isinstance(side.value, str)
                    and LOOKS_LIKE_SQL.search(side.value) for side in (node.left, node.right)):
                found.append(f"{line}: SQL put together with % or +: {ast.unparse(node)[:80]}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "format" and isinstance(node.func.value, ast.Constant) \
                    and isinstance(node.func.value.value, str) \
                    and LOOKS_LIKE_SQL.search(node.func.value.value):
                found.append(f"{line}: SQL put together with .format(): "
                             f"{ast.unparse(node)[:80]}")
        return found


def check_source(source: str, where: str = "<source>", *, beside: str = "") -> list[str]:
    """The problems of ``source``; ``beside``: the other modules of its package, whose
    names it may use (a family of statements sets a table's name in its base class)."""
    tree = ast.parse(source)
    return Checker(ast.Module(body=[*tree.body, *ast.parse(beside).body], type_ignores=[])
                   ).problems(tree, where)


def test_no_sql_in_django_workflows_is_built_from_values() -> None:
    problems = []
    calls = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        source = path.read_text()
        calls += len(re.findall(r"\.(execute|executemany|raw|extra)\(|RawSQL\(", source))
        beside = "\n".join(other.read_text() for other in sorted(path.parent.glob("*.py"))
                           if other != path)
        problems.extend(check_source(source, str(path.relative_to(PACKAGE.parent)),
                                     beside=beside))
    assert calls >= 5  # it looked at the statements there are
    assert problems == []


def test_the_checker_catches_sql_built_from_values() -> None:
    assert check_source('cursor.execute(f"SELECT * FROM t WHERE id = {pk}")')
    assert check_source('cursor.execute("SELECT * FROM t WHERE id = %s" % pk)')
    assert check_source('cursor.execute("SELECT * FROM t WHERE id = " + pk)')
    assert check_source('values = [f"({name})"] * 3\ncursor.execute("INSERT INTO t VALUES "'
                        ' + ", ".join(values))')
    assert check_source('cursor.execute("SELECT * FROM t WHERE id = {}".format(pk))')
    assert check_source('sql = f"DELETE FROM t WHERE name = \'{name}\'"\ncursor.execute(sql)')
    assert check_source('Model.objects.raw(f"SELECT * FROM t WHERE a = {a}")')
    assert check_source('qs.extra(f"x = {a}")')


def test_a_helper_counts_as_quoting_only_when_all_it_returns_is_quoted() -> None:
    quoting = 'def column(f):\n    return connection.ops.quote_name(f.column)\n'
    assert check_source(quoting + 'cursor.execute(f"SELECT {column(f)} FROM t")') == []
    leaking = 'def column(f):\n    return f.column\n'
    assert check_source(leaking + 'cursor.execute(f"SELECT {column(f)} FROM t")')


def test_a_name_set_in_another_module_of_the_package_counts_as_it_is_set_there() -> None:
    base = 'class Base:\n    def __init__(self):\n        self.table = qn("t")\n'
    use = 'cursor.execute(f"SELECT * FROM {self.table}")'
    assert check_source(use) != []
    assert check_source(use, beside=base) == []
    assert check_source(use, beside=base.replace('qn("t")', "name")) != []


def test_names_defined_through_each_other_are_as_safe_as_what_fills_them() -> None:
    cache = ('class C:\n    def __init__(self):\n        self.cache = {}\n'
             '    def run(self, cursor, key):\n        cache = self.cache\n'
             '        cache[key] = VALUE\n'
             '        cursor.execute("; ".join(cache[k] for k in [key]))\n')
    assert check_source(cache.replace("VALUE", 'f"EXECUTE {qn(key)}"')) == []
    assert check_source(cache.replace("VALUE", 'f"EXECUTE {key}"'))


def test_the_checker_accepts_parameters_and_quoted_identifiers() -> None:
    assert check_source('cursor.execute("SELECT * FROM t WHERE id = %s", [pk])') == []
    assert check_source(
        'table = qn(meta.db_table)\n'
        'cols = ", ".join(qn(f.column) for f in fields)\n'
        'lock = " FOR UPDATE" if ok else ""\n'
        'sql = f"SELECT {cols} FROM {table} WHERE id = %s{lock}"\n'
        'cursor.execute(sql, [pk])') == []
