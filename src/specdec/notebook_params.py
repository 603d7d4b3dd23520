"""Notebook parameters checked against the notebook's own parameters cell before anything runs.

Papermill injects any ``-p name value`` it is given: a misspelt name only earns a warning and the notebook runs on
its default, a ``-5`` sample size publishes verdicts on nothing. ``check`` turns each such slip into one error that
names the parameter and what it accepts. It is called twice over: by ``scripts/run_notebooks.py`` on the values it
is about to inject (``declared`` reads the parameters cell of the ``.ipynb``), and by a notebook's first code cell on
its own namespace (``check_parameters(globals())``), which also protects a plain papermill user.

The rules: a name must be declared in the parameters cell; a value must fit the cell's annotation (``int``,
``float``, ``str``, ``bool``, ``list``, ``dict``, ``X | None``); sizes (every ``int`` but a seed, and the entries of
the size lists in ``SIZE_LISTS``) are ``>= 1``; names with a known vocabulary (``allowed``: the profiles, and each
paper's own names from the registry ``specdec.papers``) must be in it. Like the registry, this module sits above
the papers (it is the notebooks' entry check); the core never imports it.
"""

from __future__ import annotations

import math

from specdec import papers, validate
from specdec.papers import declared, parameter_names

# list parameters whose entries are counts or lengths (>= 1); ``windows`` may also hold "ALL"
SIZE_LISTS = {
    "gammas",
    "train_seeds",
    "theory_gammas",
    "mu_gammas",
    "latency_gammas",
    "latency_batch_sizes",
    "latency_contexts",
    "image_counts",
    "m_values",
    "windows",
}
SIZE_LISTS |= {"batch_sizes"}

# The declared range of every float, list and dict parameter of the notebooks (``tests/test_probes_round3.py`` checks
# that none is missing). A rule is ``("number", low, high, low_open)`` (finite, ``low <= x <= high``, ``low < x`` when
# ``low_open``), ``"str"`` (a non-empty string), ``"int"``, ``"size"`` (an integer >= 1), ``("list", rule, empty_ok)``
# (every entry), ``("dict", rule)`` (string keys, every value), ``("pair", rule)`` (a list of exactly two), or
# ``("config", {key: rule})`` (a dict of those keys, each required).
_UNIT = ("number", 0.0, 1.0, False)
_NON_NEGATIVE = ("number", 0.0, math.inf, False)
_MU = ("number", 0.0, 10.0, False)  # the CD coefficient: the CD paper's 0.1 to 1; far beyond overflows the scores
_STRS = ("list", "str", False)
_SIZES = ("list", "size", False)
RANGES = {
    "temperature": _NON_NEGATIVE,
    "lam": _UNIT,
    "mu": _MU,
    "paper_latency_ratio": ("number", 0.0, 1.0, True),  # T_q / T_p: a draft's cost over its target's
    "temperatures": ("list", _NON_NEGATIVE, False),
    "lams": ("list", _UNIT, False),
    "tradeoff_lams": ("list", _UNIT, False),
    "mus": ("list", _MU, False),
    "seeds": ("list", "int", False),
    "targets": ("list", "str", True),  # empty: the profile's targets
    "configs": ("list", ("config", {"set": "str", "temperature": _NON_NEGATIVE}), False),
    "paper_setting": ("dict", "any"),
    "paper_pairs": ("dict", ("pair", "str")),
    "paper_apf_pairs": ("dict", "str"),
    "c2_gammas": ("dict", "size"),
    **{name: _SIZES for name in SIZE_LISTS if name != "windows"},
    **dict.fromkeys(
        [
            "pairs",
            "methods",
            "compare_captioners",
            "criteria",
            "divergences",
            "gamma_methods",
            "examples",
            "tasks",
            "tradeoff_tasks",
            "c2_tasks",
            "drafter_langs",
            "langs",
            "drafts",
        ],
        _STRS,
    ),
    "windows": ("list", "any", False),  # sizes or "ALL": SIZE_LISTS checks the entries
}

# int parameters that may be 0 or negative (everything else typed int is a size)
NOT_SIZES = {"seed"}
# names the IPython kernel puts in a fresh namespace: never parameters
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def check(params: dict, spec: dict[str, str], notebook: str = "the notebook") -> dict:
    """Raise ``ValueError`` on the first parameter of ``params`` that ``spec`` (``declared``) does not allow;
    returns ``params``."""
    for name, value in params.items():
        if name not in spec:
            validate.choice(f"parameter of {notebook}", name, sorted(spec), hint="see its parameters cell")
        _check_type(name, value, spec[name], notebook)
        _check_range(name, value, spec[name], notebook)
        known = allowed(name, notebook, spec=spec)
        if known is not None:
            for item in value if isinstance(value, list) else [value]:
                if not (isinstance(item, str) and item in known):
                    validate.choice(f"value in {notebook}'s parameter {name}", item, sorted(known))
        if name == "profile":
            runs_on(value, notebook)
    return params


def runs_on(profile: str, notebook: str) -> None:
    """Refuse ``notebook`` (a file name such as ``00_quickstart.ipynb``) on a profile whose yaml lists the notebooks
    it runs (``notebooks:``, file-name prefixes, as the real profile does) and not this one; a notebook
    named otherwise ("this notebook", inside its kernel) cannot be told apart and passes."""
    import yaml

    from specdec import zoo

    path = zoo.DATA / "profiles" / f"{validate.plain_name('profile', profile)}.yaml"
    if not path.exists():
        validate.choice("profile", profile, sorted(allowed("profile") or ()), hint="a yaml file in data/profiles/")
    runs = (yaml.safe_load(path.read_text()) or {}).get("notebooks")
    if runs is None or not notebook[:1].isdigit() or notebook.startswith(tuple(runs)):
        return
    raise ValueError(
        f"{notebook} does not run on the {profile} profile (its notebooks: {runs or 'none yet'}; "
        f"data/profiles/{profile}.yaml says what runs there)"
    )


def check_parameters(namespace: dict, notebook: str = "this notebook") -> None:
    """The in-notebook check: every parameter in ``namespace`` (a notebook's ``globals()`` after papermill's
    injected cell) against the parameters cell's annotations (``__annotations__``); a name that is neither
    annotated, private nor the kernel's is an unknown parameter."""
    annotations = namespace.get("__annotations__", {})
    spec = {name: _annotation_text(a) for name, a in annotations.items()}
    params = {k: v for k, v in namespace.items() if k in spec}
    unknown = [
        k
        for k, v in namespace.items()
        if k not in spec
        and not k.startswith("_")
        and k not in _KERNEL_NAMES
        and not callable(v)
        and type(v).__name__ != "module"
    ]
    for name in unknown:
        validate.choice(f"parameter of {notebook}", name, sorted(spec), hint="see its parameters cell")
    check(params, spec, notebook)


def _annotation_text(annotation) -> str:
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def _fits(value, kind: str) -> bool:
    if kind in ("any", "object"):
        return True
    if kind == "None":
        return value is None
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "str":
        return isinstance(value, str)
    if kind.startswith("list"):
        return isinstance(value, list)
    if kind.startswith("dict"):
        return isinstance(value, dict)
    return True  # an annotation this checker does not know: no claim


def _check_type(name, value, annotation: str, notebook: str) -> None:
    kinds = [k.strip() for k in annotation.split("|")]
    if not any(_fits(value, k) for k in kinds):
        raise TypeError(
            f"{notebook}: parameter {name} must be {annotation} (its parameters cell), got "
            f"{type(value).__name__} {value!r}" + ("; finite numbers only" if isinstance(value, float) else "")
        )


def _check_range(name, value, annotation: str, notebook: str) -> None:
    where = f"{notebook}: parameter {name}"
    if isinstance(value, int) and not isinstance(value, bool) and "int" in annotation and name not in NOT_SIZES:
        validate.integer(where, value, minimum=1, hint="a count or a length")
    if name in SIZE_LISTS and isinstance(value, list):
        if not value:
            raise ValueError(f"{where} must list at least one size, got []")
        for item in value:
            if not (name == "windows" and item == "ALL"):
                validate.integer(f"{where} entries", item, minimum=1, hint="counts or lengths")
    if value is not None and name in RANGES:
        _check_rule(where, value, RANGES[name])


def _check_rule(where: str, value, rule) -> None:
    """Raise ``ValueError`` / ``TypeError`` unless ``value`` follows ``rule`` (``RANGES``)."""
    if rule == "any":
        return
    if rule == "str":
        if not isinstance(value, str) or not value:
            raise ValueError(f"{where} must be a non-empty string, got {value!r}")
    elif rule == "int":
        validate.integer(where, value)
    elif rule == "size":
        validate.integer(where, value, minimum=1, hint="a count or a length")
    elif rule[0] == "number":
        _, low, high, low_open = rule
        number = validate.number(where, value, minimum=low, maximum=None if math.isinf(high) else high)
        if low_open and number == low:
            raise ValueError(f"{where} must be > {low:g}, got {value!r}")
    elif rule[0] == "list":
        if not isinstance(value, list) or (not value and not rule[2]):
            raise ValueError(f"{where} must be a non-empty list, got {value!r}")
        for i, item in enumerate(value):
            _check_rule(f"{where}[{i}]", item, rule[1])
    elif rule[0] == "pair":
        if not isinstance(value, list) or len(value) != 2:
            raise ValueError(f"{where} must be a list of two, got {value!r}")
        for i, item in enumerate(value):
            _check_rule(f"{where}[{i}]", item, rule[1])
    elif rule[0] in ("dict", "config"):
        if not isinstance(value, dict) or any(not isinstance(k, str) for k in value):
            raise ValueError(f"{where} must be a dict with string keys, got {value!r}")
        rules = rule[1] if rule[0] == "config" else dict.fromkeys(value, rule[1])
        missing = sorted(set(rules) - set(value)) if rule[0] == "config" else []
        extra = sorted(set(value) - set(rules))
        if missing or extra:
            raise ValueError(f"{where} must have the keys {sorted(rules)}, got {sorted(value)}")
        for key, item in value.items():
            _check_rule(f"{where}[{key!r}]", item, rules[key])


def allowed(name: str, notebook: str = "", *, spec: dict[str, str] | None = None) -> set[str] | None:
    """The known values of parameter ``name`` (a list parameter: of its entries), or ``None`` when it takes any.

    ``name`` must be a parameter of ``spec`` (``declared``) when it is given, else of ``notebook`` (a committed
    notebook's file name; any other text: of any committed notebook, ``parameter_names``): an unknown name is an
    error that lists them, never ``None`` (which would read as "takes any value")."""
    names = sorted(spec) if spec is not None else parameter_names(notebook)
    if name not in names:
        validate.choice(f"parameter of {notebook or 'the notebooks'}", name, names, hint="see its parameters cell")
    if name == "profile":
        from specdec import zoo

        return {p.stem for p in (zoo.DATA / "profiles").glob("*.yaml")}
    return papers.vocabulary(name, notebook, names=names)  # a paper's names (TABED's methods, ...) or None


# The declared API (tests/probe_coverage.py): ``declared`` and ``parameter_names`` live in the registry.
__all__ = [
    "NOT_SIZES",
    "RANGES",
    "SIZE_LISTS",
    "allowed",
    "check",
    "check_parameters",
    "declared",
    "parameter_names",
    "runs_on",
]
