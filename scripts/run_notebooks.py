"""Execute the numbered notebooks (``notebooks/[0-9]*.ipynb``) with papermill.

Notebooks run in sorted order with ``notebooks/`` as working directory. Every
notebook receives the parameter ``profile`` plus whatever ``-f params.yaml`` and
``-p key value`` add (later sources win: --profile < -f < -p).

For the ``tiny`` profile the notebooks are executed in place (the committed
notebooks hold tiny-profile outputs), through a temporary file that replaces the
notebook only when every cell ran (a failed run leaves ``<name>.failed.ipynb``); any other profile writes to
``results/<profile>/notebooks/<name>.ipynb``. Afterwards papermill's per-run
metadata (timings, status) is stripped so that re-runs do not produce git diffs.

A run of the ``tiny`` profile with a ``-p`` / ``-f`` value other than a notebook's default is an experiment: its
executed notebooks, result tables and figures go to ``results/runs/<key=value,...>/`` (git-ignored; or
``--output-dir``), never over the committed ones, which change only through ``make reproduce`` at the defaults.
It stands on the committed tables, so only what the new values add is computed.

Exit status: 0 if every notebook ran, 1 if any failed (the others still run), 2 if nothing matched or (any
profile but tiny) ``$HF_HOME`` lacks some of the profile's models or datasets: that is checked first, in
seconds, before any notebook runs (``--skip-hub-check`` runs anyway), 130 on Ctrl-C (the kernel is stopped at
once and no further notebook runs). A notebook run in place that comes out byte-identical is not rewritten.

``--executor ray`` runs each notebook series (00-09, 10-19, ...: a series shares its results, so its notebooks
run in order) as one Ray task, one GPU each when the cluster has GPUs; the series 9x (the scoreboard reads the
others' results) runs after the others. ``ray.init()`` joins ``RAY_ADDRESS`` or starts a local cluster; on
several machines the checkout must be on a shared filesystem at the same path. Sweeps inside a notebook are
sharded by ``specdec.sharding`` instead.

Examples::

    python scripts/run_notebooks.py                      # all, tiny profile, in place
    python scripts/run_notebooks.py --only 00_           # just notebooks/00_*.ipynb
    python scripts/run_notebooks.py --only 00_ -p gamma 3   # an experiment: into results/runs/gamma=3/
    python scripts/run_notebooks.py --profile paper -p seed 1
    python scripts/run_notebooks.py --profile paper --executor ray   # one series per GPU
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import fnmatch
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import papermill
import yaml
from papermill.exceptions import PapermillExecutionError

import specdec  # noqa: F401  (specdec.environment: offline flags and caches in the checkout, which kernels inherit)

ROOT = Path(__file__).resolve().parent.parent


def in_place(profile) -> bool:
    """Whether ``profile``'s notebooks run in place (``notebooks/``), on the CPU and without a hub check: the profile
    that ships its models and data (``specdec.harness.profile.ships``); any other writes to
    ``results/<profile>/notebooks/``."""
    from specdec.harness.profile import ships

    return ships(profile)


def parse_value(text: str):
    """Type a ``-p`` value: JSON literals (3, 0.5, 1e-3, true, null, [1, 2]) or else a string."""
    try:
        return json.loads(text)
    except ValueError:
        return {"True": True, "False": False, "None": None}.get(text, text)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="tiny", help="value of the `profile` parameter (default: tiny)")
    ap.add_argument("--kernel", default="specdec", help="Jupyter kernel name (default: specdec)")
    ap.add_argument(
        "--only", metavar="PATTERN", help="run only notebooks whose file name contains PATTERN (glob allowed), e.g. 00_"
    )
    ap.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("KEY", "VALUE"),
        help="extra notebook parameter (repeatable)",
    )
    ap.add_argument(
        "-f", "--parameters-file", type=Path, metavar="YAML", help="YAML mapping of extra notebook parameters"
    )
    ap.add_argument(
        "--notebooks-dir",
        type=Path,
        default=ROOT / "notebooks",
        help="directory holding the notebooks (default: <repo>/notebooks)",
    )
    ap.add_argument(
        "--output-dir",
        type=Path,
        help="where executed notebooks go (default: in place for the tiny profile at its defaults, "
        "<repo>/results/runs/<key=value,...>/notebooks with other values, else <repo>/results/<profile>/notebooks)",
    )
    ap.add_argument(
        "--skip-hub-check",
        action="store_true",
        help="run even when HF_HOME lacks some of the profile's models or datasets (the notebooks needing them fail)",
    )
    ap.add_argument(
        "--executor",
        choices=["serial", "ray"],
        default="serial",
        help="serial: one notebook after another; ray: one Ray task (one GPU) per notebook series",
    )
    return ap.parse_args(argv)


def build_parameters(args: argparse.Namespace) -> dict:
    params = {"profile": args.profile}
    if args.parameters_file:
        loaded = yaml.safe_load(args.parameters_file.read_text()) or {}
        if not isinstance(loaded, dict):
            sys.exit(f"{args.parameters_file}: expected a YAML mapping of parameters")
        params.update(loaded)
    params.update((key, parse_value(value)) for key, value in args.parameter)
    from specdec import validate

    try:  # before anything is read or created: results/<profile>/notebooks must stay inside results/
        validate.plain_name("profile", params["profile"])
    except ValueError as err:
        sys.exit(f"run_notebooks.py: {err}")
    if not in_place(params["profile"]) and "device" not in params:
        params["device"] = profile_device(params["profile"])
    return params


def notebook_parameters(notebook: Path, params: dict, args: argparse.Namespace) -> dict:
    """``params`` over the profile's own settings for this notebook (``notebook_params`` of the profile's yaml,
    by file-name prefix, e.g. the paper's CoS sets and ``max_new_tokens: 256``): -f and -p still win."""
    path = ROOT / "data" / "profiles" / f"{params['profile']}.yaml"
    spec = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    explicit = set(yaml.safe_load(args.parameters_file.read_text()) or {}) if args.parameters_file else set()
    explicit |= {key for key, _ in args.parameter}
    own = {}
    for prefix, values in (spec.get("notebook_params") or {}).items():
        if notebook.name.startswith(prefix):
            own.update(values)
    return {**params, **{k: v for k, v in own.items() if k not in explicit}}


def profile_device(profile: str) -> str:
    """The device the profile's yaml names, by the one rule (``specdec.zoo.device``: ``paper.yaml``'s cuda where
    torch sees one, else ``cpu``, said once): notebooks follow it unless ``-p device`` says otherwise."""
    from specdec.zoo.device import default_device

    path = ROOT / "data" / "profiles" / f"{profile}.yaml"
    spec = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    device = default_device(spec)
    if device != str(spec.get("device", "cpu")):
        print(f"{profile} profile: torch sees no {spec['device']} device here, so the notebooks run on the {device}")
    return device


def hub_check(profile: str) -> str | None:
    """Why an offline run of ``profile`` cannot start (the model and dataset ids its yaml names that ``$HF_HOME``
    lacks, with the fixes), or None when every one is there (or the profile is the tiny one, which ships its own)."""
    path = ROOT / "data" / "profiles" / f"{profile}.yaml"
    if in_place(profile) or not path.exists():
        return None
    from specdec import hub

    spec = yaml.safe_load(path.read_text()) or {}
    missing = hub.missing(spec)
    if not missing:
        return None
    home = os.environ.get("HF_HOME", "~/.cache/huggingface")
    return (
        f"{len(missing)} model / dataset id(s) of the {profile} profile are not in HF_HOME={home} "
        f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); no notebook was run.\n"
        f"  fetch them (needs internet):                make download PROFILE={profile}\n"
        "  or try the paper path on tiny stand-ins:    make paper-try  (random weights: the numbers mean nothing)\n"
        "  or run the notebooks whose ids are here:    add --skip-hub-check"
    )


def hub_standins() -> bool:
    from specdec import hub

    return hub.standin_cache()


class _PapermillNoise(logging.Filter):
    """Papermill's parameter warnings misread comments that hold an ``=`` ("Unable to parse line") and then call
    declared parameters unknown; ``checked_jobs`` checks every name against the parameters cell before anything runs
    (``specdec.notebook_params``) and passes each notebook only its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not message.startswith(("Unable to parse line", "Passed unknown parameter"))


for _name in ("papermill", "papermill.translators"):
    logging.getLogger(_name).addFilter(_PapermillNoise())


def select_notebooks(nb_dir: Path, only: str | None, profile: str | None = None) -> list[Path]:
    """The numbered notebooks of ``nb_dir`` whose names contain ``only``, and of those only the ones ``profile``'s
    yaml lists where it lists them (``notebooks:``, file-name prefixes: the real profile runs a few)."""
    notebooks = sorted(nb_dir.glob("[0-9]*.ipynb"))
    path = ROOT / "data" / "profiles" / f"{profile}.yaml"
    runs = (yaml.safe_load(path.read_text()) or {}).get("notebooks") if profile and path.exists() else None
    if runs is not None:
        notebooks = [nb for nb in notebooks if nb.name.startswith(tuple(runs))]
    if only:
        notebooks = [nb for nb in notebooks if fnmatch.fnmatch(nb.name, f"*{only}*")]
    return notebooks


def kernel_display_name(kernel: str) -> str | None:
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        return KernelSpecManager().get_kernel_spec(kernel).display_name
    except Exception:  # kernel not installed: papermill reports that itself
        return None


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def literal_assignments(source: str) -> dict:
    """``name -> value`` of the top-level assignments of a parameters cell whose value is a literal (``ast``: what
    papermill's line parser misreads where a comment holds an ``=``); other assignments map to ``...``."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            try:
                value = ast.literal_eval(node.value) if node.value is not None else ...
            except ValueError:
                value = ...
            out.update((t.id, value) for t in targets if isinstance(t, ast.Name))
    return out


def declared_parameters(nb) -> dict:
    """The parameters cell's (tag ``parameters``) names and literal defaults; empty if it has none."""
    cell = next((c for c in nb.cells if "parameters" in c.metadata.get("tags", [])), None)
    return literal_assignments(cell.source) if cell is not None else {}


def merged_streams(outputs) -> list:
    """``outputs`` with each run of consecutive stream outputs of one name (stdout, stderr) merged into one: how the
    kernel's messages were split depends on timing, so the same prints came back as one output or as two. A path
    ``/tmp/ipykernel_<pid>/`` in a stream (a warning's source line) becomes ``/tmp/ipykernel/``."""
    merged = []
    for output in outputs:
        last = merged[-1] if merged else None
        if output.output_type == "stream" and last and last.output_type == "stream" and last.name == output.name:
            last.text += output.text
        else:
            merged.append(output)
    for output in merged:  # a warning names the cell's file under the kernel's process id: a new one every run
        if output.output_type == "stream":
            output.text = KERNEL_FILE.sub("/tmp/ipykernel/", output.text)
    return merged


KERNEL_FILE = re.compile(r"/tmp/ipykernel_\d+/")


STANDIN_BANNER = (
    "**Stand-in run.** `HF_HOME` holds the stand-in hub (`make standin-hub`): tiny models with random weights in "
    "place of the paper's. Every table, figure and verdict below only shows that the paper path runs; none of its "
    "numbers means anything."
)


def strip_run_metadata(path: Path, kernel: str, display_name: str | None, keep_default_parameters: bool = True):
    """Drop papermill/nbclient per-run metadata and pin the kernelspec to `kernel`; drop the outputs of Jupyter
    widgets (tqdm's bars: a fresh random model id each run, no state to show them with); unless
    ``keep_default_parameters``, drop papermill's injected-parameters cell when it only restates the defaults of the
    parameters cell (the committed notebooks: one parameters cell for a reader, the same notebook after every rerun)
    and number the executed cells from 1 again. Consecutive prints become one output (``merged_streams``)."""
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)  # tqdm widget state of the last run: noise in a diff
    kernelspec = nb.metadata.setdefault("kernelspec", {})
    kernelspec["name"] = kernel
    if display_name:
        kernelspec["display_name"] = display_name
    kernelspec.setdefault("display_name", kernel)
    kernelspec.setdefault("language", "python")
    defaults = declared_parameters(nb)
    cells = []
    for cell in nb.cells:
        for key in ("papermill", "execution", "ExecuteTime"):
            cell.metadata.pop(key, None)
        tags = cell.metadata.get("tags")
        if tags == []:  # papermill adds empty tag lists
            del cell.metadata["tags"]
        elif tags and "injected-parameters" in tags:
            injected = literal_assignments(cell.source)
            if not keep_default_parameters and all(defaults.get(k, ...) == v for k, v in injected.items()):
                continue
            cell.id = "injected-parameters"  # papermill draws a random id on every run
            cell.source = cell.source.rstrip("\n")  # as ruff format writes it, so a rerun leaves the tree formatted
        if cell.cell_type == "code":
            cell.outputs = merged_streams(o for o in cell.outputs if WIDGET_MIME not in o.get("data", {}))
        cells.append(cell)
    nb.cells = cells
    if not keep_default_parameters:
        count = 0
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.get("execution_count") is not None:
                count += 1
                cell.execution_count = count
                for output in cell.outputs:
                    if "execution_count" in output:
                        output.execution_count = count
    nbformat.write(nb, path)


def execute(nb_path: Path, out_path: Path, params: dict, kernel: str, cwd: Path, display_name) -> tuple:
    """Run one notebook with papermill into ``out_path`` with its ``params``; returns ``(name, status, seconds)``.
    ``out_path`` is replaced only when every cell ran and the result differs from it (a rerun on unchanged inputs
    leaves the file, and git, as they were)."""
    # Execute into a temporary file beside the target and move it over the target only when every cell
    # ran: an error, a kill or a full disk never leaves a committed notebook half-executed.
    partial = out_path.with_name(f".{out_path.stem}.partial.ipynb")
    # The kernel inherits this environment: a non-interactive MPLBACKEND (``agg``, as the tests set) would make
    # it save the figures to files but embed none in the notebook a reader opens.
    os.environ.pop("MPLBACKEND", None)
    start = time.perf_counter()
    status = "ok"
    try:
        papermill.execute_notebook(
            str(nb_path),
            str(partial),
            parameters=params,
            kernel_name=kernel,
            language="python",
            cwd=str(cwd),
            progress_bar=False,
            log_output=False,
            shutdown_kernel="immediate",  # Ctrl-C: the kernel is killed at once, not after a graceful wait
            # the kernel's own log at errors only: ipykernel warns on every start that its local TCP sockets are not
            # encrypted (the kernel listens on 127.0.0.1 only), which read like a failure of the notebook
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
    except KeyboardInterrupt:
        partial.unlink(missing_ok=True)
        raise
    except PapermillExecutionError as exc:
        status = f"FAILED in cell {exc.cell_index}: {exc.ename}: {exc.evalue}"
    except Exception as exc:  # kernel died, timeout, missing kernel, ...
        status = f"FAILED: {type(exc).__name__}: {exc}"
    if status == "ok":
        strip_run_metadata(partial, kernel, display_name, keep_default_parameters=out_path != nb_path)
        if "profile" in params and not in_place(params["profile"]) and hub_standins():
            executed = nbformat.read(partial, as_version=4)
            executed.cells.insert(0, nbformat.v4.new_markdown_cell(STANDIN_BANNER, id="standin-banner"))
            nbformat.write(executed, partial)
            status = "ok (stand-ins: random weights, the numbers mean nothing)"
        if out_path.exists() and out_path.read_bytes() == partial.read_bytes():
            partial.unlink()
        else:
            os.replace(partial, out_path)
    elif partial.exists():
        kept = out_path.with_name(f"{out_path.stem}.failed.ipynb")
        os.replace(partial, kept)
        status += f" (partial output in {kept.name}; {out_path.name} left as it was)"
    return nb_path.name, status, time.perf_counter() - start


def run_series(jobs: list[tuple[Path, Path, dict]], run: dict) -> list[tuple]:
    """The notebooks of one series, in order (what one Ray task runs); a job is (notebook, output, parameters)."""
    return [execute(nb_path, out_path, params, **run) for nb_path, out_path, params in jobs]


def series_waves(items: list, name=lambda item: item.name) -> list[list[list]]:
    """``items`` (notebooks, or anything ``name`` maps to a notebook's file name), in their order, grouped into
    series by the first digit of the name (00-09, 10-19, ...: a series shares its result tables, so its notebooks
    run in order, in one worker) and the series into waves that run one after the other: every series but 9x, then
    9x (the scoreboard reads the others' results). Empty waves are left out. ``--executor ray`` and
    ``scripts/reproduce_fresh.py --jobs`` both schedule by it."""
    series: dict[str, list] = {}
    for item in items:
        series.setdefault(name(item)[0], []).append(item)
    waves = ([s for k, s in series.items() if k != "9"], [s for k, s in series.items() if k == "9"])
    return [wave for wave in waves if wave]


def run_series_on_ray(jobs: list[tuple[Path, Path, dict]], run: dict):
    """Each series (first digit of the name) as a Ray task, the 9x series after the others; yields reports."""
    import ray

    if not ray.is_initialized():
        ray.init()
    task = ray.remote(num_gpus=1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0)(run_series)
    for wave in series_waves(jobs, name=lambda job: job[0].name):
        pending = [task.remote(s, run) for s in wave]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from ray.get(done[0])


def checked_jobs(jobs: list[tuple[Path, Path, dict]], implicit=()) -> list[tuple[Path, Path, dict]]:
    """The jobs with each notebook's parameters checked against its parameters cell (``specdec.notebook_params``).

    A name declared by none of the selected notebooks is a typo (``ValueError``, with the closest declared name); a
    name that only some declare (``seed``, ``device``) goes to those only, instead of papermill's warning.
    ``implicit``: names the runner supplied itself (the paper profile's ``device``), never a typo of the user's, so
    they pass even when no selected notebook declares them (``--only 90_``)."""
    from specdec import notebook_params

    specs = {nb: notebook_params.declared(nb) for nb, _, _ in jobs}
    known = set().union(*specs.values(), implicit) if specs else set(implicit)
    out = []
    for nb, out_path, params in jobs:
        if not specs[nb]:  # no parameters cell: nothing to check against, papermill injects as it always did
            out.append((nb, out_path, params))
            continue
        unknown = [k for k in params if k not in known]
        if unknown:
            notebook_params.check({unknown[0]: params[unknown[0]]}, {k: "any" for k in known}, "the notebooks run")
        own = {k: v for k, v in params.items() if k in specs[nb]}
        out.append((nb, out_path, notebook_params.check(own, specs[nb], nb.name)))
    return out


def non_default(jobs: list[tuple[Path, Path, dict]], args: argparse.Namespace) -> dict:
    """The parameters given with ``-p`` / ``-f`` whose value differs from the default of a notebook that runs (its
    parameters cell): what makes a run a researcher's experiment rather than ``make reproduce``."""
    given = {key for key, _ in args.parameter}
    if args.parameters_file:
        given |= set(yaml.safe_load(args.parameters_file.read_text()) or {})
    changed = {}
    for nb, _, params in jobs:
        defaults = declared_parameters(nbformat.read(nb, as_version=4))
        changed.update(
            (k, params[k]) for k in sorted(given - {"profile"}) if k in params and defaults.get(k, ...) != params[k]
        )
    return changed


def experiment_root(changed: dict, args: argparse.Namespace) -> Path:
    """The folder of a run of the shipped profile with ``changed`` parameters: ``--output-dir``, else
    ``results/runs/<key=value,...>/`` (git-ignored). Its notebooks, result tables and figures all go there."""
    if args.output_dir is not None:
        return args.output_dir
    text = {
        k: ",".join(map(str, v)) if isinstance(v, list) else v if isinstance(v, str) else json.dumps(v)
        for k, v in changed.items()
    }
    slug = ",".join(f"{k}={v}" for k, v in text.items())
    return ROOT / "results" / "runs" / (re.sub(r"[^A-Za-z0-9=.,_-]+", "_", slug)[:120] or "run")


@contextlib.contextmanager
def output_redirected(root: Path | None):
    """``SPECDEC_OUTPUT_DIR=root`` for the kernels started inside (unless the caller set it: ``make test``,
    ``reproduce_fresh.py``): their result tables go to ``root/results``, figures to ``root/figures``; the committed
    tables are still read as the base layer, so only what is new is computed."""
    if root is None or "SPECDEC_OUTPUT_DIR" in os.environ:
        yield
        return
    os.environ["SPECDEC_OUTPUT_DIR"] = str(root)
    try:
        yield
    finally:
        os.environ.pop("SPECDEC_OUTPUT_DIR", None)


def main(argv=None) -> int:
    args = parse_args(argv)
    params = build_parameters(args)
    profile = params["profile"]  # -f / -p may override --profile; outputs follow the effective one

    notebooks = select_notebooks(args.notebooks_dir, args.only, str(profile))
    if not notebooks:
        print(f"no notebooks matching {args.only or '[0-9]*.ipynb'!r} in {args.notebooks_dir}", file=sys.stderr)
        return 2

    if not args.skip_hub_check and (problem := hub_check(str(profile))):
        print(problem, file=sys.stderr)
        return 2

    out_dir = args.output_dir
    if out_dir is None and not in_place(profile):
        out_dir = ROOT / "results" / str(profile) / "notebooks"
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    display_name = kernel_display_name(args.kernel)

    jobs = [
        (nb, nb if out_dir is None else out_dir / nb.name, notebook_parameters(nb, params, args)) for nb in notebooks
    ]
    try:
        given = {key for key, _ in args.parameter}
        if args.parameters_file:
            given |= set(yaml.safe_load(args.parameters_file.read_text()) or {})
        jobs = checked_jobs(jobs, implicit={"device"} - given)
    except (TypeError, ValueError) as err:  # before any notebook runs: a typo must not run the default experiment
        print(f"bad parameter: {err}", file=sys.stderr)
        return 2
    root = None
    if in_place(profile) and (changed := non_default(jobs, args)):  # an experiment: never over the committed files
        root = experiment_root(changed, args)
        nb_out = args.output_dir or root / "notebooks"
        nb_out.mkdir(parents=True, exist_ok=True)
        jobs = [(nb, nb_out / nb.name, p) for nb, _, p in jobs]
        print(f"parameters other than the defaults ({changed}): notebooks, results and figures go to {root}/ "
              "(the committed ones change only through make reproduce, at the defaults)", flush=True)  # fmt: skip
    run = dict(kernel=args.kernel, cwd=args.notebooks_dir, display_name=display_name)
    failed = []
    try:
        with output_redirected(root):
            if args.executor == "ray":
                reports = run_series_on_ray(jobs, run)
            else:
                reports = (execute(nb_path, out_path, nb_params, **run) for nb_path, out_path, nb_params in jobs)
            for name, status, seconds in reports:
                if not status.startswith("ok"):
                    failed.append(name)
                print(f"{name}: {status} ({seconds:.1f} s)", flush=True)
    except KeyboardInterrupt:  # Ctrl-C: the kernel is gone (shutdown_kernel="immediate"); no further notebook
        print("interrupted: the running notebook was left as it was; no further notebook was run", file=sys.stderr)
        return 130

    if failed:
        print(f"{len(failed)} of {len(notebooks)} notebook(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
