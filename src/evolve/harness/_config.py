"""`prompts/harness.yaml`: which variant of each module is active (absent: the defaults).

The file is evolvable (under `prompts/`, beside `parameters.yaml`), so it changes through the
applier and `evolve revert` takes a change back like any prompt change. It maps a module to a
built-in variant's name, or to `{variant: NAME, PARAM: N, ...}`; a module it leaves out keeps
its default. A name that is no built-in names a workspace variant file
(`harness/<module>/<variant>.py`, model-written code): it takes no parameters and runs only in
the sandbox (`evolve.harness._sandboxed`; docs/harness.md, variant files).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evolve._format import _limits as limits
from evolve._lazy import pattern
from evolve.errors import ConfigError, PathRefused
from evolve.harness._contracts import MODULES
from evolve.harness._harness import BUILTINS, DEFAULT_HARNESS, DEFAULTS, Harness

HARNESS_FILE = "prompts/harness.yaml"
VARIANTS_DIR = "harness"  # where workspace variant files will live: harness/<module>/<name>.py
_NAME = pattern(r"[a-z][a-z0-9_]{0,63}")
VARIANT_MAX_BYTES = 64 * 1024  # a variant file at most
APPROVED_FILE = f"{VARIANTS_DIR}/approved.yaml"  # module/name -> SHA-256 a person approved

Choice = Mapping[str, tuple[str, Mapping[str, int]]]


def load_harness(root: Path) -> Harness:
    """The harness `root`'s `prompts/harness.yaml` names (the default harness without one).

    Raises:
        ConfigError: the file is not valid, names an unknown module, variant or parameter,
            or names a workspace variant file no person approved (one sentence each).
    """
    if not (root / HARNESS_FILE).is_file() and not (root / HARNESS_FILE).is_symlink():
        return DEFAULT_HARNESS
    return build_harness(load_choice(root), root)


def load_choice(root: Path) -> Choice:
    """The checked choices `root`'s `prompts/harness.yaml` names, without building anything
    (the defaults without one): what a reading command shows.

    Raises:
        ConfigError: the file is not valid, or names an unknown module, variant or parameter.
    """
    if not (root / HARNESS_FILE).is_file() and not (root / HARNESS_FILE).is_symlink():
        return dict(DEFAULT_HARNESS.choice)
    try:
        text = limits.read_text(root, HARNESS_FILE)
    except PathRefused:
        raise
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{HARNESS_FILE} could not be read ({exc}); fix or remove it.") from None
    return parse_choice(text, root)


def variant_files(root: Path) -> dict[str, dict[str, bool]]:
    """module -> {name: approved} for the workspace's variant files (`harness/<module>/*.py`;
    approved: a person approved this very text). A file that cannot be read counts as not
    approved."""
    approved = approved_variants(root)
    out: dict[str, dict[str, bool]] = {}
    for module in MODULES:
        folder = root / VARIANTS_DIR / module
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.glob("*.py")):
            name = path.stem
            if name.startswith("_") or not name.isidentifier():
                continue
            try:
                source = read_variant(root, module, name)
            except ConfigError:
                out.setdefault(module, {})[name] = False
                continue
            digest = hashlib.sha256(source).hexdigest()
            out.setdefault(module, {})[name] = approved.get(f"{module}/{name}") == digest
    return out


def parse_choice(text: str, root: Path | None = None) -> Choice:
    """module -> (variant, parameters) from the text of a harness file, every name checked."""
    # Here, not at the top: a run without a harness file never imports PyYAML.
    import yaml

    from evolve import _yaml

    try:
        data = _yaml.load(text, HARNESS_FILE, error=ConfigError)
    except yaml.YAMLError:
        raise ConfigError(f"{HARNESS_FILE} is not valid YAML; fix or remove it.") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{HARNESS_FILE} must map module names to variant names.")
    choice: dict[str, tuple[str, Mapping[str, int]]] = {m: (DEFAULTS[m], {}) for m in MODULES}
    for module, value in data.items():
        if module == "version":
            if value != 1:
                raise ConfigError(f"{HARNESS_FILE} has version {value!r}; this evolve reads 1.")
            continue
        if module not in MODULES:
            raise ConfigError(
                f"{HARNESS_FILE} names the module {str(module)[:40]!r}; the modules are "
                f"{', '.join(MODULES)}."
            )
        choice[module] = _variant(module, value, root)
    return choice


def _variant(module: str, value: Any, root: Path | None) -> tuple[str, Mapping[str, int]]:
    params: dict[str, Any] = {}
    if isinstance(value, dict):
        params = dict(value)
        value = params.pop("variant", None)
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ConfigError(
            f"{HARNESS_FILE}: {module} must name a variant (lower-case letters, digits and _), "
            f"e.g. {module}: {DEFAULTS[module]}."
        )
    known = BUILTINS[module]
    if value not in known:
        builtins = ", ".join(known)
        own = variant_path(module, value)
        if root is not None and ((root / own).is_file() or (root / own).is_symlink()):
            if params:
                raise ConfigError(
                    f"{HARNESS_FILE}: {module}: {value} is a workspace variant file ({own}); "
                    f"it takes no parameters."
                )
            return value, {}
        raise ConfigError(
            f"{HARNESS_FILE}: {module} has no variant {value!r}; the built-ins are {builtins}."
        )
    declared = known[value].params
    checked: dict[str, int] = {}
    for name, number in params.items():
        spec = declared.get(str(name))
        if spec is None:
            allowed = ", ".join(declared) or "none"
            raise ConfigError(
                f"{HARNESS_FILE}: {module}: {value} has no parameter {str(name)[:40]!r} "
                f"(its parameters: {allowed})."
            )
        if not isinstance(number, int) or isinstance(number, bool):
            raise ConfigError(f"{HARNESS_FILE}: {module}: {name} must be a whole number.")
        if not spec.low <= number <= spec.high:
            raise ConfigError(
                f"{HARNESS_FILE}: {module}: {name} is {number}; it must be between "
                f"{spec.low} and {spec.high}."
            )
        checked[str(name)] = number
    return value, checked


def choose(choice: Choice, module: Any, value: Any, root: Path | None = None) -> Choice:
    """`choice` with `module` set to `value` (a variant's name, or `{variant: NAME, PARAM:
    N}`), checked as the file's entries are.

    Raises:
        ConfigError: an unknown module, variant or parameter (one sentence).
    """
    if module not in MODULES:
        raise ConfigError(
            f"{HARNESS_FILE} has no module {str(module)[:40]!r}; the modules are "
            f"{', '.join(MODULES)}."
        )
    return {**choice, str(module): _variant(str(module), value, root)}


def variant_path(module: str, name: str) -> str:
    """The workspace path of a variant file: `harness/<module>/<name>.py`."""
    return f"{VARIANTS_DIR}/{module}/{name}.py"


def read_variant(root: Path, module: str, name: str) -> bytes:
    """The bytes of a workspace variant file, read without following a link out.

    Raises:
        ConfigError: it cannot be read, or is past the size a variant file may have.
    """
    own = variant_path(module, name)
    try:
        data = limits.read_bytes(root, own)
    except (OSError, ValueError, PathRefused) as exc:
        raise ConfigError(f"{own} could not be read ({exc}).") from None
    if len(data) > VARIANT_MAX_BYTES:
        raise ConfigError(f"{own} is larger than {VARIANT_MAX_BYTES} bytes.")
    return data


def approved_variants(root: Path) -> dict[str, str]:
    """module/name -> the SHA-256 of the text a person approved (`harness/approved.yaml`).

    Raises:
        ConfigError: the file is not a mapping of such entries.
    """
    if not (root / APPROVED_FILE).exists():
        return {}
    import yaml

    from evolve import _yaml

    try:
        data = _yaml.load(limits.read_text(root, APPROVED_FILE), APPROVED_FILE, error=ConfigError)
    except (yaml.YAMLError, OSError, ValueError):
        raise ConfigError(f"{APPROVED_FILE} could not be read; fix or remove it.") from None
    data = data or {}
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigError(f"{APPROVED_FILE} must map module/name to a SHA-256.")
    return dict(data)


def is_approved(root: Path, module: str, name: str, source: bytes) -> bool:
    """Whether a person approved this very text of the variant file (`harness/approved.yaml`)."""
    return approved_variants(root).get(f"{module}/{name}") == hashlib.sha256(source).hexdigest()


def awaits_review(module: str, name: str) -> str:
    """The sentence that refuses to run a variant file no person approved."""
    return (
        f"{variant_path(module, name)} awaits review: a person approves a model-written "
        f"variant file before it first runs (evolve review approve-variant {module} {name})."
    )


def build_harness(choice: Choice, root: Path | None = None) -> Harness:
    """The harness of checked choices (:func:`parse_choice`); a workspace variant file (read
    from `root`) becomes its module run in the sandbox.

    Raises:
        ConfigError: a choice names a variant file that cannot be read (or no `root`).
    """
    made: dict[str, Any] = {}
    for module in MODULES:
        name, params = choice.get(module, (DEFAULTS[module], {}))
        if name in BUILTINS[module]:
            made[module] = BUILTINS[module][name].make(**params)
            continue
        if root is None:
            raise ConfigError(f"{HARNESS_FILE}: {module}: {name} is no built-in variant.")
        from evolve.harness._sandboxed import sandboxed

        source = read_variant(root, module, name)
        if not is_approved(root, module, name, source):
            raise ConfigError(awaits_review(module, name))
        made[module] = sandboxed(module, name, source)
    full = {m: choice.get(m, (DEFAULTS[m], {})) for m in MODULES}
    return Harness(**made, choice={m: (n, dict(p)) for m, (n, p) in full.items()})


def dump_choice(choice: Choice) -> str:
    """The canonical text of a harness file: every module in order, a variant's parameters
    in a flow mapping after its name."""
    lines = ["# The active variant of each harness module (docs/harness.md)."]
    for module in MODULES:
        name, params = choice.get(module, (DEFAULTS[module], {}))
        if params:
            inner = ", ".join(f"{k}: {params[k]}" for k in sorted(params))
            lines.append(f"{module}: {{variant: {name}, {inner}}}")
        else:
            lines.append(f"{module}: {name}")
    return "\n".join(lines) + "\n"
