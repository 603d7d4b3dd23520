"""One experiment harness: requests x methods -> tidy, keyed, resumable rows (Spec-Bench's ``run_eval`` idea).

The harness is written once and each method is passed in: ``Experiment(store, requests, methods, fixed)``.

- A ``Request`` is one prompt, encoded: ``prompt_ids`` ``LongTensor[L]``, the extra prefill inputs of each model
  (``pixel_values`` of a LLaVA request, the images a captioner reads), and ``key``: the key columns it adds (its id,
  the digest of what it was built from, its task or turn).
- A ``Method`` decodes one request under a ``Setting`` and names the key columns it adds (``params``: method name,
  γ, the weights it ran with ...). ``speculative(target, factory)`` is a method on the one engine
  (``specdec.engine.generate``; ``specdec.batching.generate_batch`` for the batch path) with a drafter made per
  request by a ``DrafterFactory``; ``plain(target)`` is the plain-decoding reference. A method that is its own
  decode loop (CoS's role swaps) passes any ``Decode`` callable.
- The reference method (default ``"plain"``) runs once per request, first; every other row of the request is marked
  ``lossless`` against its stored output (greedy decoding: identical tokens; under sampling the column is empty).
- A row's key is ``fixed`` (weights digests, sampling, seed, max tokens, device ...) + the request's + the method's
  columns, in the order of the store's key. Keys already stored (the store's own table or its committed base
  layer, ``specdec.results.ResultStore``) are read, never recomputed; ``recompute`` decodes stored keys again for
  the committed-results test (``check`` samples, recomputes and compares).
- Every row records per model its calls, tokens fed and seconds (``harness.counts``: ``model_counts``; ``counts``
  sums them, ``priced_speedup`` prices them with ``specdec.costs``).
- A ``Suite`` runs several experiments on one store in order (model sets x tasks, a sweep's points, several
  targets); an entry may be a stage built when reached (a second turn made of the first turn's stored answers).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch

from specdec import batching, engine, results
from specdec.harness.counts import model_counts
from specdec.sampling import SamplingConfig


@dataclass(frozen=True)
class Request:
    """One prompt of an experiment.

    ``prompt_ids``: ``LongTensor[L]``. ``key``: the key columns this request adds to its rows (e.g.
    ``{"task": "gsm8k", "prompt": "gsm8k-3", "request": <text digest>}``). ``target_inputs`` / ``draft_inputs``:
    extra prefill inputs of each model (``pixel_values``; a drafter that reads the images gets them here).
    ``data``: anything else a method or a row needs (the images themselves, a reference answer, the first turn of
    a conversation). ``seed``: this request's sampling seed, where it is not the setting's (a seed derived from the
    run's seed and the prompt's id, so a stored row's output does not depend on which other prompts ran)."""

    id: str
    prompt_ids: torch.Tensor
    key: Mapping[str, Any] = field(default_factory=dict)
    target_inputs: Mapping[str, Any] = field(default_factory=dict)
    draft_inputs: Mapping[str, Any] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None


@dataclass(frozen=True)
class Setting:
    """How every method of an experiment decodes: ``max_new_tokens``, ``sampling`` (temperature 0 = greedy), the
    ``seed`` of the sampling generators and the stop tokens (``None``: the target's own)."""

    max_new_tokens: int = 64
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    seed: int = 0
    eos_token_id: int | list[int] | None = None

    @property
    def greedy(self) -> bool:
        return self.sampling.greedy

    def for_request(self, request: Request) -> Setting:
        """This setting with the request's own seed, where it has one."""
        return self if request.seed is None else dataclasses.replace(self, seed=request.seed)

    def columns(self) -> dict:
        """The key columns this setting implies (``temperature``, ``max_new_tokens``, ``seed``)."""
        return dict(temperature=self.sampling.temperature, max_new_tokens=self.max_new_tokens, seed=self.seed)


@runtime_checkable
class Decoded(Protocol):
    """What a method returns: the new tokens and a flat dict of scalar statistics (``engine.GenerationResult``,
    ``cos.algorithm.CollabResult``)."""

    @property
    def output_ids(self) -> list[int]: ...  # a field or a read-only property

    def summary(self) -> dict: ...


class DrafterFactory(Protocol):
    """Makes the drafter of one request: a ``specdec.drafters.Drafter``, a draft model (wrapped by the engine in a
    ``ModelDrafter``) or ``None`` (plain decoding). Called once per decoded request, so a drafter with state (caches,
    an ensemble's history) starts fresh; a factory may read ``request.data`` (a caption drafter's images)."""

    def __call__(self, request: Request | None) -> Any: ...  # None: one drafter for a whole batch


class Decode(Protocol):
    """Decodes one request: ``decode(request, setting) -> Decoded``."""

    def __call__(self, request: Request, setting: Setting) -> Decoded: ...


@dataclass(frozen=True)
class Method:
    """A decode function and the key columns it adds to its rows (``params``, e.g. ``{"method": "sd", "gamma":
    5}``). ``decode_batch(requests, setting) -> [Decoded]``, where given, decodes several requests in one batch
    (``Experiment(batch_size=...)``); ``row(request, result) -> dict`` adds method-specific columns (a drafter's
    weight log; every row of a table has the same columns, so the other methods of the table write them too,
    empty where they mean nothing)."""

    decode: Decode
    params: Mapping[str, Any]
    decode_batch: Callable[[Sequence[Request], Setting], Sequence[Decoded]] | None = None
    row: Callable[[Request, Decoded], dict] | None = None


PER_REQUEST = "per request"  # ``speculative(batched=PER_REQUEST)``: a batch with each request's own drafter


def speculative(
    target, factory: DrafterFactory | None, *, gamma: int = 5, verifier=None, batched: bool | str = False, **params
) -> Method:
    """A method on the one engine: ``engine.generate(target, request.prompt_ids, factory(request), gamma=gamma,
    ...)`` with the request's ``target_inputs`` / ``draft_inputs``. ``factory=None``: plain decoding.
    ``verifier``: the engine's (default: greedy / stochastic verification). ``batched``: the method may also run
    ``batching.generate_batch``: ``True`` over text-only requests with one drafter for the batch (``factory(None)``);
    ``PER_REQUEST`` with each request's own drafter ``factory(request)`` and inputs (TABED's LLaVA requests: drafting
    rows, images, adaptive weights). Requests whose target inputs ``generate_batch`` does not take
    (``batching.batchable``: LLaVA-NeXT tiles) decode one at a time. ``params``: its key columns (``method`` and
    ``gamma`` by default)."""
    params = {"gamma": gamma if factory is not None else 0, **params}

    def decode(request: Request, setting: Setting) -> Decoded:
        drafter = factory(request) if factory is not None else None
        return engine.generate(
            target,
            request.prompt_ids,
            drafter,
            gamma=gamma,
            max_new_tokens=setting.max_new_tokens,
            sampling=setting.sampling,
            eos_token_id=setting.eos_token_id,
            seed=setting.seed,
            verifier=verifier,
            target_inputs=dict(request.target_inputs),
            draft_inputs=dict(request.draft_inputs),
        )

    def decode_batch(requests: Sequence[Request], setting: Setting) -> Sequence[Decoded]:
        per_request = batched == PER_REQUEST
        inputs = any(r.target_inputs or r.draft_inputs for r in requests)
        if (inputs and not per_request) or not all(batching.batchable(r.target_inputs) for r in requests):
            return [decode(r, setting.for_request(r)) for r in requests]  # one request at a time
        if factory is None:
            drafter = None
        else:
            drafter = [factory(r) for r in requests] if per_request else factory(None)
        out = batching.generate_batch(
            target,
            [r.prompt_ids for r in requests],
            drafter,
            gamma=gamma,
            max_new_tokens=setting.max_new_tokens,
            sampling=setting.sampling,
            eos_token_id=setting.eos_token_id,
            seeds=[setting.for_request(r).seed for r in requests],  # each row as ``decode`` would decode it
            verifier=verifier,
            target_inputs=[dict(r.target_inputs) for r in requests] if per_request else None,
            draft_inputs=[dict(r.draft_inputs) for r in requests] if per_request and drafter else None,
        )
        return out.rows

    return Method(decode=decode, params=params, decode_batch=decode_batch if batched else None)


def plain(target, **params) -> Method:
    """The plain-decoding reference (one target call per token): ``speculative(target, None)``."""
    return speculative(target, None, **params)


def default_row(request: Request, result: Decoded) -> dict:
    """A stored row: the result's scalar statistics, its counts per model (``calls_<model>``,
    ``tokens_fed_<model>``, ``seconds_<model>``) and its tokens (``output``, JSON)."""
    row = {k: v for k, v in result.summary().items() if not isinstance(v, (list, dict))}
    for model, counts in model_counts(result).items():
        row.update({f"{name}_{model}": value for name, value in counts.items()})
    row["output"] = json.dumps(list(result.output_ids))
    return row


# Key columns that name *what* ran (weights and prompt-text digests) rather than *which* run: a recompute matches a
# stored key to today's run without them and writes today's, so a retrained model or an edited prompt shows as stale.
DIGESTS = ("weights", "model_weights", "request")


class Experiment:
    """Requests x methods -> one stored row per (request, method), the methods of a request back to back (their
    walltime ratio then sees the same machine state; with ``batch_size > 1``, method by method instead).

    store: a ``ResultStore`` (usually on the committed base layer) whose key is every key column. requests:
    ``Request``s. methods: ``{name: Method}``; ``reference`` names the one every other is marked lossless against
    (it runs first for each request; ``None``: no marking). fixed: the key columns shared by every row. setting:
    how every method decodes. row: ``row(request, result) -> dict`` (default ``default_row``). output_column: the
    column whose equality with the reference's means lossless. lossless_column: where the mark is stored (``None``:
    not stored, as in tables written before the harness; ``frame`` still adds it, ``mark_lossless``).
    method_column: the key column that names the method (default ``method``). warm_up: called once before the
    first decode of a run (the first calls of a model pay one-time costs that would bias the first method).
    provenance: what ``store.provenance`` records with each append (device, dtype, model ids). batch_size > 1:
    methods with ``decode_batch`` decode that many missing requests at once; each append's provenance line then names
    its ``batch_size`` (1: decoded alone). walltime: the row columns that time one request decoded alone (seconds,
    tokens/s): a row decoded in a batch of more than one stores them empty (its other columns are its batch-1 run's),
    so a table of walltime reads only rows decoded alone.
    """

    def __init__(
        self,
        store: results.ResultStore,
        requests: Sequence[Request],
        methods: Mapping[str, Method],
        *,
        fixed: Mapping[str, Any] | None = None,
        setting: Setting | None = None,
        reference: str | None = "plain",
        row: Callable[[Request, Decoded], dict] = default_row,
        output_column: str = "output",
        lossless_column: str | None = "lossless",
        method_column: str = "method",
        warm_up: Callable[[], None] | None = None,
        provenance: Mapping[str, Any] | None = None,
        batch_size: int = 1,
        walltime: Sequence[str] = (),
        desc: str = "",
    ):
        if reference is not None and reference not in methods:
            raise ValueError(f"the reference method {reference!r} is not among the methods {sorted(methods)}")
        self.store = store
        self.context: dict[str, Any] = {}  # what a notebook reads beside the rows (models, prompts, device name)
        self.requests = list(requests)
        self.methods = dict(methods)
        self.fixed = dict(fixed or {})
        self.setting = setting or Setting()
        self.reference = reference
        self.row = row
        self.output_column = output_column
        self.lossless_column = lossless_column
        self.method_column = method_column
        self.warm_up = warm_up
        self.provenance = dict(provenance or {})
        self.batch_size = batch_size
        self.walltime = tuple(walltime)
        self.desc = desc or store.table
        self._check_keys()

    # ----------------------------------------------------------------------------------------------- keys
    def order(self) -> list[str]:
        """Method names in run order: the reference first."""
        rest = [m for m in self.methods if m != self.reference]
        return ([self.reference] if self.reference else []) + rest

    def key(self, request: Request, method: str) -> dict:
        """The stored key of one run, columns in the store's key order."""
        merged = {**self.fixed, **request.key, self.method_column: method, **self.methods[method].params}
        return {k: merged[k] for k in self.store.key}

    def keys(self) -> list[dict]:
        """Every key of the experiment: per request, the reference's, then every method's."""
        return [self.key(r, m) for r in self.requests for m in self.order()]

    def _check_keys(self) -> None:
        """Every key column has a value; two runs never share a key (a parameter that changes a row but is not in
        the key would make a rerun return the other run's row)."""
        seen: dict[tuple, tuple[str, str]] = {}
        for r in self.requests:
            for m in self.methods:
                merged = {**self.fixed, **r.key, self.method_column: m, **self.methods[m].params}
                missing = [k for k in self.store.key if k not in merged]
                if missing:
                    raise ValueError(f"run ({r.id}, {m}) has no value for key columns {missing} of {self.store.table}")
                k = self.store.key_of(merged)
                if k in seen:
                    raise ValueError(f"runs {seen[k]} and ({r.id}, {m}) have the same key {k}: add what differs to it")
                seen[k] = (r.id, m)

    # ------------------------------------------------------------------------------------------------ run
    def run(self, requested: bool = True):
        """Compute every key not stored yet (resumable; a progress bar over the missing ones) and return the
        experiment's rows as a DataFrame (``requested``: only this experiment's keys, whatever else the table
        holds), with ``lossless`` marked (``mark_lossless``)."""
        from tqdm.auto import tqdm

        self.store.want(self.keys())
        self.store.provenance.update(self.provenance)
        todo = [(r, m) for r in self.requests for m in self.order() if not self.store.done(**self.key(r, m))]
        if self.batch_size > 1:  # batches of one method: every reference first, then each method over the requests
            todo.sort(key=lambda run: self.order().index(run[1]))
        if todo and self.warm_up is not None:
            self.warm_up()
        bar = tqdm(total=len(todo), desc=self.desc, disable=not todo)
        while todo:
            batch = self._next_batch(todo)
            todo = todo[len(batch) :]
            if self.batch_size > 1:  # which rows were decoded together (their walltime columns are empty)
                self.store.provenance["batch_size"] = len(batch)
            self.store.append(self._decode(batch))
            bar.update(len(batch))
        self.store.provenance.pop("batch_size", None)
        bar.close()
        return self.frame(requested)

    def _next_batch(self, todo):
        """The next runs to decode together: up to ``batch_size`` of one batchable method, else one run. A reference
        run is never batched with its own request's runs (they need its output)."""
        request, method = todo[0]
        if self.batch_size <= 1 or self.methods[method].decode_batch is None:
            return todo[:1]
        batch = []
        for r, m in todo:
            if m != method or len(batch) == self.batch_size:
                break
            batch.append((r, m))
        return batch

    def _decode(self, batch) -> list[dict]:
        method = batch[0][1]
        spec = self.methods[method]
        requests = [r for r, _ in batch]
        if len(batch) > 1 and spec.decode_batch is not None:  # ``_batch`` forms batches only for such methods
            decoded = list(spec.decode_batch(requests, self.setting))
        else:
            decoded = [spec.decode(requests[0], self.setting.for_request(requests[0]))]
        rows = [self._row(r, method, res) for r, res in zip(requests, decoded)]
        if len(batch) > 1:  # a row's walltime means its request decoded alone: a batch's share is not that
            rows = [{**row, **dict.fromkeys(self.walltime)} for row in rows]
        return rows

    def _row(self, request: Request, method: str, result: Decoded, reference=None) -> dict:
        """The stored row of one run: its key, ``row``'s columns, the method's own and the lossless mark.
        ``reference``: the reference's output cell when it is at hand (a recompute); else it is read from the store."""
        row = {**self.key(request, method), **self.row(request, result)}
        spec = self.methods[method]
        if spec.row is not None:
            row.update(spec.row(request, result))
        if self.lossless_column and self.reference:
            row[self.lossless_column] = self._lossless(request, method, row.get(self.output_column), reference)
        return row

    def _lossless(self, request: Request, method: str, output, reference=None) -> bool | None:
        """Whether ``output`` equals the reference's output of ``request`` (``None`` under sampling)."""
        if not self.setting.greedy:
            return None
        if method == self.reference or self.reference is None:
            return True
        if reference is None:
            reference = self.store.get(**self.key(request, self.reference))[self.output_column]
        return results.format_value(output) == results.format_value(reference)

    # --------------------------------------------------------------------------------------------- reading
    def frame(self, requested: bool = True):
        """The stored rows of this experiment (``requested``) or the whole table, ``lossless`` marked."""
        return self.mark_lossless(self.store.frame(requested=requested))

    def mark_lossless(self, frame):
        """``frame`` with a ``lossless`` column where it has none: each row's ``output_column`` compared with its
        reference row's (same key but the method's columns; greedy rows only, else missing)."""
        name = self.lossless_column or "lossless"
        if self.reference is None or name in frame or self.output_column not in frame or frame.empty:
            return frame
        method_cols = [self.method_column, *self.methods[self.reference].params]
        cell = [k for k in self.store.key if k not in method_cols]
        name_of_ref = self.methods[self.reference].params.get(self.method_column, self.reference)
        ref = frame[frame[self.method_column].astype(str) == str(name_of_ref)].set_index(cell)[self.output_column]
        ref = ref[~ref.index.duplicated()]
        outputs = frame.set_index(cell)[self.output_column]
        same = outputs.astype(str).values == ref.reindex(outputs.index).astype(str).values
        frame = frame.copy()
        frame[name] = same if self.setting.greedy else None
        return frame

    # ----------------------------------------------------------------------------------- committed results
    def recompute(self, keys: Sequence[Mapping[str, Any]], digests: Sequence[str] = DIGESTS):
        """Decode the runs of ``keys`` (stored keys, e.g. a sample of a committed table) again, ignoring the store;
        fresh rows (today's keys) in the order of ``keys``. A key is matched to a run of this experiment on every
        column but ``digests``: a row stored with other weights or for another prompt text comes back under
        today's digests, so ``results.stale_rows`` reports it."""
        index = self._runs(digests)
        out, references = [], {}  # a request's plain decoding, decoded once for every sampled method of it
        for key in keys:
            wanted = self._match(key, digests)
            if wanted not in index:
                raise KeyError(f"{dict(key)} is no run of this experiment")
            request, method = index[wanted]
            result = self.methods[method].decode(request, self.setting.for_request(request))
            reference = None
            if self.lossless_column and self.reference and self.setting.greedy and method != self.reference:
                if id(request) not in references:
                    plain = self.methods[self.reference].decode(request, self.setting.for_request(request))
                    references[id(request)] = self.row(request, plain).get(self.output_column)
                reference = references[id(request)]
            out.append(self._row(request, method, result, reference))
        import pandas as pd

        return pd.DataFrame(out)

    def check(self, by: Sequence[str], columns: Sequence[str], n: int = 1, seed: int = 0) -> list[str]:
        """The committed-results test of this experiment: a seeded sample (``results.stratified_sample``, ``n`` rows
        of every group of ``by``) of its stored rows, recomputed and compared on ``columns`` (``results.stale_rows``;
        empty: none is stale)."""
        frame = self.store.frame(requested=False)
        runs = self._runs()
        mine = [self._match(k) in runs for k in frame[self.store.key].to_dict("records")]
        sample = results.stratified_sample(frame[mine], list(by), n=n, seed=seed)
        fresh = self.recompute(sample[self.store.key].to_dict("records"))
        sample, fresh = as_stored(sample, self.store.key), as_stored(fresh, self.store.key)
        return results.stale_rows(sample, fresh, self.store.key, list(columns))

    def _match(self, key: Mapping[str, Any], digests: Sequence[str] = DIGESTS) -> tuple:
        """A key without its ``digests`` columns, as stored text: what identifies a run across retrains."""
        return tuple(results.key_text(key[k]) for k in self.store.key if k not in digests)

    def _runs(self, digests: Sequence[str] = DIGESTS) -> dict[tuple, tuple[Request, str]]:
        """``{_match(key): (request, method)}`` of every run of this experiment."""
        return {self._match(self.key(r, m), digests): (r, m) for r in self.requests for m in self.methods}


def as_stored(frame, columns: Sequence[str]):
    """``frame`` with ``columns`` as the text a store writes for them (``results.key_text``: 0.0 -> "0")."""
    return frame.assign(**{k: frame[k].map(results.key_text) for k in columns})


class Suite:
    """Several experiments on one store, run in order: a notebook table whose cells use different models or settings
    (CoS's model sets x tasks, a sweep's points, several targets: each an experiment whose key names its weights).

    An entry may be a function ``stage(suite) -> Experiment`` instead of an experiment: it is built when the suite
    reaches it, after the experiments before it ran, so its requests may be made of their rows (a conversation's
    second turn opens with the target's first answer, read from the store). ``context``: what the paper's tables
    need besides the rows (per-call costs, the task rows with their answers)."""

    def __init__(self, store: results.ResultStore, experiments: Sequence = (), **context: Any):
        self.store = store
        self.experiments: list = []
        self.context = context
        for experiment in experiments:
            self.add(experiment)

    def add(self, experiment):
        """Append an experiment (on this suite's store) or a stage that builds one when reached."""
        if isinstance(experiment, Experiment) and experiment.store is not self.store:
            raise ValueError("a suite's experiments share its store")
        self.experiments.append(experiment)
        return experiment

    def built(self) -> list[Experiment]:
        """The experiments built so far (a stage is built by ``run``)."""
        return [e for e in self.experiments if isinstance(e, Experiment)]

    def keys(self) -> list[dict]:
        """The keys of the built experiments (a stage's are known once the stages before it ran)."""
        return [k for e in self.built() for k in e.keys()]

    def run(self):
        """Run every experiment in order (each computes only its missing keys; a stage is built first) and return
        the rows of all their keys (``store.frame(requested=True)``)."""
        for i, experiment in enumerate(self.experiments):
            if not isinstance(experiment, Experiment):
                experiment = self.experiments[i] = experiment(self)
                if experiment.store is not self.store:
                    raise ValueError("a suite's experiments share its store")
            experiment.run()
        return self.store.frame(requested=True)
