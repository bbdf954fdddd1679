"""``runner.records.dataclass`` makes the class the standard ``dataclasses.dataclass`` makes (same
fields, ``__init__``, ``repr``, ``==``, ``hash``, frozenness, ``replace``/``asdict``), compiling no code:
each case is built twice from one source, by each decorator, and the two are compared."""

from __future__ import annotations

import dataclasses
import importlib
import re
import textwrap

import pytest

from runner import records

CASES = {
    "frozen, defaults, factories": ("frozen=True", """
        name: str
        count: int = 3
        tags: tuple[str, ...] = ()
        extra: dict = field(default_factory=dict)
        hidden: str = field(default="h", repr=False)
        loose: str = field(default="x", compare=False)
    """),
    "plain (mutable), eq": ("", """
        items: list = field(default_factory=list)
        flag: bool = False
    """),
    "no eq": ("frozen=True, eq=False", """
        a: int = 1
    """),
    "no repr": ("repr=False", """
        a: int = 1
    """),
    "a nested default instance": ("frozen=True", """
        inner: Inner = Inner()
        n: int | None = None
    """),
    "no fields": ("frozen=True", ""),
}

_SOURCE = '''
from __future__ import annotations
import dataclasses

@dataclasses.dataclass(frozen=True)
class Inner:
    x: int = 0

def make(decorate, field):
    @decorate
    class Case:
        """A case."""
{body}
        def doubled(self):
            return 2
    return Case
'''


def _pair(options: str, body: str):
    source = _SOURCE.format(body=textwrap.indent(textwrap.dedent(body) or "pass\n", " " * 8))
    import sys
    import types

    module = types.ModuleType("records_case")
    sys.modules["records_case"] = module
    exec(compile(source, "records_case", "exec"), module.__dict__)
    namespace = module.__dict__
    kwargs = eval(f"dict({options})")
    return (namespace["make"](dataclasses.dataclass(**kwargs), dataclasses.field),
            namespace["make"](records.dataclass(**kwargs), records.field), namespace)


def _outcome(call):
    """What a call gives, or the type of what it raised (a dict field makes a frozen class unhashable)."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 (compared, not handled)
        return type(exc)


def _shown(value) -> str:
    return re.sub(r" at 0x[0-9a-f]+", " at 0x…", repr(value))


def _facts(cls):
    return [(f.name, f.type, f.default, f.default_factory, f.repr, f.compare, f.hash, f.init, f.kw_only)
            for f in dataclasses.fields(cls)]


def _args(cls) -> dict:
    """Values for every field: the required ones made up, the others changed from their default."""
    made = {}
    for f in dataclasses.fields(cls):
        made[f.name] = {"str": "s", "int": 7, "bool": True, "list": [1], "dict": {"k": 1}}.get(f.type.split(" ")[0], None)
        if f.type.startswith("tuple"):
            made[f.name] = ("t",)
    return made


@pytest.mark.parametrize("case", list(CASES))
def test_the_class_is_the_standard_dataclass(case):
    standard, fast, _ = _pair(*CASES[case])
    assert records.is_record(fast) and not records.is_record(standard)  # made here, not handed to the standard one
    assert _facts(fast) == _facts(standard)
    assert fast.__match_args__ == standard.__match_args__
    assert dataclasses.is_dataclass(fast) and fast.__doc__ == standard.__doc__ == "A case."
    assert (fast.__hash__ is None) == (standard.__hash__ is None)
    required = [f.name for f in dataclasses.fields(standard) if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    for kwargs in ({n: v for n, v in _args(standard).items() if n in required}, _args(standard)):
        a, b = standard(**kwargs), fast(**kwargs)
        if "repr=False" not in CASES[case][0]:
            assert repr(a) == repr(b)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        assert (a == standard(**kwargs)) == (b == fast(**kwargs)) and (b == a) is False
        if standard.__hash__ is not None and "eq=False" not in CASES[case][0]:
            assert _outcome(lambda: hash(a)) == _outcome(lambda: hash(b))
        assert dataclasses.replace(b, **kwargs) == b or fast.__eq__ is object.__eq__
        positional = [kwargs[n] for n in (f.name for f in dataclasses.fields(standard)) if n in kwargs]
        if len(positional) == len(kwargs) and list(kwargs) == [f.name for f in dataclasses.fields(standard)][:len(kwargs)]:
            assert _shown(fast(*positional)) == _shown(b)
        for name in kwargs:
            for target in (a, b):
                frozen = dataclasses.FrozenInstanceError if "frozen=True" in CASES[case][0] else None
                if frozen:
                    with pytest.raises(frozen):
                        setattr(target, name, 1)
                    with pytest.raises(frozen):
                        delattr(target, name)
    assert fast(**_args(standard)).doubled() == 2  # the class's own methods are kept


@pytest.mark.parametrize("call", ["C()", "C(1, 2, 3)", "C(1, a=2)", "C(1, nope=2)"])
def test_a_wrong_call_is_a_type_error_as_before(call):
    standard, fast, _ = _pair("frozen=True", "a: int\nb: int = 2\n")
    for cls in (standard, fast):
        with pytest.raises(TypeError):
            eval(call, {"C": cls})


@pytest.mark.parametrize("body", [
    "a: list = []\n",  # a mutable default: the standard error
    "a: int = 1\nb: int\n",  # a required field after a defaulted one
    "a: ClassVar[int] = 1\n",  # what it does not model goes to the standard decorator
    "a: int = field(default=1, kw_only=True)\n",
])
def test_what_it_does_not_model_is_the_standard_decorators(body):
    try:
        standard = _pair("frozen=True", body)[0]
    except (TypeError, ValueError, NameError) as refused:
        with pytest.raises(type(refused)):
            _pair("frozen=True", body)
        return
    fast = _pair("frozen=True", body)[1]
    assert _facts(fast) == _facts(standard)


# The runner's own classes made by records: each one against its standard twin, made from its own fields.
MODULES = ["runner.options", "runner.plan", "runner.policy", "runner.errors", "runner.trackers.base",
           "runner.engines.docker.container", "runner.config", "runner.config.container_values", "runner.config.envfile",
           "runner.engines.base", "runner.secrets.scope", "runner.gpus.model", "runner.context"]


def _classes():
    for name in MODULES:
        module = importlib.import_module(name)
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value):
                yield value


@pytest.mark.parametrize("cls", list(_classes()), ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_the_runners_classes_match_their_standard_twin(cls):
    frozen = "__setattr__" in vars(cls) and cls.__setattr__.__qualname__.endswith("__setattr__")
    twin = dataclasses.make_dataclass(cls.__name__, [
        (f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory, repr=f.repr,
                                           compare=f.compare, hash=f.hash)) for f in dataclasses.fields(cls)],
        frozen=frozen, eq="__eq__" in vars(cls))
    assert _facts(twin) == _facts(cls)
    assert cls.__match_args__ == twin.__match_args__
    assert (cls.__hash__ is None) == (twin.__hash__ is None)
    if all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING for f in dataclasses.fields(cls)):
        mine = cls()
        theirs = twin(**{f.name: getattr(mine, f.name) for f in dataclasses.fields(cls)})  # the same values
        assert _shown(mine) == _shown(theirs).replace(twin.__qualname__, cls.__qualname__, 1)
        assert _outcome(lambda: mine == cls()) == _outcome(lambda: theirs == twin())
        if cls.__hash__ is not None:
            assert _outcome(lambda: hash(mine)) == _outcome(lambda: hash(theirs))


@pytest.mark.parametrize("case", list(CASES))
def test_its_replace_fields_and_asdict_answer_as_the_standard_ones(case):
    standard, fast, _ = _pair(*CASES[case])
    assert records.is_dataclass(fast) and records.is_dataclass(standard) and not records.is_dataclass(object())
    assert [(f.name, f.type) for f in records.fields(fast)] == [(f.name, f.type) for f in dataclasses.fields(standard)]
    assert records.fields(standard) == dataclasses.fields(standard)  # not one of its own: the standard answer
    kwargs = _args(standard)
    a, b = standard(**kwargs), fast(**kwargs)
    for changes in ({}, {name: value for name, value in list(kwargs.items())[:1]}):
        assert _shown(records.replace(b, **changes)).replace("0x…", "") == _shown(dataclasses.replace(a, **changes)).replace("0x…", "")
        assert records.asdict(b) == dataclasses.asdict(a)
    with pytest.raises(TypeError):
        records.replace(b, not_a_field=1)
    with pytest.raises(TypeError):
        dataclasses.replace(a, not_a_field=1)


def test_the_standard_fields_are_made_only_when_asked_for():
    """A class made here holds its own declarations; ``dataclasses.Field`` objects appear on first use."""
    _, fast, _ = _pair("frozen=True", "a: int = 1\nb: list = field(default_factory=list)\n")
    assert type(vars(fast)["__dataclass_fields__"]).__name__ == "_Fields"
    made = dataclasses.fields(fast)
    assert [type(f) for f in made] == [dataclasses.Field, dataclasses.Field]
    assert made[1].default_factory is list and made[0].default == 1 and made[1].default is dataclasses.MISSING
    assert isinstance(vars(fast)["__dataclass_fields__"], dict)
