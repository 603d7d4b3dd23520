"""CoS experiments, one per notebook table, on the one harness (``specdec.harness``).

A *cell* is one model set on one task with one combination (λ, μ, temperature): an ``Experiment`` whose requests are
the task's prompts and whose methods are ``(method, γ)`` pairs of ``algorithm.decode`` (standard, parallel, SD,
Naive-CoS, CoS), the methods of a prompt back to back so that their walltime ratio sees the same machine state.
``main_table`` (notebook 20: Tables 2-4), ``sweeps`` (21: Figs. 4-6 and 8) and ``theory`` (22: Thm 3.2, the theorems
vs measurement, the APF ablation) are ``Suite``s of cells on one store standing on the committed rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from specdec import bench, results, sharding, validate
from specdec.cos import algorithm, tables
from specdec.cos import tasks as cos_tasks

# the model sets, their per-call costs and the runs tables live in ``cos.zoo``; named here too, where the runs are
from specdec.cos.zoo import MAX_MODELS, ModelSet, cost_store, store, stored_call_costs
from specdec.cos.zoo import ROW_KEY as ROW_KEY
from specdec.cos.zoo import call_costs as call_costs
from specdec.cos.zoo import collab_of as collab_of
from specdec.harness.experiment import Experiment, Method, Request, Setting, Suite
from specdec.harness.profile import Profile
from specdec.results import ResultStore
from specdec.sampling import SamplingConfig
from specdec.zoo.tasks import encode, text_digest

EMPTY = {f"{name}_{i}": "" for name in ("calls", "tokens_fed", "proposed", "accepted") for i in range(MAX_MODELS)}
# The columns of a stored row that do not depend on the machine's speed (``recompute`` must give them back).
EXACT_COLUMNS = [
    *EMPTY,
    "bonus_reused",
    "role_swaps",
    "wasted",
    "rejections",
    "stop_reason",
    "new_tokens",
    "acceptance_rate",
    "calls_per_token",
    "text",
]


def _collab_row(tokenizer, result) -> dict:
    """One stored row of a decode: ``CollabResult.summary()`` with every per-model column (``EMPTY``) and the
    decoded ``text``."""
    row = {**EMPTY, **result.summary()}
    row.pop("method")
    row["text"] = tokenizer.decode(result.output_ids)
    return row


def _decode_row(models, tokenizer, prompt_ids, combine, method, gamma, default, max_new_tokens, sampling, seed):
    """``_collab_row`` of ``algorithm.decode`` of one prompt (``gamma`` 0 means 1: methods without proposals)."""
    res = algorithm.decode(
        models,
        prompt_ids,
        combine,
        method,
        gamma=max(1, gamma),
        default=default,
        max_new_tokens=max_new_tokens,
        sampling=sampling,
        seed=seed,
    )
    return _collab_row(tokenizer, res)


def requests(tokenizer, task: str, rows) -> list[Request]:
    """The requests of a task's rows (``tasks.load_task``): key columns ``task``, ``prompt`` (the row id) and
    ``request`` (``text_digest`` of its text); ``data`` the row (its reference answer)."""
    return [
        Request(
            id=r["id"],
            prompt_ids=encode(tokenizer, r["prompt"]),
            key=dict(task=task, prompt=r["id"], request=text_digest(r["prompt"])),
            data=r,
        )
        for r in rows
    ]


def cell(
    store: ResultStore,
    models: ModelSet,
    *,
    task: str,
    rows,
    methods,
    label: str,
    kind: str | None = None,
    temperature: float = 0.0,
    lam: float = 0.5,
    mu: float = 0.1,
    max_new_tokens: int = 64,
    seed: int = 0,
    default: int | None = None,
) -> Experiment:
    """Every ``(method, gamma)`` of ``methods`` on every prompt of ``rows``: one stored row per run, set ``label``.

    ``temperature`` 0 decodes ``argmax r``; otherwise tokens are sampled from ``r`` (CD uses ``T = temperature``,
    WE its members at T = 1). kind: the combination (default the set's own). default: the proposer (``None``:
    ``algorithm.default_proposer``). ``standard`` (γ 0), where present, is the reference the others' texts are
    compared with (``Experiment.frame``'s ``lossless``; greedy cells only)."""
    kind = kind or models.kind
    default = algorithm.default_proposer(kind, len(models.models), lam) if default is None else default
    combine = algorithm.make_combination(kind, len(models.models), lam, mu, temperature if kind == "cd" else 1.0)
    setting = Setting(max_new_tokens, SamplingConfig(temperature=0.0 if temperature == 0 else 1.0), seed)
    reqs = requests(models.tokenizer, task, rows)

    def method(name: str, gamma: int) -> Method:
        def decode(request: Request, setting: Setting):
            return algorithm.decode(
                models.models,
                request.prompt_ids,
                combine,
                name,
                gamma=max(1, gamma),
                default=default,
                max_new_tokens=setting.max_new_tokens,
                sampling=setting.sampling,
                seed=setting.seed,
            )

        return Method(decode=decode, params=dict(method=name, gamma=gamma))

    fixed = dict(set=label, weights=models.weights, task=task, temperature=temperature, lam=lam, mu=mu)
    fixed |= dict(max_new_tokens=max_new_tokens, seed=seed, device=models.device_type)
    fixed |= dict(train_seed=models.train_seed) if "train_seed" in store.key else {}  # a seeds table (``cos.seeds``)
    return Experiment(
        store,
        reqs,
        {f"{m}/{g}": method(m, g) for m, g in methods},
        fixed=fixed,
        setting=setting,
        reference="standard/0" if ("standard", 0) in methods else None,
        row=lambda request, result: _collab_row(models.tokenizer, result),
        output_column="text",
        lossless_column=None,  # the committed tables have no such column; ``frame`` marks it
        warm_up=lambda: algorithm.decode(models.models, reqs[0].prompt_ids, combine, "cos", gamma=2, max_new_tokens=4),
        provenance=results.model_provenance(**{f"model_{i}": m for i, m in enumerate(models.models)}),
        desc=f"{label}/{task}",
    )


def grid_methods(gammas) -> list[tuple[str, int]]:
    """The methods of the main grid: standard, parallel, and SD and CoS at every γ (each an integer >= 1)."""
    if isinstance(gammas, (str, bytes)) or not hasattr(gammas, "__iter__"):
        raise TypeError(f"gammas must be a list of draft lengths (integers >= 1), got {gammas!r}")
    gammas = [validate.integer("gamma", g, minimum=1, hint="draft tokens per block") for g in gammas]
    return [("standard", 0), ("parallel", 0)] + [(m, g) for m in ("sd", "cos") for g in gammas]


def main_table(
    profile,
    *,
    configs: list[dict],
    tasks,
    n_prompts: int,
    gammas,
    max_new_tokens: int,
    lam: float = 0.5,
    mu: float = 0.1,
    seed: int = 0,
    task_rows: dict | None = None,
    runs: ResultStore | None = None,
    costs: ResultStore | None = None,
    train_seed: int = 0,
) -> Suite:
    """Tables 2-4 (notebook 20): every method on every task for each ``{"set", "temperature"}`` config.

    ``suite.context["costs"]``: ``{set: per-model call costs}`` (seconds of one one-token call, measured once per
    set and device and stored). task_rows: ``{task: rows}`` to use instead of ``tasks.load_task`` (a machine without
    the sources). runs / costs: the stores (default ``store(profile, "cos_main")`` and ``cost_store(profile)``).
    train_seed: the sets' training seed (``ModelSet.load``)."""
    profile = Profile.load(profile)
    cos_tasks.check_grid(profile, configs, tasks, task_rows, n_prompts, max_new_tokens)
    grid_methods(gammas)  # its gammas checked before any cost is measured and stored
    profile.use_threads()
    runs = runs or store(profile, "cos_main")
    costs = costs or cost_store(profile)
    suite = Suite(runs, costs={}, configs=configs, tasks=list(tasks))
    sets = {}
    for cfg in configs:
        name = cfg["set"]
        if name not in sets:
            sets[name] = ModelSet.load(profile, name, train_seed)
            suite.context["costs"][name] = stored_call_costs(costs, name, sets[name].models)
        for task in tasks:
            rows = (task_rows or {}).get(task) or cos_tasks.load_task(task, n_prompts, profile=profile.name)
            point = dict(temperature=cfg.get("temperature", 0.0), lam=lam, mu=mu)
            suite.add(
                cell(
                    runs,
                    sets[name],
                    task=task,
                    rows=rows,
                    methods=grid_methods(gammas),
                    label=name,
                    **point,
                    max_new_tokens=max_new_tokens,
                    seed=seed,
                )
            )
    return suite


def main_grid(store: ResultStore, cost_store: ResultStore, *, profile, device=None, executor=None, shards=2, **grid):
    """``main_table``'s grid run into ``store``, here (``executor`` None) or split into ``shards`` shards of whole
    prompts (every method of a prompt on one device) run by ``sharding.run_sharded`` (``"serial"`` or ``"ray"``;
    ``_GridSetup`` loads the models in each worker). Same rows either way, except the walltime columns. Returns
    ``{set: per-model call costs}``, measured here, on ``device``."""
    suite = main_table(Profile.load(profile, device), runs=store, costs=cost_store, **grid)
    if executor is None:
        suite.run()
        return suite.context["costs"]
    keys = suite.keys()
    store.want(keys)  # the shards compute them; the rows are this run's (``store.frame(requested=True)``)
    prompts = {}
    for e in suite.experiments:
        prompts.setdefault(e.fixed["task"], {}).update({r.id: r.data["prompt"] for r in e.requests})
    by = [k for k in ROW_KEY if k not in ("method", "gamma")]
    name = profile if isinstance(profile, str) else profile.name
    sharding.run_sharded(store, keys, _GridSetup(name, device, prompts), shards=shards, executor=executor, by=by)
    return suite.context["costs"]


@dataclass
class _GridSetup:
    """The ``setup`` of ``main_grid``'s shards (``sharding.run_sharded``): called in a shard's worker, returns
    ``compute(**key)``, which loads a set's models on first use (on ``device``; ``None``: the profile's) and
    decodes one key as ``cell`` does. ``prompts``: ``{task: {prompt id: prompt text}}``."""

    profile: str
    device: str | None
    prompts: dict

    def __call__(self, store):
        profile = Profile.load(self.profile, self.device)
        profile.use_threads()
        loaded, warm = {}, set()

        def compute(set, task, method, gamma, temperature, lam, mu, max_new_tokens, seed, prompt, **_):
            if set not in loaded:
                loaded[set] = ModelSet.load(profile, set)
            ms = loaded[set]
            store.provenance.update(results.model_provenance(**{f"model_{i}": m for i, m in enumerate(ms.models)}))
            combine = algorithm.make_combination(
                ms.kind, len(ms.models), lam, mu, temperature if ms.kind == "cd" else 1
            )
            sampling = SamplingConfig(temperature=0.0 if temperature == 0 else 1.0)
            ids = encode(ms.tokenizer, self.prompts[task][prompt])
            if (set, task) not in warm:
                algorithm.decode(ms.models, ids, combine, "cos", gamma=2, max_new_tokens=4)  # one-time costs first
                warm.add((set, task))
            default = algorithm.default_proposer(ms.kind, len(ms.models), lam)
            return _decode_row(
                ms.models, ms.tokenizer, ids, combine, method, gamma, default, max_new_tokens, sampling, seed
            )

        return compute


def sweeps(
    profile,
    *,
    tasks,
    n_prompts: int,
    max_new_tokens: int,
    lams,
    mus,
    gammas,
    mu_gammas,
    tradeoff_lams,
    tradeoff_tasks,
    tradeoff_prompts: int,
    tradeoff_gamma: int,
    tradeoff_max_new_tokens: int,
    seed: int = 0,
    runs: ResultStore | None = None,
    train_seed: int = 0,
) -> Suite:
    """Notebook 21's sweeps, in the order they must run: the γ sweep (Fig. 6) first, since its WE λ = 0.5 and CD
    μ = 0.1 points are also points of the λ sweep (Fig. 4) and the μ sweep (Fig. 5), and a speedup is a per-prompt
    ratio of walltimes measured back to back; then the λ sweep, the μ sweep and the quality trade-off (Fig. 8: the CD
    pair combined as WE, ``cd+we``, model 0 proposing). ``context``: ``rows`` (``{task: rows}``, with answers) and
    ``costs`` (``{set: per-model call costs}``, for Thm 3.6's γ trend). runs / train_seed: as ``main_table``'s."""
    profile = Profile.load(profile)
    profile.use_threads()
    runs = runs or store(profile, "cos_sweeps")
    rows = {
        t: cos_tasks.load_task(t, max(n_prompts, tradeoff_prompts), profile=profile.name)
        for t in {*tasks, *tradeoff_tasks}
    }
    sets = {name: ModelSet.load(profile, name, train_seed) for name in ("we", "cd")}
    costs = {name: stored_call_costs(cost_store(profile), name, s.models) for name, s in sets.items()}
    suite = Suite(runs, rows=rows, costs=costs)

    def add(name, task, methods, n=n_prompts, new_tokens=max_new_tokens, label=None, **point):
        suite.add(
            cell(
                runs,
                sets[name],
                task=task,
                rows=rows[task][:n],
                methods=methods,
                label=label or name,
                max_new_tokens=new_tokens,
                seed=seed,
                **point,
            )
        )

    for task in tasks:
        add("we", task, [("standard", 0)] + [("cos", g) for g in gammas], lam=0.5, temperature=1.0)
        add("cd", task, [("standard", 0)] + [("cos", g) for g in gammas], mu=0.1, temperature=0.0)
    for task in tasks:
        for lam in lams:
            add("we", task, [("standard", 0), ("cos", 1)], lam=lam, temperature=1.0)
    for task in tasks:
        for mu in mus:
            add("cd", task, [("standard", 0)] + [("cos", g) for g in mu_gammas], mu=mu, temperature=0.0)
    for task in tradeoff_tasks:
        for lam in tradeoff_lams:
            add(
                "cd",
                task,
                [("standard", 0), ("cos", tradeoff_gamma)],
                n=tradeoff_prompts,
                label="cd+we",
                new_tokens=tradeoff_max_new_tokens,
                kind="we",
                lam=lam,
                temperature=0.0,
                default=0,
            )
    return suite


def theory(
    profile,
    *,
    tasks,
    n_prompts: int,
    max_new_tokens: int,
    lams,
    theory_gammas,
    seed: int = 0,
    runs=None,
    train_seed: int = 0,
) -> Suite:
    """Notebook 22's runs: Naive-CoS with either WE model proposing at every λ (Thm 3.2, sets ``we/proposer<k>``),
    then standard, Naive-CoS and CoS at every γ of ``theory_gammas`` (Thms 3.1 / 3.6 and the APF ablation).
    ``context``: ``rows``, ``sets`` (``{name: ModelSet}``) and ``costs``. runs / train_seed: as ``main_table``'s."""
    profile = Profile.load(profile)
    profile.use_threads()
    runs = runs or store(profile, "cos_theory")
    rows = {t: cos_tasks.load_task(t, n_prompts, profile=profile.name) for t in tasks}
    sets = {name: ModelSet.load(profile, name, train_seed) for name in ("we", "cd")}
    costs = {name: stored_call_costs(cost_store(profile), name, s.models) for name, s in sets.items()}
    suite = Suite(runs, rows=rows, sets=sets, costs=costs)
    common = dict(max_new_tokens=max_new_tokens, seed=seed)
    for task in tasks:
        for lam in lams:
            for k in (0, 1):
                suite.add(
                    cell(
                        runs,
                        sets["we"],
                        task=task,
                        rows=rows[task],
                        methods=[("naive", 1)],
                        label=f"we/proposer{k}",
                        lam=lam,
                        temperature=1.0,
                        default=k,
                        **common,
                    )
                )
    methods = [("standard", 0)] + [(m, g) for m in ("naive", "cos") for g in theory_gammas]
    for task in tasks:
        suite.add(
            cell(
                runs,
                sets["we"],
                task=task,
                rows=rows[task],
                methods=methods,
                label="we",
                lam=0.5,
                temperature=1.0,
                **common,
            )
        )
        suite.add(
            cell(runs, sets["cd"], task=task, rows=rows[task], methods=methods, label="cd", temperature=0.0, **common)
        )
    return suite


def recompute(keys: list[dict], *, profile="tiny", n_prompts: int = 64) -> pd.DataFrame:
    """Decode the stored CoS rows of ``keys`` (rows of ``ROW_KEY``, e.g. a sample of a committed table) again and
    return the fresh rows (key columns + ``_decode_row``'s) in the order of ``keys``, under today's weights and
    prompt text (a row made with other weights, or for another text, comes back stale).

    The set label says which models, combination and proposer (``collab_of``); a plain set's proposer follows the
    key's λ. Prompts are looked up by id among the first ``n_prompts`` of each task. A key with ``train_seed`` (a
    ``cos.seeds`` table) decodes with that seed's zoo. The tests run this in a subprocess with another CPU vector
    width and demand the committed rows back (all but the walltime columns)."""
    torch.set_num_threads(1)  # as the notebooks on CPU: the tiny models' rows do not depend on it
    loaded, prompts, out = {}, {}, []
    for key in keys:
        name, kind, proposer = collab_of(str(key["set"]), profile)
        at = (name, str(key["device"]), int(key.get("train_seed", 0)))
        if at not in loaded:
            loaded[at] = ModelSet.load(Profile.load(profile, at[1]), name, at[2])
        ms = loaded[at]
        kind = kind or ms.kind
        lam, mu, temperature = float(key["lam"]), float(key["mu"]), float(key["temperature"])
        proposer = algorithm.default_proposer(kind, len(ms.models), lam) if proposer is None else proposer
        task = str(key["task"])
        if task not in prompts:
            rows = cos_tasks.load_task(task, n_prompts, profile=Profile.load(profile).name)
            prompts[task] = {r["id"]: r["prompt"] for r in rows}
        combine = algorithm.make_combination(kind, len(ms.models), lam, mu, temperature if kind == "cd" else 1.0)
        sampling = SamplingConfig(temperature=0.0 if temperature == 0 else 1.0)
        text = prompts[task][str(key["prompt"])]
        key = {**key, "weights": ms.weights, "request": text_digest(text)}
        ids, method, gamma = encode(ms.tokenizer, text), str(key["method"]), int(key["gamma"])
        new_tokens, seed = int(key["max_new_tokens"]), int(key["seed"])
        row = _decode_row(ms.models, ms.tokenizer, ids, combine, method, gamma, proposer, new_tokens, sampling, seed)
        out.append({**{k: key[k] for k in ROW_KEY + (["train_seed"] if "train_seed" in key else [])}, **row})
    return pd.DataFrame(out)


def main(argv=None):
    """Run notebook 20's grid outside Jupyter (e.g. on a GPU box) and write the best-γ speedup table.

    ``--executor ray --shards 8``: the grid's prompts split over 8 Ray tasks, one GPU each."""
    import argparse
    import json
    import pathlib
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--n-prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--out", type=pathlib.Path, required=True, help="CSV to write")
    parser.add_argument("--rows", type=pathlib.Path, help="JSON {task: rows} written by --dump-rows")
    parser.add_argument("--dump-rows", action="store_true", help="write the task rows to --out and stop")
    parser.add_argument("--executor", choices=["serial", "ray"], help="shard the grid (specdec.sharding)")
    parser.add_argument("--shards", type=int, default=2, help="with --executor: shards (e.g. one per GPU)")
    parser.add_argument("--results", type=pathlib.Path, help="results root to keep (default: a temporary one)")
    parser.add_argument("--tasks", nargs="+", default=["humaneval", "gsm8k", "mmlu", "cnndm"], help="part of the grid")
    args = parser.parse_args(argv)
    tasks = args.tasks
    if args.dump_rows:
        load = lambda t: cos_tasks.load_task(t, args.n_prompts, profile=args.profile)  # noqa: E731
        rows = {t: [{k: r[k] for k in ("id", "prompt", "reference")} for r in load(t)] for t in tasks}
        args.out.write_text(json.dumps(rows))
        return
    task_rows = json.loads(args.rows.read_text()) if args.rows else None
    configs = [
        {"set": "we", "temperature": 1.0},
        {"set": "we3", "temperature": 1.0},
        {"set": "cd", "temperature": 0.0},
        {"set": "cd", "temperature": 1.0},
    ]
    root = args.results or pathlib.Path(tempfile.mkdtemp())
    runs = ResultStore(args.profile, "cos_main", ROW_KEY, root=root)
    costs = ResultStore(args.profile, "cos_call_costs", ["set", "device"], root=root)
    grid = dict(configs=configs, tasks=tasks, n_prompts=args.n_prompts, gammas=[1, 5], task_rows=task_rows)
    costs = main_grid(
        runs,
        costs,
        profile=args.profile,
        device=args.device,
        max_new_tokens=args.max_new_tokens,
        executor=args.executor,
        shards=args.shards,
        **grid,
    )
    best = tables.best_over_gamma(tables.speedup_table(runs.frame(), costs=costs))
    best = best.drop(columns="device")  # the key's device type ("cuda"), replaced by the GPU's name
    best.insert(0, "device", bench.describe_device(args.device))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    best.to_csv(args.out, index=False)
    print(best.pivot_table(index=["set", "temperature", "method"], columns="task", values="speedup").round(2))


if __name__ == "__main__":
    main()
