"""Every public name of `import evolve` is documented (the reference is generated from the
docstrings), and the handle's public methods too."""

from __future__ import annotations

import inspect

import evolve


def test_every_exported_class_and_function_has_a_docstring() -> None:
    missing = []
    for name in evolve.__all__:
        value = getattr(evolve, name)
        documented = bool((value.__doc__ or "").strip())
        if (inspect.isclass(value) or inspect.isfunction(value)) and not documented:
            missing.append(name)
    assert missing == []


def test_every_public_method_of_the_handle_has_a_docstring() -> None:
    for cls in (evolve.Workspace, evolve.Sections, evolve.FunctionAgent):
        for name, member in vars(cls).items():
            if name.startswith("_") or not (callable(member) or isinstance(member, property)):
                continue
            assert (inspect.getdoc(getattr(cls, name)) or "").strip(), f"{cls.__name__}.{name}"
