"""A light, pydantic-shaped base for the documents eb writes (stage files, results, settings).

Why not pydantic itself: importing pydantic costs ~70 ms, more than the whole start-up budget of
a one-check `eb run` (docs/performance.md). The documents eb writes are built by eb, so they need
no validation at runtime; they need declarations, attribute access and JSON dumps. A `Record`
declares its fields the pydantic way (annotations, `Field(...)`), and `to_pydantic` turns it into
a real pydantic model when a schema is generated (`eval_banana.publish.schemas`), so the class stays
the single source of its schema; stage files read back are checked against that schema first
(`eval_banana.stagefiles.read`). User input (check files) is still validated by pydantic models
(`models/check.py`). Mutable state objects on the hot path (a run's context, its outcome) use
the same base for its keyword-only construction.
"""

from __future__ import annotations

import copy
import re
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple, TypeVar, Union, dataclass_transform

RecordT = TypeVar("RecordT", bound="Record")


class RecordShapeError(ValueError):
    """A document read back is not the shape of the record asked for (not a mapping, a field
    missing or unknown). A ValueError, as a file that is not JSON is: a reader that says
    nothing about an unreadable file catches both with one clause."""


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()
_SCHEMA_KEYS = ("alias", "description", "ge", "le", "pattern", "json_schema_extra")


class _Declared(NamedTuple):
    """What `Field(...)` leaves on the class until `Record.__init_subclass__` reads it."""

    default: Any
    default_factory: Callable[[], Any] | None
    metadata: dict[str, Any]


def Field(  # noqa: N802 - reads like pydantic's Field on purpose
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    alias: str | None = None,
    description: str | None = None,
    ge: float | None = None,
    le: float | None = None,
    pattern: str | None = None,
    json_schema_extra: dict[str, Any] | None = None,
) -> Any:
    """A field with schema metadata; the metadata is used only when a schema is generated."""
    metadata = {
        key: value
        for key, value in zip(
            _SCHEMA_KEYS, (alias, description, ge, le, pattern, json_schema_extra), strict=True
        )
        if value is not None
    }
    return _Declared(default=default, default_factory=default_factory, metadata=metadata)


class FieldSpec(NamedTuple):
    """What `Record.model_fields` holds per field (the subset of pydantic's FieldInfo we use)."""

    name: str
    default: Any
    default_factory: Callable[[], Any] | None
    metadata: dict[str, Any]  # what Field(...) was given for the schema: alias, description...

    @property
    def alias(self) -> str | None:
        return self.metadata.get("alias")

    @property
    def description(self) -> str | None:
        return self.metadata.get("description")

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def get_default(self, *, call_default_factory: bool = False) -> Any:
        if self.default_factory is not None:
            return self.default_factory() if call_default_factory else self.default_factory
        return None if self.default is _MISSING else self.default


Converter = Callable[[Any], Any]
# What model_validate does for one field: name, alias, default, default factory, whether the
# field is a float, the converter of its JSON value.
_FieldPlan = tuple[str, str | None, Any, Any, bool, Converter | None]
_FLOAT_ANNOTATIONS = frozenset({"float", "float | None"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass_transform(kw_only_default=True, field_specifiers=(Field,))
class Record:
    """Keyword-only fields with pydantic's declarations and dump names, and no import cost.

    Deliberately not a dataclass: generating and compiling dataclass methods for every model
    costs more start-up than one generic `__init__` costs at the few hundred objects a run makes.
    """

    model_config: ClassVar[dict[str, Any]] = {}
    model_fields: ClassVar[dict[str, FieldSpec]] = {}
    _annotations: ClassVar[dict[str, str]] = {}
    _aliases: ClassVar[dict[str, str]] = {}
    _init_plan: ClassVar[tuple[tuple[str, Any, Callable[[], Any] | None, bool], ...]] = ()
    # Built on first model_validate: field name -> converter of its JSON value.
    _converters: ClassVar[dict[str, Converter | None] | None] = None
    # Built on first model_validate: what it does for each field (_validate_plan_of).
    _validate_plan: ClassVar[tuple[_FieldPlan, ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        annotations = dict(cls._annotations)
        fields = dict(cls.model_fields)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            text = annotation if isinstance(annotation, str) else repr(annotation)
            if text.startswith(("ClassVar", "typing.ClassVar")):
                continue
            annotations[name] = text
            fields[name] = _field_spec(
                owner=cls.__name__, name=name, declared=cls.__dict__.get(name, _MISSING)
            )
        cls._annotations = annotations
        cls.model_fields = fields
        cls._aliases = {spec.alias: name for name, spec in fields.items() if spec.alias}
        cls._init_plan = tuple(
            (name, spec.default, spec.default_factory, annotations[name] in _FLOAT_ANNOTATIONS)
            for name, spec in fields.items()
        )
        cls._converters = None
        cls._validate_plan = None

    def __init__(self, **values: Any) -> None:
        own = self.__dict__
        for name, default, factory, is_float in type(self)._init_plan:
            if name in values:
                value = values.pop(name)
                # pydantic turns an int given for a float field into a float; dumps must match.
                if is_float and type(value) is int:
                    value = float(value)
            elif factory is not None:
                value = factory()
            elif default is not _MISSING:
                value = default
            else:
                raise TypeError(f"{type(self).__name__} missing required field {name!r}")
            own[name] = value
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(values)}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, like pydantic models

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{type(self).__name__}({inner})"

    @classmethod
    def model_validate(cls: type[RecordT], obj: Any) -> RecordT:
        """Build from a mapping (keys by name or alias); nested records are built too.

        Trusting by design: eb builds these documents itself, and files read back from disk are
        checked against the published JSON Schema first (`eval_banana.stagefiles.read`).
        """
        if isinstance(obj, cls):
            return obj
        if not isinstance(obj, dict):
            raise RecordShapeError(f"{cls.__name__} needs a mapping, got {type(obj).__name__}")
        # One pass over the fields, straight into the instance: a 10,000-result stage file
        # builds some 40,000 records, and the keyword call into __init__ doubled the cost.
        own: dict[str, Any] = {}
        used = 0
        plan = cls._validate_plan
        if plan is None:
            plan = cls._validate_plan = _validate_plan_of(cls)
        for name, alias, default, factory, is_float, convert in plan:
            value = obj.get(alias, _MISSING) if alias is not None else _MISSING
            if value is _MISSING:
                value = obj.get(name, _MISSING)
            if value is _MISSING:
                if factory is not None:
                    value = factory()
                elif default is _MISSING:
                    raise RecordShapeError(f"{cls.__name__} missing required field {name!r}")
                else:
                    value = default
            else:
                used += 1
                if convert is not None:
                    value = convert(value)
                elif is_float and type(value) is int:
                    value = float(value)
            own[name] = value
        if used != len(obj):
            # A key that names no field, or a field given by both its name and its alias.
            return cls._validate_key_by_key(obj)
        record = object.__new__(cls)
        record.__dict__.update(own)
        return record

    @classmethod
    def _validate_key_by_key(cls: type[RecordT], obj: dict[str, Any]) -> RecordT:
        converters = _converters_of(cls)
        values: dict[str, Any] = {}
        for key, value in obj.items():
            name = cls._aliases.get(key, key)
            if name not in converters:
                if cls.model_config.get("extra") == "allow":
                    continue
                raise RecordShapeError(f"{cls.__name__} has no field {key!r}")
            convert = converters[name]
            values[name] = value if convert is None else convert(value)
        try:
            return cls(**values)
        except TypeError as exc:  # a required field missing: the document's shape, as above
            raise RecordShapeError(str(exc)) from None

    def model_dump(self, *, mode: str = "python", by_alias: bool = False) -> dict[str, Any]:
        """Every field, in declaration order (pydantic's order), as plain JSON-able values."""
        del mode  # every value a record holds is already JSON-able
        return _dump_record(self, by_alias=by_alias)

    def model_copy(
        self: RecordT, *, update: dict[str, Any] | None = None, deep: bool = False
    ) -> RecordT:
        new = copy.deepcopy(self) if deep else copy.copy(self)
        new.__dict__.update(update or {})
        return new


def _field_spec(*, owner: str, name: str, declared: Any) -> FieldSpec:
    if isinstance(declared, _Declared):
        return FieldSpec(
            name=name,
            default=declared.default,
            default_factory=declared.default_factory,
            metadata=declared.metadata,
        )
    # Instances take a plain default as is, so a mutable one would be shared between them.
    if isinstance(declared, list | dict | set):
        raise TypeError(f"{owner}.{name}: use Field(default_factory=...) for a mutable default")
    return FieldSpec(name=name, default=declared, default_factory=None, metadata={})


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _dump_value(value: Any, *, by_alias: bool) -> Any:
    kind = type(value)
    if kind in _LEAVES:
        return value  # most values: checked first, by exact type (bool and int included)
    if kind is dict:
        return {key: _dump_value(item, by_alias=by_alias) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_dump_value(item, by_alias=by_alias) for item in value]
    if isinstance(value, Record):
        return _dump_record(value, by_alias=by_alias)
    if isinstance(value, list | tuple):
        return [_dump_value(item, by_alias=by_alias) for item in value]
    if isinstance(value, dict):
        return {key: _dump_value(item, by_alias=by_alias) for key, item in value.items()}
    return value


# Per (Record class, by_alias): (key written, attribute name) of each field, in order.
_DUMP_KEYS: dict[tuple[type, bool], tuple[tuple[str, str], ...]] = {}


def _dump_keys(cls: type[Record], by_alias: bool) -> tuple[tuple[str, str], ...]:
    keys = _DUMP_KEYS.get((cls, by_alias))
    if keys is None:
        keys = tuple(
            (spec.alias if by_alias and spec.alias else name, name)
            for name, spec in cls.model_fields.items()
        )
        _DUMP_KEYS[(cls, by_alias)] = keys
    return keys


def _dump_record(record: Record, *, by_alias: bool) -> dict[str, Any]:
    values = record.__dict__
    dumped: dict[str, Any] = {}
    for key, name in _dump_keys(type(record), by_alias):
        value = values[name]
        # Most fields hold a leaf: tested here, a call per field is most of a dump's time.
        dumped[key] = value if type(value) in _LEAVES else _dump_value(value, by_alias=by_alias)
    return dumped


# ---- annotations -> converters (used by model_validate) ----


def _converters_of(cls: type[Record]) -> dict[str, Converter | None]:
    """Per field, how its JSON value becomes the annotated type (None: it already is).

    Only annotations naming another Record need building, and most name none: those are found
    from the annotation text, without evaluating it.
    """
    if cls._converters is None:
        module_globals = vars(sys.modules[cls.__module__])
        converters: dict[str, Converter | None] = {}
        for name, text in cls._annotations.items():
            names = _IDENTIFIER.findall(text)
            if any(_is_record(module_globals.get(word)) for word in names):
                converters[name] = _converter(eval(text, module_globals))  # noqa: S307
            else:
                converters[name] = None
        cls._converters = converters
    return cls._converters


def _validate_plan_of(cls: type[Record]) -> tuple[_FieldPlan, ...]:
    """Per field: name, alias, default, default factory, whether a float, converter."""
    converters = _converters_of(cls)
    return tuple(
        (name, cls.model_fields[name].alias, default, factory, is_float, converters[name])
        for name, default, factory, is_float in cls._init_plan
    )


def _is_record(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, Record)


def _converter(hint: Any) -> Converter:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if _is_record(hint):
        return hint.model_validate  # type: ignore[no-any-return]
    if origin is list:
        item = _converter(args[0])
        return lambda value: [item(v) for v in value]
    if origin is dict:
        item = _converter(args[1])
        return lambda value: {k: item(v) for k, v in value.items()}
    if origin in (Union, types.UnionType):
        members = [arg for arg in args if arg is not type(None)]
        if len(members) == 1:
            only = _converter(members[0])
            return lambda value: None if value is None else only(value)
    return _identity


def _identity(value: Any) -> Any:
    return value


# ---- the pydantic twin, for generating the published schemas ----

_TWINS: dict[type[Record], Any] = {}


def to_pydantic(cls: type[Record]) -> Any:
    """The pydantic model equivalent to `cls` (same name, fields, metadata and config)."""
    twin = _TWINS.get(cls)
    if twin is not None:
        return twin
    import pydantic

    fields: dict[str, Any] = {}
    hints = typing.get_type_hints(cls)
    for name, spec in cls.model_fields.items():
        kwargs = dict(spec.metadata)
        if spec.default_factory is not None:
            kwargs["default_factory"] = spec.default_factory
        elif spec.default is not _MISSING:
            kwargs["default"] = spec.default
        fields[name] = (_twin_hint(hints[name]), pydantic.Field(**kwargs))
    config: Any = dict(cls.model_config)
    twin = pydantic.create_model(
        cls.__name__,
        __config__=config,
        __doc__=cls.__doc__,
        __module__=cls.__module__,
        **fields,
    )
    _TWINS[cls] = twin
    return twin


def _twin_hint(hint: Any) -> Any:
    """`hint` with every Record replaced by its pydantic twin."""
    if _is_record(hint):
        return to_pydantic(hint)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None or origin is Literal or not args:
        return hint
    replaced = tuple(_twin_hint(arg) for arg in args)
    if origin in (Union, types.UnionType):
        return Union[replaced]  # noqa: UP007 - built from a runtime tuple
    if origin is list:
        return list[replaced[0]]  # type: ignore[valid-type]
    if origin is dict:
        return dict[replaced[0], replaced[1]]  # type: ignore[valid-type]
    return hint
