"""TABED (issue 4 §6): lossless drafting with every method / ensemble on the shipped tiny LLaVA pair, how the
M / T / C / P rows are built, the weight policies on hand-built histories, the window without the bonus
position, and clear errors (including a failing captioner, which degrades to the other methods)."""

import io
import warnings

import pytest
import torch

from conftest import U32, softmax_sum_atol
from specdec.cache import CachedLM
from specdec.drafters import ModelDrafter
from specdec.engine import autoregressive, generate
from specdec.sampling import SamplingConfig
from specdec.tabed import algorithm as ensemble
from specdec.tabed import algorithm as tabed
from specdec.tabed import captioners as tabed_captioners
from specdec.tabed import data, experiments
from specdec.tabed.algorithm import AdaptiveEnsembleDrafter, History, divergence, grid_weights, softmax_weights
from specdec.vlm import llava, prompts, scenes

GAMMAS = (1, 3, 5)
MAX_NEW = 12
N_PER_SCENARIO = 2  # 20 (scenario, turn) cells x 2 = 40 requests, 36 with images (1, 2 and 5 per request)


# ------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def pair():
    torch.set_num_threads(1)
    return experiments.load_vlm_pair()


@pytest.fixture(scope="module")
def suite(pair):
    """Every request of the tiny suite, encoded, with the target's greedy reference (sorted by image count).

    ``gamma`` is a round-robin γ per request for the tests that need one request per γ; the lossless test
    decodes every request with all eight methods at every γ."""
    target, _, processor = pair
    rows = data.load_suite("tiny", N_PER_SCENARIO)
    rows = sorted(rows, key=lambda r: len(r["images"]))
    out = []
    for i, row in enumerate(rows):
        ids, inputs = prompts.encode(processor, row["prompt"], row["images"])
        ref = autoregressive(
            target, ids, max_new_tokens=MAX_NEW, eos_token_id=processor.tokenizer.eos_token_id, target_inputs=inputs
        )
        out.append({**row, "ids": ids, "inputs": inputs, "reference": ref.output_ids, "gamma": GAMMAS[i % 3]})
    return out


@pytest.fixture(scope="module")
def captioners(pair):
    _, draft, processor = pair
    return {
        "oracle": tabed_captioners.make_captioner("oracle", draft, processor),
        "draft": tabed_captioners.make_captioner("draft", draft, processor),
        "tabed-captioner": tabed_captioners.make_captioner(tabed_captioners.CAPTIONER, draft, processor),
    }


def test_the_captioner_of_c_is_a_separate_smaller_llava_and_a_bad_name_fails_clearly(pair):
    _, draft, processor = pair
    model = tabed_captioners.captioner_model(tabed_captioners.CAPTIONER, draft)
    assert model is not draft and tabed_captioners.captioner_model("draft", draft) is draft
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in draft.parameters())
    with pytest.raises(ValueError, match="captioner must be"):
        tabed_captioners.make_captioner("no-such-captioner", draft, processor)


def draft_inputs(request):
    return {**request["inputs"], "images": request["images"]} if request["images"] else {}


def first(suite, n_images):
    return next(r for r in suite if len(r["images"]) == n_images)


def sd(pair, request, drafter, gamma, max_new_tokens=MAX_NEW, **kwargs):
    target, _, processor = pair
    return generate(
        target,
        request["ids"],
        drafter,
        gamma=gamma,
        max_new_tokens=max_new_tokens,
        eos_token_id=processor.tokenizer.eos_token_id,
        target_inputs=request["inputs"],
        draft_inputs=draft_inputs(request),
        **kwargs,
    )


def collapse_images(ids, image_token, per_image, fill):
    """The prompt with image ``k``'s run of ``per_image`` image tokens replaced by ``fill(k)`` (independent of
    ``DraftingRows._replace``)."""
    out, k, i, ids = [], 0, 0, ids.tolist()
    while i < len(ids):
        if ids[i] == image_token:
            assert ids[i : i + per_image] == [image_token] * per_image
            out += list(fill(k))
            k, i = k + 1, i + per_image
        else:
            out.append(ids[i])
            i += 1
    return out


# ------------------------------------------------------------------------------------------------- 1. lossless
def test_suite_covers_the_image_counts(suite):
    counts = [len(r["images"]) for r in suite]
    assert sum(c > 0 for c in counts) >= 30 and {0, 1, 2, 5} <= set(counts)
    for gamma in GAMMAS:
        assert {0, 1, 2, 5} <= {len(r["images"]) for r in suite if r["gamma"] == gamma}, gamma


@pytest.mark.parametrize("gamma", GAMMAS)
def test_every_method_is_lossless(pair, suite, captioners, gamma):
    _, draft, processor = pair
    requests = suite  # all 40 requests (36 with images) at every γ
    # the draft LLaVA captions (instead of the generator's ground truth) for one 1-image and one 2-image request
    with_draft_captions = {first(requests, 1)["id"], first(requests, 2)["id"]}
    with_captioner = {first(requests, 5)["id"], [r for r in requests if len(r["images"]) == 1][1]["id"]}
    accepted = 0
    for request in requests:
        n_images = len(request["images"])
        kind = "draft" if request["id"] in with_draft_captions else "oracle"
        kind = "tabed-captioner" if request["id"] in with_captioner else kind
        for method, methods in tabed.ENSEMBLES.items():
            drafter = tabed.make_drafter(draft, method, processor.tokenizer, captioner=captioners[kind])
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # a captioner failure must not go unnoticed here
                res = sd(pair, request, drafter, gamma)
            where = (request["id"], method, gamma, kind)
            assert res.output_ids == request["reference"], where
            assert drafter.make_rows.active == methods, where  # no row was dropped (the captions worked)
            accepted += sum(res.accepted_per_block)
            if method.endswith("*"):
                log = drafter.weight_log
                assert len(log) == len(res.drafted_per_block) > 0, where
                assert all(len(w) == len(methods) and min(w) >= 0 and abs(sum(w) - 1) < 1e-5 for w in log), where
                assert log[0] == pytest.approx([1 / len(methods)] * len(methods)), where  # no history yet
                if method == "MT*":  # grid candidates [1 - j/10, j/10]
                    assert all(abs(w[0] * 10 - round(w[0] * 10)) < 1e-5 for w in log), where
            else:
                assert not hasattr(drafter, "weight_log")
        if n_images and kind != "oracle":
            captions = captioners[kind](request["images"])
            assert len(captions) == n_images and all(isinstance(c, str) and c for c in captions)
    assert accepted > 0  # the drafts do propose tokens the target keeps


# ------------------------------------------------------------------------------------------------- 2. rows
def test_m_row_features_give_the_models_own_pixel_logits(pair, suite):
    _, draft, processor = pair
    request = first(suite, 2)
    rows, features = tabed.DraftingRows(draft, ("M",), processor.tokenizer)(request["ids"], **request["inputs"])
    assert len(rows) == 1 and rows[0].tolist() == request["ids"].tolist()
    continuation = processor.tokenizer(" the red", add_special_tokens=False)["input_ids"]
    via_pixels, via_features, blank = CachedLM(draft), CachedLM(draft), CachedLM(draft)
    via_pixels.prefill([request["ids"]], **request["inputs"])
    via_features.prefill(rows, row_features=features)
    blank.prefill(rows, row_features=[torch.zeros_like(features[0])])
    a, b = via_pixels.extend(continuation), via_features.extend(continuation)
    assert a.shape == b.shape == (1, len(continuation) + 1, via_pixels.vocab_size)
    assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
    assert not torch.allclose(a, blank.extend(continuation), atol=1e-2)  # the features are what carries the images


def test_pooled_features_average_2x2_patch_blocks_before_the_projector(pair, suite):
    _, draft, _ = pair
    pixels = first(suite, 2)["inputs"]["pixel_values"]
    full = llava.visual_features(draft, pixels)
    pooled = llava.visual_features(draft, pixels, pool=2)
    assert full.shape[:2] == (2, scenes.PATCHES_PER_IMAGE) and pooled.shape[:2] == (2, 4)
    tower, projector, config = llava._parts(draft)
    with torch.no_grad():
        hidden = tower(pixels, output_hidden_states=True).hidden_states[config.vision_feature_layer][:, 1:]
        for row in range(2):  # 4 x 4 patches in row-major order -> 2 x 2 blocks
            for col in range(2):
                block = [4 * (2 * row + dr) + 2 * col + dc for dr in (0, 1) for dc in (0, 1)]
                expected = projector(hidden[:, block].mean(1))
                assert torch.allclose(pooled[:, 2 * row + col], expected, atol=1e-5), (row, col)
    with pytest.raises(ValueError, match="cannot pool a 16-token image with a 3x3 kernel"):
        llava.visual_features(draft, pixels, pool=3)


@pytest.mark.parametrize("n_images", [1, 2, 5])
def test_rows_of_each_method(pair, suite, n_images):
    _, draft, processor = pair
    tok = processor.tokenizer
    request = first(suite, n_images)
    ids, image = request["ids"], draft.config.image_token_id
    per = llava.tokens_per_image(draft)
    captions = scenes.render_caption(request["images"])
    make_rows = tabed.DraftingRows(draft, ("M", "T", "C", "P"), tok, captioner=scenes.render_caption)
    rows, features = make_rows(ids, **draft_inputs(request))
    assert make_rows.active == ("M", "T", "C", "P") and make_rows.captions == captions
    m, t, c, p = (r.tolist() for r in rows)
    width = draft.get_input_embeddings().weight.shape[1]
    assert m == ids.tolist() and features[0].shape == (per * n_images, width)
    newline = tok("\n", add_special_tokens=False)["input_ids"]
    assert t == collapse_images(ids, image, per, lambda k: newline) and image not in t and features[1] is None
    assert t.count(newline[-1]) == ids.tolist().count(newline[-1]) + n_images
    assert (
        c
        == collapse_images(
            ids, image, per, lambda k: tok("image: " + captions[k], add_special_tokens=False)["input_ids"]
        )
        and image not in c
        and features[2] is None
    )
    assert p == collapse_images(ids, image, per, lambda k: [image] * 4) and features[3].shape == (4 * n_images, width)


def test_text_only_request_gives_the_prompt_in_every_row(pair, suite):
    _, draft, processor = pair
    request = first(suite, 0)

    def never(images):
        raise AssertionError("no images: the captioner must not be called")

    make_rows = tabed.DraftingRows(draft, ("M", "T", "C", "P"), processor.tokenizer, captioner=never)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows, features = make_rows(request["ids"])
    assert [r.tolist() for r in rows] == [request["ids"].tolist()] * 4 and features == [None] * 4


@pytest.mark.parametrize(
    "method,weights,sampling",
    [
        ("MT", [0.8, 0.2], SamplingConfig()),
        ("MTCP", None, SamplingConfig()),
        ("MTCP", [0.1, 0.2, 0.3, 0.4], SamplingConfig(temperature=0.8)),
        ("MT*", None, SamplingConfig()),
        ("MTCP*", None, SamplingConfig(temperature=0.8)),
    ],
)
def test_mixtures_are_the_weighted_rows_and_sum_to_one(pair, suite, method, weights, sampling):
    _, draft, processor = pair
    request = first(suite, 2)
    drafter = tabed.make_drafter(draft, method, processor.tokenizer, captioner=scenes.render_caption, weights=weights)
    drafter.prefill(request["ids"], **draft_inputs(request))
    m = len(tabed.ENSEMBLES[method])
    if method.endswith("*"):  # a history in which the first row is right: the policy moves off uniform
        rows = torch.full((4, m, 7), 0.1 / 6)
        rows[:, 0, 3], rows[:, 1:, 5] = 0.9, 0.9
        drafter.history.add(rows, rows[:, 0], [3] * 4)
    tokens, probs = drafter.propose([], 3, sampling, torch.Generator().manual_seed(0))
    w = drafter.weights if drafter.weights is not None else torch.full((m,), 1 / m)
    if weights is not None:
        assert w.tolist() == pytest.approx(weights)
    if method.endswith("*"):
        assert drafter.weight_log[-1][0] > max(drafter.weight_log[-1][1:])
    assert tokens.shape == (3,) and probs.shape == (3, drafter.vocab_size)
    # Rows and their mixture sum to 1 within float32 softmax arithmetic (derived in ``softmax_sum_atol``); the
    # mixture of m rows adds m roundings of entries <= 1 (and the weights' own sum is within m U of 1).
    atol = softmax_sum_atol(drafter.vocab_size) + 2 * m * U32
    assert torch.allclose(probs.sum(-1), torch.ones(3), atol=atol)
    assert torch.allclose(
        drafter.last_row_probs.sum(-1), torch.ones(3, len(w)), atol=softmax_sum_atol(drafter.vocab_size)
    )
    assert torch.allclose(probs, torch.einsum("m,tmv->tv", w / w.sum(), drafter.last_row_probs), atol=4 * m * U32)


# ------------------------------------------------------------------------------------------------- 3. policies
V = 5
Q_A = torch.tensor([0.7, 0.1, 0.1, 0.05, 0.05])  # method A: argmax 0
Q_B = torch.tensor([0.05, 0.8, 0.05, 0.05, 0.05])  # method B: argmax 1
# the mixture w A + (1 - w) B puts most mass on token 0 iff w > 0.75 / 1.35 = 0.556: candidates w = 0.6 .. 1.0


def history(target_weight, kept, n=4, shift=True):
    """n positions (tokens rolled by t so they differ); the target is ``target_weight`` A + (1 - ...) B."""
    h = History()
    for t in range(n):
        s = t if shift else 0
        qa, qb = Q_A.roll(s), Q_B.roll(s)
        p = target_weight * qa + (1 - target_weight) * qb
        h.add(torch.stack([qa, qb])[None], p[None], [(kept + s) % V])
    return h


@pytest.mark.parametrize(
    "criterion,expected",
    [
        ("hard", [0.6, 0.4]),  # every w >= 0.6 matches the kept token; ties go to the most balanced
        ("kl", [0.9, 0.1]),  # the target *is* 0.9 A + 0.1 B
        ("tvd", [0.9, 0.1]),
        ("hard+kl", [0.9, 0.1]),  # hard labels tie over w = 0.6 .. 1.0 and KL breaks the tie
    ],
)
def test_grid_criteria_on_a_target_that_is_a_known_mixture(criterion, expected):
    assert grid_weights(history(0.9, kept=0), n=10, criterion=criterion).tolist() == pytest.approx(expected)


@pytest.mark.parametrize(
    "criterion,expected",
    [
        ("hard", [0.6, 0.4]),
        ("hard+kl", [0.6, 0.4]),  # matches first: the closest matching candidate to 0.2
        ("kl", [0.2, 0.8]),
        ("tvd", [0.2, 0.8]),  # the divergences ignore the (sampled) kept token
    ],
)
def test_hard_labels_take_priority_over_kl(criterion, expected):
    """The target is 0.2 A + 0.8 B but kept A's token (as a stochastic target may)."""
    assert grid_weights(history(0.2, kept=0), n=10, criterion=criterion).tolist() == pytest.approx(expected)


@pytest.mark.parametrize("criterion", ["kl", "tvd", "hard+kl"])
@pytest.mark.parametrize("seed", range(5))
def test_identical_rows_tie_at_the_balanced_candidate_whatever_the_rounding(criterion, seed):
    """M and T of a text-only request give one distribution up to the last bits (which depend on the CPU's
    vector width): every mixture is then the same, and the policy must not pick a weight from rounding noise."""
    g = torch.Generator().manual_seed(seed)
    h = History()
    for _t in range(12):
        q = torch.rand(50, generator=g).softmax(-1)
        noisy = q * (1 + 1e-7 * torch.randn(50, generator=g))
        p = torch.rand(50, generator=g).softmax(-1)
        h.add(torch.stack([q, noisy / noisy.sum()])[None], p[None], [int(p.argmax())])
    for window in (None, 1, 4):
        assert grid_weights(h, n=10, criterion=criterion, window=window).tolist() == [0.5, 0.5]


def test_grid_resolution_follows_n():
    assert grid_weights(history(0.75, kept=0), n=4, criterion="kl").tolist() == pytest.approx([0.75, 0.25])
    assert grid_weights(history(0.75, kept=0), n=2, criterion="kl").tolist() in ([1.0, 0.0], [0.5, 0.5])


def test_grid_policy_rejects_more_than_two_methods():
    h = History()
    h.add(torch.full((1, 3, V), 1 / V), torch.full((1, V), 1 / V), [0])
    with pytest.raises(ValueError, match="two drafting methods"):
        grid_weights(h)


def manual_softmax_weights(h, kind, temperature):
    errors = []
    for k in range(h.row_probs[0].shape[0]):
        errors.append(sum(float(divergence(p, q[k], kind)) for q, p in zip(h.row_probs, h.target_probs)))
    inverse = torch.tensor([1 / e for e in errors]) / temperature
    return inverse.softmax(-1), errors


@pytest.mark.parametrize("kind", ["kl", "tvd"])
def test_softmax_weights_of_four_methods(kind):
    """Four methods at increasing distance from the target get decreasing weights; τ sharpens them."""
    target = torch.tensor([0.6, 0.1, 0.1, 0.1, 0.1])
    methods = torch.stack([0.9 * target + 0.1 * Q_B, 0.6 * target + 0.4 * Q_B, 0.3 * target + 0.7 * Q_B, Q_B])
    h = History()
    for t in range(3):
        h.add(methods.roll(t, -1)[None], target.roll(t)[None], [t])
    weights = {tau: softmax_weights(h, kind=kind, temperature=tau) for tau in (0.5, 1.0, 4.0)}
    for tau, w in weights.items():
        expected, errors = manual_softmax_weights(h, kind, tau)
        assert errors == sorted(errors)
        assert torch.allclose(w, expected, atol=1e-5), (tau, w, expected)
        assert abs(float(w.sum()) - 1) < 1e-6 and all(w[k] > w[k + 1] for k in range(3)), (tau, w)
    assert weights[0.5][0] > weights[1.0][0] > weights[4.0][0] > 0.25  # lower τ: sharper
    assert weights[0.5][3] < weights[1.0][3] < weights[4.0][3] < 0.25
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        softmax_weights(h, temperature=0)
    with pytest.raises(ValueError, match="pass the number of drafting methods"):
        softmax_weights(History())


def early_a_late_b(n_early=6, n_late=3):
    """Positions where A is right (target = A), then positions where B is right (target = B)."""
    h = History()
    for t in range(n_early + n_late):
        qa, qb = Q_A.roll(t), Q_B.roll(t)
        right = qa if t < n_early else qb
        h.add(torch.stack([qa, qb])[None], (0.9 * right + 0.1 / V)[None], [int(right.argmax())])
    return h


def truncated(h, last):
    out = History()
    out.add(torch.stack(h.row_probs[-last:]), torch.stack(h.target_probs[-last:]), h.tokens[-last:])
    return out


@pytest.mark.parametrize("window", [1, 3, 5, 9, 50])
def test_window_is_exactly_the_last_h_positions(window):
    h = early_a_late_b()
    last = truncated(h, min(window, len(h)))
    for criterion in ("hard", "kl", "tvd", "hard+kl"):
        assert (
            grid_weights(h, criterion=criterion, window=window).tolist()
            == grid_weights(last, criterion=criterion).tolist()
        ), criterion
    for kind in ("kl", "tvd"):
        assert torch.allclose(softmax_weights(h, kind=kind, window=window), softmax_weights(last, kind=kind))


def test_policies_scored_incrementally_equal_a_fresh_history():
    """Policies consulted between blocks (their per-position scores kept in the history) give what a history
    built at once gives, for every criterion, window and grid size."""
    full = early_a_late_b(6, 5)
    growing = History()
    for t in range(len(full)):
        growing.add(full.row_probs[t][None], full.target_probs[t][None], [full.tokens[t]])
        fresh = History()
        fresh.add(torch.stack(full.row_probs[: t + 1]), torch.stack(full.target_probs[: t + 1]), full.tokens[: t + 1])
        for window in (None, 2, 4):
            for criterion in ("hard", "kl", "tvd", "hard+kl"):
                for n in (10, 4):
                    assert (
                        grid_weights(growing, n=n, criterion=criterion, window=window).tolist()
                        == grid_weights(fresh, n=n, criterion=criterion, window=window).tolist()
                    ), (t, window, criterion)
            for kind in ("kl", "tvd"):
                assert torch.allclose(
                    softmax_weights(growing, kind=kind, window=window), softmax_weights(fresh, kind=kind, window=window)
                ), (t, kind)


def test_window_follows_the_recent_method():
    h = early_a_late_b()
    for criterion in ("hard", "kl", "hard+kl"):
        # the last 3 positions favour B (A's weight at most 1/2); over ALL, A's 6 positions win
        assert grid_weights(h, criterion=criterion, window=3)[0] <= 0.5 < grid_weights(h, criterion=criterion)[0]
    assert softmax_weights(h, window=3)[1] > 0.5 > softmax_weights(h, window=None)[1]


# ------------------------------------------------------------------------------------------------- 4. bonus
def test_observe_records_only_the_verified_positions(pair, suite, monkeypatch):
    """Each block adds min(n_accepted + 1, drafted) positions to the history: a fully accepted block adds γ,
    never the bonus position (which has no draft distribution)."""
    target, draft, processor = pair
    added = []
    original = History.add

    def recording_add(self, row_probs, target_probs, tokens):
        added.append(list(tokens))
        return original(self, row_probs, target_probs, tokens)

    monkeypatch.setattr(ensemble.History, "add", recording_add)
    image_requests = [r for r in suite if r["images"]]
    # the target drafts for itself with two identical M rows: every block is fully accepted
    self_drafter = AdaptiveEnsembleDrafter(
        target, tabed.DraftingRows(target, ("M", "M"), processor.tokenizer), ensemble.grid_weights
    )
    cases = [("self", self_drafter, 4, image_requests[:1])]
    cases += [("MT*", tabed.make_drafter(draft, "MT*", processor.tokenizer), 5, image_requests[::3])]
    for name, drafter, gamma, requests in cases:
        seen = set()
        for request in requests:
            added.clear()
            res = generate(
                target,
                request["ids"],
                drafter,
                gamma=gamma,
                max_new_tokens=24,
                eos_token_id=[],
                target_inputs=request["inputs"],
                draft_inputs=draft_inputs(request),
            )
            blocks = list(zip(res.accepted_per_block, res.drafted_per_block))
            where = (name, request["id"], blocks)
            assert [len(a) for a in added] == [min(n + 1, d) for n, d in blocks], where
            assert len(drafter.history) == sum(len(a) for a in added), where
            # the recorded tokens are the kept tokens at the verified positions of each block
            position, out = 0, res.output_ids
            for tokens, (n, _d) in zip(added, blocks):
                assert tokens == out[position : position + len(tokens)], where
                position += n + 1
            seen |= {"full" if n == d else "partial" for n, d in blocks}
            if name == "self":
                assert all(n == d for n, d in blocks) and [len(a) for a in added] == [d for _, d in blocks], where
                assert [d for _, d in blocks][:-1] == [gamma] * (len(blocks) - 1), where
            if seen == {"full", "partial"}:
                break
        # both kinds of block were exercised (the self-drafting target accepts everything)
        assert seen == ({"full"} if name == "self" else {"full", "partial"}), name


# ------------------------------------------------------------------------------------------------- 5. errors
def png_bytes(image):
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_image_placeholders_must_match_the_images(pair, suite):
    _, draft, processor = pair
    request = first(suite, 2)
    with pytest.raises(ValueError, match="2 <image> placeholders but 1 images"):
        prompts.encode(processor, request["prompt"], request["images"][:1])
    with pytest.raises(ValueError, match="0 <image> placeholders but 1 images"):
        prompts.encode(processor, "USER: What is two plus two? ASSISTANT:", request["images"][:1])
    make_rows = tabed.DraftingRows(draft, ("M", "T"), processor.tokenizer)
    with pytest.raises(ValueError, match="2 <image> placeholders but 1 images"):
        make_rows(request["ids"], pixel_values=request["inputs"]["pixel_values"][:1])
    with pytest.raises(ValueError, match="2 <image> placeholders but 0 images"):
        make_rows(request["ids"])


def test_images_from_bytes_and_paths_and_undecodable_ones(pair, suite, tmp_path):
    _, _, processor = pair
    request = first(suite, 2)
    path = tmp_path / "second.png"
    path.write_bytes(png_bytes(request["images"][1]))
    ids, inputs = prompts.encode(processor, request["prompt"], [png_bytes(request["images"][0]), str(path)])
    assert ids.tolist() == request["ids"].tolist()
    assert torch.allclose(inputs["pixel_values"], request["inputs"]["pixel_values"])
    with pytest.raises(ValueError, match="image 0 cannot be decoded"):
        prompts.load_images([b"not an image"])
    with pytest.raises(ValueError, match="image 1 cannot be decoded"):
        prompts.load_images([request["images"][0], str(tmp_path / "missing.png")])
    with pytest.raises(ValueError, match="image 1 cannot be decoded"):
        prompts.encode(processor, request["prompt"], [request["images"][0], b"not an image"])


def test_bad_methods_and_weights(pair):
    _, draft, processor = pair
    tok = processor.tokenizer
    with pytest.raises(ValueError, match=r"MT mixes 2 drafting methods .* got 1 weights"):
        tabed.make_drafter(draft, "MT", tok, weights=[1.0])
    with pytest.raises(ValueError, match="sum to one"):
        tabed.make_drafter(draft, "MT", tok, weights=[0.7, 0.7])
    with pytest.raises(ValueError, match="non-negative and sum to one"):
        ModelDrafter(draft, weights=[1.5, -0.5])
    with pytest.raises(ValueError, match="sum to one"):
        ModelDrafter(draft, weights=[0.3, 0.3])
    with pytest.raises(ValueError, match="unknown TABED method 'MX'"):
        tabed.make_drafter(draft, "MX", tok)
    with pytest.raises(ValueError, match="drafting methods must be among"):
        tabed.DraftingRows(draft, ("M", "Q"), tok)
    with pytest.raises(ValueError, match=r"caption drafting \(C\) needs a captioner"):
        tabed.DraftingRows(draft, ("C",), tok)
    with pytest.raises(ValueError, match="needs a captioner"):
        tabed.make_drafter(draft, "MTCP*", tok)
    assert tabed.make_drafter(draft, "MT", tok, weights=[0.25, 0.75]).weights.tolist() == [0.25, 0.75]


def raising(images):
    raise RuntimeError("caption service down")


def one_caption(images):
    return ["a caption"]


def one_too_many(images):
    return ["a caption"] * (len(images) + 1)


def not_text(images):
    return [None] * len(images)


@pytest.mark.parametrize(
    "captioner,message",
    [
        (raising, "RuntimeError: caption service down"),
        (one_caption, "returned 1 captions for 2 images"),
        (one_too_many, "returned 3 captions for 2 images"),
        (not_text, "returned 2 captions for 2 images"),
    ],
)
@pytest.mark.parametrize("method", ["MTCP", "MTCP*"])
def test_failing_captioner_drops_the_caption_row(pair, suite, captioner, message, method):
    _, draft, processor = pair
    request = first(suite, 2)
    drafter = tabed.make_drafter(draft, method, processor.tokenizer, captioner=captioner)
    with pytest.warns(RuntimeWarning, match=f"captioner failed .*{message}"):
        res = sd(pair, request, drafter, 3)
    assert res.output_ids == request["reference"]
    assert drafter.make_rows.active == ("M", "T", "P") and drafter.lm.m == 3
    if method == "MTCP*":
        assert all(len(w) == 3 and abs(sum(w) - 1) < 1e-5 for w in drafter.weight_log)


def test_captioner_failure_is_per_request(pair, suite):
    _, draft, processor = pair
    request = first(suite, 1)
    calls = []

    def flaky(images):
        calls.append(len(images))
        if len(calls) == 1:
            raise TimeoutError("slow")
        return scenes.render_caption(images)

    drafter = tabed.make_drafter(draft, "MTCP", processor.tokenizer, captioner=flaky)
    with pytest.warns(RuntimeWarning, match="TimeoutError"):
        drafter.prefill(request["ids"], **draft_inputs(request))
    assert drafter.make_rows.active == ("M", "T", "P")
    drafter.prefill(request["ids"], **draft_inputs(request))
    assert drafter.make_rows.active == ("M", "T", "C", "P") and drafter.lm.m == 4 and calls == [1, 1]


def test_failing_captioner_with_caption_drafting_alone(pair, suite):
    """With only C requested there is no other method to fall back on: drafting must still go on (e.g. on the
    text-only row) with the warning, not crash with an unrelated error."""
    _, draft, processor = pair
    request = first(suite, 2)
    drafter = tabed.make_drafter(draft, "C", processor.tokenizer, captioner=raising)
    with pytest.warns(RuntimeWarning, match="captioner failed"):
        res = sd(pair, request, drafter, 3)
    assert res.output_ids == request["reference"]
    assert drafter.make_rows.active == ("T",)
