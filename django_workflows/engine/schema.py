"""State schemas: a JSON Schema (checked with jsonschema) or a pydantic model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import DefinitionError, Refused, error_message


@dataclass(frozen=True)
class FieldError:
    """One problem with a state: ``field`` is a dotted path ("" for the whole state)."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def _is_pydantic_model(schema: Any) -> bool:
    return isinstance(schema, type) and hasattr(schema, "model_validate")


def check_schema(schema: Any, what: str, *, name: str = "state_schema") -> None:
    """Raise DefinitionError when ``schema`` is neither a valid JSON Schema nor a model."""
    if _is_pydantic_model(schema):
        return
    if not isinstance(schema, dict):
        raise DefinitionError(f"{what}: {name} must be a JSON Schema dict or a pydantic "
                              f"model, not {schema!r}")
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise DefinitionError(f"{what}: {name} is not a valid JSON Schema: "
                              f"{error.message}") from None


def json_schema_of(schema: Any) -> dict[str, Any] | None:
    """A state schema or task form as JSON Schema (a pydantic model's own, generated)."""
    if schema is None:
        return None
    if _is_pydantic_model(schema):
        return dict(schema.model_json_schema())
    return dict(schema)


def _short(message: str, limit: int = 200) -> str:
    """jsonschema repeats the offending value in its message; keep it readable."""
    return message if len(message) <= limit else message[:limit - 1] + "…"


def _dotted(path: Any) -> str:
    return ".".join(str(part) for part in path)


_validators: dict[int, tuple[Any, Any]] = {}  # id(schema) -> (schema, its validator)


def _validator(schema: dict[str, Any]) -> Any:
    """The schema's jsonschema validator, made once (schemas live as long as definitions)."""
    found = _validators.get(id(schema))
    if found is None or found[0] is not schema:
        import jsonschema

        validator_class = jsonschema.validators.validator_for(schema)
        found = (schema, validator_class(schema, format_checker=validator_class.FORMAT_CHECKER))
        _validators[id(schema)] = found
    return found[1]


def validate_state(schema: Any, state: Any) -> list[FieldError]:
    """Every problem of ``state`` against ``schema``, each naming its field."""
    if schema is None:
        return []
    if _is_pydantic_model(schema):
        from pydantic import ValidationError

        try:
            schema.model_validate(state)
        except ValidationError as error:
            return [FieldError(_dotted(e["loc"]), e["msg"]) for e in error.errors()]
        return []
    validator = _validator(schema)
    errors = sorted(validator.iter_errors(state), key=lambda e: list(map(str, e.absolute_path)))
    found: dict[FieldError, None] = {}  # ordered and without repeats
    for problem in errors:
        field = _dotted(problem.absolute_path)
        if problem.validator == "required" and isinstance(problem.validator_value, list):
            # "required" is reported on the parent object; name the missing field instead.
            missing = [name for name in problem.validator_value
                       if isinstance(problem.instance, dict) and name not in problem.instance]
            for name in missing:
                found[FieldError(f"{field}.{name}" if field else name,
                                 "This field is required.")] = None
            continue
        found[FieldError(field, _short(problem.message))] = None
    return list(found)


def check_state(schema: Any, value: Any) -> dict[str, Any]:
    """``value`` as a state, or Refused("invalid_state") naming every bad field."""
    if not isinstance(value, Mapping):
        raise Refused("invalid_state", "The state must be a JSON object",
                      [FieldError("", f"expected an object, got {type(value).__name__}")])
    try:
        text = json.dumps(dict(value), allow_nan=False)  # NaN is not JSON
        state: dict[str, Any] = json.loads(text)
    except (TypeError, ValueError) as error:
        raise Refused("invalid_state", f"The state is not JSON: {error_message(error)}",
                      [FieldError("", error_message(error))]) from None
    problems = validate_state(schema, state)
    if problems:
        raise Refused("invalid_state", "; ".join(map(str, problems)), problems)
    return state
