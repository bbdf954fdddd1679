"""``dataclass`` for the classes every start-up makes: the same class, made without compiling code.

The standard decorator writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``
(and, frozen, ``__setattr__``/``__delattr__``) as source text and compiles it: about 1 ms a class,
half of what ``primus-runner plan`` did beyond starting Python. Here those methods are closures
over the class's fields (compiled once, with this module). The class has ``__dataclass_fields__``
too, made of ``dataclasses.Field`` objects when first asked for, so ``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` see a dataclass; ``field``, ``fields``, ``replace``
and ``is_dataclass`` here answer the same without importing ``dataclasses`` (its ``inspect``
costs a plan as much as a fifth of its own work). What this does not model (inheritance from a
dataclass, ``ClassVar``/``InitVar``/``KW_ONLY`` fields, ``init=False`` or keyword-only fields,
``__post_init__``, ``order``, ``slots`` and the like) goes to the standard decorator unchanged.
"""

from __future__ import annotations

import reprlib

_SUPPORTED = {"frozen", "eq", "repr"}
_PSEUDO = ("ClassVar", "InitVar", "KW_ONLY")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()  # this module's "no default" (``dataclasses.MISSING`` where a real Field is made)


class _Field:
    """What ``field()`` declares, until a ``dataclasses.Field`` is asked for (``__dataclass_fields__``)."""

    __slots__ = ("name", "type", "default", "default_factory", "repr", "hash", "init", "compare", "metadata", "kw_only")

    def __init__(self, default, default_factory, init, repr, hash, compare, metadata, kw_only):
        self.name = self.type = None
        self.default, self.default_factory, self.init, self.repr = default, default_factory, init, repr
        self.hash, self.compare, self.metadata, self.kw_only = hash, compare, metadata, kw_only

    def real(self):
        """The ``dataclasses.Field`` the standard decorator would have made of this one."""
        import dataclasses

        def std(value):
            return dataclasses.MISSING if value is MISSING else value

        made = dataclasses.field(default=std(self.default), default_factory=std(self.default_factory), init=self.init,
                                 repr=self.repr, hash=self.hash, compare=self.compare, metadata=self.metadata,
                                 kw_only=std(self.kw_only))
        if self.name is not None:
            made.name, made.type, made._field_type, made.kw_only = self.name, self.type, dataclasses._FIELD, False
        return made


def field(*, default=MISSING, default_factory=MISSING, init=True, repr=True, hash=None, compare=True, metadata=None,
          kw_only=MISSING):
    """``dataclasses.field``, for a class this module makes."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)


class _Fields:
    """``__dataclass_fields__``, made of real ``dataclasses.Field`` objects when first asked for (by
    ``dataclasses.fields``, ``replace``, ``asdict``, ``is_dataclass``): the start-up path never imports
    ``dataclasses``, whose ``inspect`` alone costs as much as a fifth of ``plan``'s own work."""

    def __init__(self, fields: dict):
        self.fields = fields

    def __get__(self, instance, owner):
        made = {name: spec.real() for name, spec in self.fields.items()}
        type.__setattr__(owner, "__dataclass_fields__", made)
        return made


def dataclass(cls=None, /, **options):
    """``dataclasses.dataclass``, with ``frozen``, ``eq`` and ``repr`` made here (anything else: the standard one)."""
    def wrap(cls):
        fields = None if set(options) - _SUPPORTED else _fields_of(cls)
        if fields is None:
            import dataclasses

            for name, value in list(vars(cls).items()):
                if isinstance(value, _Field):
                    setattr(cls, name, value.real())
            return dataclasses.dataclass(cls, **options)
        return _make(cls, fields, options.get("frozen", False), options.get("eq", True), options.get("repr", True))
    return wrap if cls is None else wrap(cls)


def is_record(value) -> bool:
    """Whether ``value`` is a class made here, or an instance of one."""
    return "__record_fields__" in vars(value if isinstance(value, type) else type(value))


def fields(value) -> tuple:
    """``dataclasses.fields``: for a class made here, its fields as declared (``name``, ``type``, ``default`` …)."""
    if is_record(value):
        return tuple((value if isinstance(value, type) else type(value)).__record_fields__.values())
    import dataclasses

    return dataclasses.fields(value)


def is_dataclass(value) -> bool:
    if is_record(value):
        return True
    import dataclasses

    return dataclasses.is_dataclass(value)


def replace(obj, /, **changes):
    """``dataclasses.replace``: a copy of ``obj`` with ``changes``."""
    if not is_record(obj) or isinstance(obj, type):
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for name in type(obj).__record_fields__:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)


def asdict(obj) -> dict:
    """``dataclasses.asdict`` (the standard one: it copies deeply, which nothing on the start-up path needs)."""
    import dataclasses

    return dataclasses.asdict(obj)


def _fields_of(cls) -> dict[str, _Field] | None:
    """The class's fields as the standard decorator reads them; None for what it alone handles."""
    if any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:]) or "__post_init__" in vars(cls):
        return None
    fields: dict[str, _Field] = {}
    for name, kind in cls.__dict__.get("__annotations__", {}).items():
        if not isinstance(kind, str) or any(word in kind for word in _PSEUDO):
            return None
        declared = cls.__dict__.get(name, MISSING)
        made = declared if isinstance(declared, _Field) else field(default=declared)
        if not made.init or made.kw_only is True or made.default is not MISSING and made.default_factory is not MISSING:
            return None
        if made.default is not MISSING and made.default.__class__.__hash__ is None:
            return None  # the standard decorator's "mutable default" error
        made.name, made.type, made.kw_only = name, kind, False
        fields[name] = made
    required_seen = False
    for made in reversed(fields.values()):  # a field without a default after one with: the standard error
        has_default = made.default is not MISSING or made.default_factory is not MISSING
        if has_default and required_seen:
            return None
        required_seen = required_seen or not has_default
    if any(isinstance(v, _Field) and k not in fields for k, v in vars(cls).items()):
        return None
    if any(type(v).__name__ == "Field" and type(v).__module__ == "dataclasses" for v in vars(cls).values()):
        return None  # a dataclasses.field(): the standard decorator's
    return fields


def _make(cls, fields: dict[str, _Field], frozen: bool, eq: bool, repr_: bool):
    for made in fields.values():  # a field() as the class attribute becomes its default, as the standard one does
        if isinstance(cls.__dict__.get(made.name), _Field):
            delattr(cls, made.name) if made.default is MISSING else setattr(cls, made.name, made.default)
    cls.__record_fields__ = fields
    cls.__dataclass_fields__ = _Fields(fields)
    names = tuple(fields)
    explicit = cls.__dict__.get("__hash__", MISSING)
    explicit_hash = not (explicit is MISSING or explicit is None and "__eq__" in cls.__dict__)
    _set(cls, "__init__", _init(fields, frozen))
    if repr_:
        _set(cls, "__repr__", _repr(tuple(f.name for f in fields.values() if f.repr)))
    if eq:
        _set(cls, "__eq__", _eq(tuple(f.name for f in fields.values() if f.compare)))
    if frozen:
        for method in _frozen(cls, frozenset(names)):
            if method.__name__ in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {method.__name__} in class {cls.__name__}")
            setattr(cls, method.__name__, method)
    if not explicit_hash:
        if eq and frozen:
            cls.__hash__ = _hash(tuple(f.name for f in fields.values() if (f.compare if f.hash is None else f.hash)))
        elif eq:
            cls.__hash__ = None
    if not getattr(cls, "__doc__"):
        cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
    _set(cls, "__match_args__", names)
    return cls


def _set(cls, name: str, value) -> None:
    if name not in cls.__dict__:
        if callable(value):
            value.__qualname__ = f"{cls.__qualname__}.{value.__name__}"
        setattr(cls, name, value)


def _init(fields: dict[str, _Field], frozen: bool):
    names = tuple(fields)
    defaults = [(f.name, f.default, f.default_factory) for f in fields.values()]
    assign = object.__setattr__ if frozen else setattr

    def bind(args: tuple, kwargs: dict) -> list:
        """Every field's value in order, as the standard ``__init__``'s signature binds them."""
        if len(args) > len(names):
            raise TypeError(f"__init__() takes {len(names) + 1} positional arguments but {len(args) + 1} were given")
        values = dict(zip(names, args))
        for name in kwargs:
            if name in values:
                raise TypeError(f"__init__() got multiple values for argument '{name}'")
            if name not in fields:
                raise TypeError(f"__init__() got an unexpected keyword argument '{name}'")
        values.update(kwargs)
        missing = [name for name, default, factory in defaults
                   if name not in values and default is MISSING and factory is MISSING]
        if missing:
            raise TypeError(f"__init__() missing {len(missing)} required argument{'s' if len(missing) > 1 else ''}: "
                            + ", ".join(f"'{name}'" for name in missing))
        return [values[name] if name in values else (default if factory is MISSING else factory())
                for name, default, factory in defaults]

    def __init__(self, *args, **kwargs):
        for name, value in zip(names, args if not kwargs and len(args) == len(names) else bind(args, kwargs)):
            assign(self, name, value)
    return __init__


def _repr(names: tuple[str, ...]):
    @reprlib.recursive_repr()
    def __repr__(self):
        return f"{self.__class__.__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in names)})"
    return __repr__


def _eq(names: tuple[str, ...]):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
        return NotImplemented
    return __eq__


def _hash(names: tuple[str, ...]):
    def __hash__(self):
        return hash(tuple(getattr(self, n) for n in names))
    return __hash__


def _frozen_error(message: str) -> Exception:
    from dataclasses import FrozenInstanceError

    return FrozenInstanceError(message)


def _frozen(cls, names: frozenset[str]):
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return __setattr__, __delattr__
