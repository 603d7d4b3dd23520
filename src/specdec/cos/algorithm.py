"""CoS, top to bottom: collaborative decoding via speculation and its baselines, for n models with one shared
vocabulary; the paper's settings (``make_combination``, ``default_proposer``) and theorems (3.1, 3.2, 3.6).

Every method produces tokens that follow the combined distribution ``r = combine(l_1, …, l_n)``
(``specdec.cos.combine.Combination``; greedy decoding takes ``argmax r``):

- ``standard``   one call of every model per token, serially (the paper's WE / CD baseline);
- ``parallel``   the same, with the n calls run concurrently (WE-P / CD-P: threads, CUDA streams on GPU);
- ``sd``         vanilla SD with the ensemble as the target: ``models[0]`` drafts γ tokens, the ensemble
                 verifies γ+1 positions and keeps its bonus token (roles never change);
- ``naive``      Naive-CoS: the default proposer drafts γ tokens, the other models score them once each,
                 tokens are accepted with ``min(1, r/q)`` and resampled from ``norm(max(0, r − q))``;
                 the verifier's extra token (which follows its own distribution, not ``r``) is dropped;
- ``cos``        CoS: the alternate proposal framework (2 models) and its n-model generalisation
                 (Algorithm 2): the models are called in turn; each call scores every pending token the
                 model has not seen and draws one more token that becomes the start of its own proposal of
                 ``gammas[i]`` tokens; a token is verified once all models have scored it; a rejection
                 clears every pending token and hands the turn back to the default proposer.

``standard``, ``parallel`` and ``sd`` run on ``specdec.engine.generate`` with a ``CombinedLM`` as the target;
``naive`` and ``cos`` need proposer and verifier to swap roles, which is the loop in ``collaborate``.
All of them keep one KV cache per model (``CachedLM``) that is rolled back by cropping. The combination functions
live in ``specdec.cos.combine``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import torch

from specdec import engine, validate, verify
from specdec.cache import CachedLM
from specdec.cos.combine import Combination
from specdec.engine import generate
from specdec.sampling import SamplingConfig, logits_to_probs, sample

METHODS = ("standard", "parallel", "sd", "naive", "cos")


class CombinedLM:
    """n models behind the ``CachedLM`` interface: ``extend`` returns ``log r`` as the logits ``[1, k, V]``.

    Plugged into ``engine.generate`` as the target, it turns autoregressive decoding into standard
    collaborative decoding and SD into SD with the combined distribution as the target. Each model keeps
    its own cache; ``parallel=True`` runs the n calls concurrently (threads; one CUDA stream each on GPU).
    """

    def __init__(self, models, combine: Combination, parallel: bool = False):
        self.lms = [m if isinstance(m, CachedLM) else CachedLM(m) for m in models]
        _check_models(self.lms, combine)
        self.combine = combine
        self.parallel = parallel
        self.model = models[-1]
        self.device = self.lms[-1].device
        self.generation_config = getattr(models[-1], "generation_config", None)
        self.calls = 0
        self._pool = ThreadPoolExecutor(len(self.lms)) if parallel else None
        self._streams = (
            [torch.cuda.Stream(device=lm.device) for lm in self.lms]
            if parallel and self.device.type == "cuda"
            else None
        )

    @property
    def vocab_size(self) -> int:
        return self.lms[0].vocab_size

    @property
    def tokens_fed(self) -> int:
        return sum(lm.tokens_fed for lm in self.lms)

    def prefill(self, prompt_rows, **model_inputs) -> None:
        self.calls = 0
        self._each(lambda lm: lm.prefill(prompt_rows, **model_inputs))

    def extend(self, sequence: list[int]) -> torch.Tensor:
        self.calls += 1
        logits = self._each(lambda lm: lm.extend(sequence)[0])
        return self.combine(logits).clamp_min(1e-30).log().unsqueeze(0)

    def rollback(self, sequence: list[int]) -> None:
        for lm in self.lms:
            lm.rollback(sequence)

    def _each(self, fn):
        if self._pool is None:
            return [fn(lm) for lm in self.lms]
        if self._streams is None:
            return list(self._pool.map(fn, self.lms))

        def on_stream(i):
            with torch.cuda.stream(self._streams[i]):
                return fn(self.lms[i])

        out = list(self._pool.map(on_stream, range(len(self.lms))))
        torch.cuda.synchronize(self.device)
        return out


@dataclass
class CollabResult:
    """Output and statistics of one collaborative generation.

    ``calls[i]``: decode calls of model i (prefill excluded). ``proposed[i]`` / ``accepted[i]``: tokens model i
    proposed that were verified / accepted. ``bonus_reused``: accepted tokens that a model drew while scoring
    another model's proposal (the APF gain). ``role_swaps``: proposals started by a model other than the
    default. ``wasted``: proposed tokens discarded before verification because an earlier one was rejected.
    """

    method: str
    prompt_ids: list[int]
    output_ids: list[int]
    calls: list[int]
    tokens_fed: list[int]
    proposed: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    bonus_reused: int = 0
    role_swaps: int = 0
    wasted: int = 0
    rejections: int = 0
    prefill_time: float = 0.0
    total_time: float = 0.0
    stop_reason: str = ""

    @property
    def new_tokens(self) -> int:
        return len(self.output_ids)

    @property
    def acceptance_rate(self) -> float:
        """Accepted / verified proposals of all proposers (nan for the standard method)."""
        return sum(self.accepted) / sum(self.proposed) if sum(self.proposed) else float("nan")

    @property
    def calls_per_token(self) -> float:
        return sum(self.calls) / self.new_tokens if self.new_tokens else float("nan")

    @property
    def tokens_per_second(self) -> float:
        decode = self.total_time - self.prefill_time
        return self.new_tokens / decode if decode > 0 else float("nan")

    def cost(self, call_costs) -> float:
        """Time in units of ``call_costs`` (one number per model, e.g. measured seconds per call)."""
        return sum(c * n for c, n in zip(call_costs, self.calls))

    def summary(self) -> dict:
        row = {k: v for k, v in asdict(self).items() if not isinstance(v, list)}
        for i, (c, f) in enumerate(zip(self.calls, self.tokens_fed)):
            row[f"calls_{i}"], row[f"tokens_fed_{i}"] = c, f
        for i, (p, a) in enumerate(zip(self.proposed, self.accepted)):
            row[f"proposed_{i}"], row[f"accepted_{i}"] = p, a
        row.update(
            new_tokens=self.new_tokens,
            acceptance_rate=self.acceptance_rate,
            calls_per_token=self.calls_per_token,
            tokens_per_second=self.tokens_per_second,
        )
        return row


def decode(
    models,
    prompt_ids,
    combine: Combination,
    method: str = "cos",
    *,
    gamma: int = 5,
    gammas=None,
    default: int = 0,
    max_new_tokens: int = 128,
    sampling: SamplingConfig | None = None,
    eos_token_id=None,
    seed: int = 0,
) -> CollabResult:
    """Run one of ``METHODS`` on ``models`` (``models[0]`` the smallest / amateur) and return a ``CollabResult``.

    gamma: the proposal length of ``models[default]`` for ``sd``, ``naive`` and ``cos``; the other models
    propose 1 token (the paper's setting) unless ``gammas`` gives one length per model.
    sampling: greedy (temperature 0, the default) decodes ``argmax r``; any temperature > 0 samples ``r``
    exactly (the temperature then only shapes how proposers draw; ``r`` has its own in ``combine``).
    """
    validate.choice("method", method, METHODS)
    if not isinstance(combine, Combination):
        raise TypeError(f"combine must be a cos.Combination (e.g. Combination.weighted(0.5)), got {combine!r}")
    if method in ("naive", "cos"):
        return collaborate(
            models,
            prompt_ids,
            combine,
            gammas=_gammas(gamma, gammas, len(models), default),
            default=default,
            apf=(method == "cos"),
            max_new_tokens=max_new_tokens,
            sampling=sampling,
            eos_token_id=eos_token_id,
            seed=seed,
        )
    target = CombinedLM(models, combine, parallel=(method == "parallel"))
    drafter = models[default] if method == "sd" else None
    res = generate(
        target,
        prompt_ids,
        drafter,
        gamma=gamma,
        max_new_tokens=max_new_tokens,
        sampling=sampling or SamplingConfig(),
        eos_token_id=eos_token_id,
        seed=seed,
    )
    calls = [res.target_calls] * len(models)
    fed = [lm.tokens_fed for lm in target.lms]
    proposed, accepted = [0] * len(models), [0] * len(models)
    if drafter is not None:
        calls[default] += res.draft_calls
        fed[default] += res.draft_tokens_fed
        # Verified proposals: the accepted ones plus the one rejected (tokens after it were never judged).
        proposed[default] = sum(min(a + 1, d) for a, d in zip(res.accepted_per_block, res.drafted_per_block))
        accepted[default] = sum(res.accepted_per_block)
    return CollabResult(
        method,
        res.prompt_ids,
        res.output_ids,
        calls,
        fed,
        proposed,
        accepted,
        rejections=sum(a < d for a, d in zip(res.accepted_per_block, res.drafted_per_block)),
        prefill_time=res.prefill_time,
        total_time=res.total_time,
        stop_reason=res.stop_reason,
    )


@dataclass
class _Pending:
    token: int
    proposer: int
    bonus: bool  # drawn by a model while it scored someone else's proposal
    logits: dict = field(default_factory=dict)  # model index -> logits [V] for this position


@torch.no_grad()
def collaborate(
    models,
    prompt_ids,
    combine: Combination,
    *,
    gammas,
    default: int = 0,
    apf: bool = True,
    max_new_tokens: int = 128,
    sampling: SamplingConfig | None = None,
    eos_token_id=None,
    seed: int = 0,
) -> CollabResult:
    """CoS (``apf=True``) or Naive-CoS (``apf=False``) on n models; see the module docstring.

    gammas: proposal length per model (≥ 1). A call of model i feeds every pending token it has not seen
    (scoring them) and returns its distribution for the next position; with ``apf`` that draw starts model
    i's own proposal, which it extends to ``gammas[i]`` tokens; without ``apf`` only the default model
    proposes and the others just score, in order.
    """
    sampling = engine.check_sampling(sampling)
    seed = validate.integer("seed", seed)
    prompt_ids = engine.check_prompt(prompt_ids)
    lms, gammas, eos_ids = _prepare(models, combine, gammas, default, max_new_tokens, eos_token_id, prompt_ids)
    n = len(lms)
    device = lms[0].device
    draw_gen = torch.Generator(device=device).manual_seed(seed)
    verify_gen = torch.Generator(device=device).manual_seed(seed + 1)

    res = CollabResult("cos" if apf else "naive", prompt_ids.tolist(), [], [0] * n, [0] * n, [0] * n, [0] * n)
    t_start = engine.now(device)
    for lm in lms:
        lm.prefill([prompt_ids.to(device)])
    res.prefill_time = engine.now(device) - t_start
    out: list[int] = []
    pending: list[_Pending] = []
    caller, turn = default, 0  # turn: position of the caller in the fixed Naive-CoS order
    while len(out) < max_new_tokens:
        # 1. The caller scores what it has not seen and draws its next token.
        seq = out + [p.token for p in pending]
        next_logits, n_scored = _score(lms[caller], seq, out, pending, caller)
        res.calls[caller] += 1
        # 2. Verify every front token that all models have scored.
        n_before = len(out)
        rejected = _verify_front(out, pending, n, combine, sampling, verify_gen, res)
        eos_at = next((k for k in range(n_before, len(out)) if out[k] in eos_ids), None)
        if eos_at is not None:
            del out[eos_at + 1 :]
            break
        if rejected:
            for lm in lms:
                lm.rollback(out)
            caller, turn = default, 0
            continue
        # 3. The caller's draw starts its proposal (APF), or is dropped (a Naive-CoS verifier's extra token).
        if apf or caller == default:
            proposal = min(gammas[caller], max_new_tokens - len(out) - len(pending))
            if proposal > 0:
                res.role_swaps += caller != default
                _propose(
                    lms[caller],
                    caller,
                    next_logits,
                    proposal,
                    out,
                    pending,
                    sampling,
                    draw_gen,
                    bonus=n_scored > 0,
                    res=res,
                )
        if apf:
            caller = (caller + 1) % n
        else:
            turn = (turn + 1) % n
            caller = (default + turn) % n
    res.output_ids = out[:max_new_tokens]
    res.stop_reason = "eos" if res.output_ids and res.output_ids[-1] in eos_ids else "max_new_tokens"
    res.total_time = engine.now(device) - t_start
    res.tokens_fed = [lm.tokens_fed for lm in lms]
    return res


def _prepare(models, combine: Combination, gammas, default: int, max_new_tokens: int, eos_token_id, prompt_ids):
    """The first step of ``collaborate``: wrap every model in a ``CachedLM`` and check the arguments.

    Returns ``(lms, gammas as a list, eos ids)``; raises ``ValueError`` on a bad combination, proposal length,
    default proposer or token budget (in that order)."""
    lms = [CachedLM(m) for m in models]
    _check_models(lms, combine)
    n = len(lms)
    default = validate.integer("default proposer", default, minimum=0, maximum=n - 1)
    gammas = list(gammas)
    if len(gammas) != n:
        raise ValueError(f"give one proposal length per model: {n} models, gammas={gammas}")
    for g in gammas:
        engine.check_int("gamma", g, minimum=1, hint="each model proposes at least one token")
    max_new_tokens = engine.check_int("max_new_tokens", max_new_tokens, minimum=0)
    for lm in lms:  # the checks generate() makes: vocabulary, context window (each model its own)
        engine.check_request(lm, prompt_ids, max_new_tokens, None)
    return lms, gammas, engine.eos_ids(models[-1], eos_token_id)


def _score(lm: CachedLM, seq, out, pending, i):
    """Feed ``seq``'s unseen tokens to model ``i`` and record its logits at the pending positions.

    Returns ``(next_logits [V], n_scored)``: the distribution after ``seq`` and how many pending tokens this
    call scored for the first time (tokens of other models' proposals)."""
    need = next((len(out) + j for j, p in enumerate(pending) if i not in p.logits), len(seq))
    if lm.prompt_last_fed and len(lm.generated) >= need:
        # The model already fed the token before the first position it must score (its distribution there was
        # computed for an earlier call and dropped): crop back one position and recompute it in this call.
        lm.rollback(seq[:need])
    logits = lm.extend(seq)[0]  # [k, V]; row j predicts index len(seq) - k + 1 + j
    first = len(seq) - logits.shape[0] + 1
    n_scored = 0
    for j in range(max(first, len(out)), len(seq)):
        scores = pending[j - len(out)].logits
        if i not in scores:
            scores[i] = logits[j - first]
            n_scored += 1
    return logits[-1], n_scored


def _propose(lm, i, next_logits, length, out, pending, sampling, generator, bonus, res):
    """Model i draws ``length`` tokens, the first from ``next_logits`` (already computed)."""
    logits = next_logits
    for k in range(length):
        if k > 0:
            logits = lm.extend(out + [p.token for p in pending])[0, -1]
            res.calls[i] += 1
        token = int(logits.argmax()) if sampling.greedy else int(sample(logits_to_probs(logits, sampling), generator))
        pending.append(_Pending(token, i, bonus and k == 0, {i: logits}))


def _verify_front(out, pending, n, combine, sampling, generator, res) -> bool:
    """Verify the leading pending tokens scored by all n models; move accepted ones to ``out``.

    Returns True when a token was rejected (its correction is appended, every pending token dropped).
    """
    ready = 0
    while ready < len(pending) and len(pending[ready].logits) == n:
        ready += 1
    if ready == 0:
        return False
    block = pending[:ready]
    tokens = torch.tensor([p.token for p in block])
    logits = torch.stack([torch.stack([p.logits[i] for i in range(n)]) for p in block], dim=1)  # [n, k, V]
    r = combine(logits)  # [k, V]
    if sampling.greedy:
        n_accepted, correction = verify.greedy_prefix(tokens, r)
    else:
        q = torch.stack([logits_to_probs(p.logits[p.proposer], sampling) for p in block])
        n_accepted, correction = verify.stochastic_prefix(tokens, q, r, generator)
    for p in block[:n_accepted]:
        out.append(p.token)
        res.accepted[p.proposer] += 1
        res.bonus_reused += p.bonus
    n_verified = n_accepted + (correction is not None)
    for p in block[:n_verified]:
        res.proposed[p.proposer] += 1
    if correction is None:
        del pending[:ready]
        return False
    res.rejections += 1
    res.wasted += len(pending) - n_verified
    out.append(correction)
    pending.clear()
    return True


def _gammas(gamma, gammas, n, default):
    if gammas is not None:
        return list(gammas)
    return [gamma if i == default else 1 for i in range(n)]


def _check_models(lms, combine: Combination) -> None:
    if len(lms) != combine.n_models:
        raise ValueError(f"{combine.label} combines {combine.n_models} models, got {len(lms)}")
    sizes = {lm.vocab_size for lm in lms}
    if len(sizes) != 1:
        raise ValueError(
            f"the models' vocabularies differ ({sorted(sizes)} entries): collaborative decoding "
            "combines distributions over one shared tokenizer"
        )


# ------------------------------------------------------------------------------ the paper's settings and theorems
def make_combination(kind: str, n_models: int, lam: float = 0.5, mu: float = 0.1, temperature: float = 1.0):
    """The paper's settings: WE with ``λ`` (two models) or ``1/n`` each; CD with ``μ`` and ``T`` (0 = argmax)."""
    if kind == "we":
        return Combination.weighted(lam, n_models)
    if kind == "cd":
        return Combination("cd", 2, mu=mu, temperature=temperature)
    raise ValueError(f"unknown combination {kind!r}: use 'we' (weighted ensemble) or 'cd' (contrastive decoding)")


def default_proposer(kind: str, n_models: int, lam: float) -> int:
    """Cor. 3.3: in a two-model WE the model with the larger weight proposes (α ≥ max(λ, 1 − λ)); otherwise
    the smallest model (index 0) does."""
    return 1 if kind == "we" and n_models == 2 and lam < 0.5 else 0


def theorem_3_1(alpha: float, gamma: int, c: float) -> float:
    """Naive-CoS speedup over standard collaborative decoding (no bonus token):
    ``(1 − α^γ)(1 + c) / ((1 − α)(1 + cγ))``; ``c`` = proposer call time / verifier call time."""
    if alpha >= 1:
        return gamma * (1 + c) / (1 + c * gamma)
    return (1 - alpha**gamma) * (1 + c) / ((1 - alpha) * (1 + c * gamma))


def theorem_3_6(alpha: float, gamma_q: int, gamma_p: int, c: float) -> float:
    """CoS with the alternate proposal framework: ``(1 − α^γq)(1 + c) / ((1 − α)(1 + cγq − α^γp c))``."""
    if alpha >= 1:
        alpha = 1 - 1e-9
    return (1 - alpha**gamma_q) * (1 + c) / ((1 - alpha) * (1 + c * gamma_q - alpha**gamma_p * c))


def we_acceptance(proposer_probs: torch.Tensor, other_probs: torch.Tensor, lam: float) -> torch.Tensor:
    """Exact Naive-CoS acceptance ``α = Σ min(q, r)`` with ``r = λ q + (1 − λ) p`` (Thm 3.2: ``α ≥ λ``)."""
    r = lam * proposer_probs + (1 - lam) * other_probs
    return torch.minimum(proposer_probs, r).sum(-1)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["METHODS", "decode", "make_combination"]
