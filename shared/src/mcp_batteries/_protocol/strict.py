"""Tool arguments are held to their JSON types: `true` is not an integer, `"5"` is not a number.

pydantic's default (lax) mode reads `head: true` as 1, `"5"` as 5 and `1.0` as 1, so a model that
sends a boolean where the schema says integer gets an answer to a question it did not ask.
Full strict mode is no answer either: in Python mode it refuses a string for an enum, a path or
a date and a list for a tuple, all of which JSON can only send that way. So only the scalar leaves
that JSON has types for become strict (`int`, `float`, `bool`), wherever they sit: inside
`Optional`, unions, lists, dicts, tuples, `Annotated` constraints and nested models. An integer
is still accepted for a float (JSON has one number type), and everything else keeps pydantic's
usual JSON-compatible conversions. Integers are also held to the range JSON carries exactly,
±(2^53 - 1) (`mcp_batteries._protocol.integers`), so 2^63 never reaches a database driver. The JSON Schema
the client sees does not change.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Interval
from pydantic import BaseModel, Strict, create_model
from pydantic.fields import FieldInfo

from mcp_batteries._protocol.integers import MAX_SAFE_INTEGER

__all__ = ["strict_arguments", "strict_type"]

_STRICT_LEAVES = (bool, int, float)
_SAFE_RANGE = Interval(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)


def strict_arguments(model: type[BaseModel]) -> type[BaseModel]:
    """A subclass of `model` whose int, float and bool fields (at any depth) accept only those
    JSON types; `model` itself when it has none."""
    return _strict_model(model, {})


def strict_type(annotation: Any) -> Any:
    """`annotation` with its int, float and bool leaves made strict (unchanged if it has none)."""
    return _strict(annotation, {})


def _strict(annotation: Any, seen: dict[type[BaseModel], type[BaseModel]]) -> Any:
    if annotation is int:
        return Annotated[int, Strict(), _SAFE_RANGE]
    if annotation in _STRICT_LEAVES:
        return Annotated[annotation, Strict()]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _strict_model(annotation, seen)
    origin = get_origin(annotation)
    if origin is None or origin is Literal:
        return annotation
    args = get_args(annotation)
    if origin is Annotated:
        inner = _strict(args[0], seen)
        if inner is args[0]:
            return annotation
        return Annotated[(inner, *annotation.__metadata__)]  # type: ignore[valid-type]
    new_args = tuple(arg if arg is Ellipsis else _strict(arg, seen) for arg in args)
    if all(new is old for new, old in zip(new_args, args, strict=True)):
        return annotation
    if origin is Union or origin is types.UnionType:
        return Union[new_args]  # noqa: UP007 - built from a tuple of types
    if isinstance(annotation, types.GenericAlias):
        return types.GenericAlias(origin, new_args)
    copy_with = getattr(annotation, "copy_with", None)
    if copy_with is not None:
        return copy_with(new_args)
    return annotation  # an exotic generic: left lax rather than guessed at


def _strict_model(model: type[BaseModel], seen: dict[type[BaseModel], type[BaseModel]]) -> type[BaseModel]:
    if model in seen:
        return seen[model]
    seen[model] = model  # a model that refers to itself keeps its lax inner reference
    overrides: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        # `annotation` is the bare type: constraints (ge, max_length) live in the field's metadata.
        stricter = _strict(field.annotation, seen)
        if stricter is not field.annotation:
            overrides[name] = (stricter, _copy_field(field))
    if not overrides:
        return model
    strict_model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        model.__name__,
        __base__=model,
        __module__=model.__module__,
        __doc__=model.__doc__,
        **overrides,
    )
    seen[model] = strict_model
    return strict_model


def _copy_field(field: FieldInfo) -> FieldInfo:
    """The field's default, alias, description and constraints, for a re-declared annotation."""
    copied = FieldInfo.merge_field_infos(field)
    copied.annotation = None
    return copied
