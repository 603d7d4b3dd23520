"""AASD: Target-Draft Attention against a naive reference, RoPE at the target's positions, the KV projector, and
the drafter inside ``engine.generate`` (lossless greedy, exact sampling, and an oracle module that must accept
every draft token)."""

import pytest
import torch

from conftest import LLAVA_IMAGE_TOKEN, chi2_pvalue, random_llava
from specdec.aasd import baselines
from specdec.aasd import experiments as aasd_experiments
from specdec.aasd.algorithm import NEVER, AASDDrafter, KVProjector, SpeculatingModule, config_for, rope_tables, rotate
from specdec.aasd.rows import file_rows, text_only_batch
from specdec.aasd.tda import answer_window, naive_attention, tda_attention
from specdec.cache import CachedLM
from specdec.engine import autoregressive, generate
from specdec.hub import DatasetNotAvailableError
from specdec.sampling import SamplingConfig, logits_to_probs
from specdec.vlm.data import IMAGE_TOKEN_ID, IMAGE_TOKENS, build_data

IMAGE = LLAVA_IMAGE_TOKEN  # a 32 x 32 image with 16 x 16 patches gives 4 image tokens


def request(n_images, seed):
    g = torch.Generator().manual_seed(seed)
    text = torch.randint(3, IMAGE, (5,), generator=g)
    prompt = torch.cat([torch.tensor([1]), *[torch.tensor([IMAGE] * 4 + [5]) for _ in range(n_images)], text])
    pixels = {"pixel_values": torch.randn(n_images, 3, 32, 32, generator=g)} if n_images else {}
    return prompt, pixels


def random_module(target, seed=0, **settings):
    torch.manual_seed(seed)
    module = SpeculatingModule(config_for(target, **{"intermediate_size": 48, "projector_k": 2, **settings}))
    with torch.no_grad():  # larger weights than the default init: the module then disagrees with the target often
        for p in module.parameters():
            if p.dim() == 2:
                p.mul_(3)
    return module.eval().attach(target)


def oracle_module(target):
    """A module that is the one-layer ``target``'s own layer: reading the target cache, it must predict exactly the
    target's next token at every depth (the in-block k'/v' equal the target's own)."""
    text = target.model.language_model
    layer = text.layers[0]
    module = SpeculatingModule(config_for(target, intermediate_size=text.config.intermediate_size, projector_k=None))
    with torch.no_grad():
        for mine, theirs in [
            (module.input_norm.weight, layer.input_layernorm.weight),
            (module.q_proj.weight, layer.self_attn.q_proj.weight),
            (module.k_proj.weight, layer.self_attn.k_proj.weight),
            (module.v_proj.weight, layer.self_attn.v_proj.weight),
            (module.o_proj.weight, layer.self_attn.o_proj.weight),
            (module.post_norm.weight, layer.post_attention_layernorm.weight),
            (module.gate.weight, layer.mlp.gate_proj.weight),
            (module.up.weight, layer.mlp.up_proj.weight),
            (module.down.weight, layer.mlp.down_proj.weight),
            (module.final_norm.weight, text.norm.weight),
        ]:
            mine.copy_(theirs)
    return module.eval().attach(target)


# ------------------------------------------------------------------------------------------ Target-Draft Attention
def _attention_inputs(seed=0, b=2, h=4, t=7, c=9, d=8):
    g = torch.Generator().manual_seed(seed)
    q, k_own, v_own = (torch.randn(b, h, t, d, generator=g) for _ in range(3))
    k_ctx, v_ctx = (torch.randn(b, h, c, d, generator=g) for _ in range(2))
    q_pos = torch.tensor([[10 + j for j in range(t)], [6 + j for j in range(t)]])
    ctx_pos = torch.tensor([[-1, -1, 0, 2, 4, 9, 10, 12, 13], [-1, 0, 1, 3, 5, 6, 7, NEVER, NEVER]])
    return q, k_own, v_own, k_ctx, v_ctx, ctx_pos, q_pos


@pytest.mark.parametrize("own_only", [False, True])
def test_tda_matches_naive_reference_at_every_depth(own_only):
    inputs = _attention_inputs()
    depths = list(range(5))
    fast = tda_attention(*inputs, depths, own_only=own_only)
    for i, depth in enumerate(depths):
        slow = naive_attention(*inputs, depth, own_only=own_only)
        assert torch.allclose(fast[i], slow, atol=1e-5), f"depth {depth}"
    if not own_only:  # the test can fail: a depth changes what a position sees
        assert not torch.allclose(fast[0], fast[2], atol=1e-3)
        assert not torch.allclose(fast[1], naive_attention(*inputs, 2), atol=1e-3)


def test_answer_window_starts_at_the_last_prompt_token():
    ids = torch.tensor([[1, 7, 8, 9, 20, 21, 2, 0], [1, 7, 30, 31, 32, 2, 0, 0]])
    labels = torch.tensor([[-100, -100, -100, -100, 20, 21, 2, -100], [-100, -100, 30, 31, 32, 2, -100, -100]])
    win, pos, valid = answer_window({"input_ids": ids, "labels": labels})
    assert pos[0, :4].tolist() == [3, 4, 5, 6] and win[0, :3].tolist() == [9, 20, 21]
    assert pos[1, :4].tolist() == [1, 2, 3, 4] and valid.sum(1).tolist() == [3, 4]


# --------------------------------------------------------------------------------------------- RoPE and projector
def test_module_rope_matches_the_target_cache():
    target = random_llava(layers=2, heads=4)
    prompt, pixels = request(1, seed=0)
    with torch.no_grad():
        out = target(input_ids=prompt[None], **pixels, use_cache=True, output_hidden_states=True)
        layer = target.model.language_model.layers[-1]
        x = layer.input_layernorm(out.hidden_states[-2])
        k = layer.self_attn.k_proj(x).view(1, len(prompt), 2, 8).transpose(1, 2)
    cos, sin = rope_tables(torch.arange(len(prompt)), 8, 10000.0)
    cached = out.past_key_values.layers[-1].keys
    assert torch.allclose(rotate(k, cos, sin), cached, atol=1e-5)
    assert not torch.allclose(rotate(k, *rope_tables(torch.arange(1, len(prompt) + 1), 8, 10000.0)), cached, atol=1e-3)


def test_projector_compresses_each_image():
    proj = KVProjector(n=4, k=2)
    keys = torch.arange(2 * 8 * 3, dtype=torch.float32).view(1, 2, 8, 3)  # two images of four positions
    k, v = proj(keys, keys)
    assert k.shape == (1, 2, 4, 3)
    assert torch.allclose(k[0, 0, 0], keys[0, 0, :2].mean(0)) and torch.allclose(k[0, 0, 3], keys[0, 0, 6:].mean(0))


# ------------------------------------------------------------------------------------------------- the drafter
@pytest.mark.parametrize("gamma", [1, 3, 5])
@pytest.mark.parametrize("n_images", [0, 1, 2])
def test_aasd_greedy_is_lossless(gamma, n_images):
    target = random_llava(layers=2, heads=4)
    for context in ("target", "own", "no_text", "no_prompt_text", "no_image"):
        module = random_module(target, projector_k=None if context == "no_image" else 2, context=context)
        for seed in range(2):
            prompt, pixels = request(n_images, seed)
            ar = autoregressive(target, prompt, max_new_tokens=14, eos_token_id=[], target_inputs=pixels)
            lm = CachedLM(target)
            sd = generate(lm, prompt, AASDDrafter(module, lm), gamma=gamma, max_new_tokens=14, eos_token_id=[],
                          target_inputs=pixels)  # fmt: skip
            assert sd.output_ids == ar.output_ids, (context, seed)


@pytest.mark.parametrize("n_images", [0, 2])
def test_oracle_module_reading_the_cache_drafts_the_target_distribution(n_images):
    """A module equal to a one-layer target's layer must draft exactly the target's next-token distribution at every
    depth of every block (the cache it reads, its RoPE positions and its in-block cache must all be right); inside
    ``generate`` it then has every draft token accepted."""
    target = random_llava(layers=1, seed=3, heads=4)
    with torch.no_grad():  # peaked attention (random init attends almost uniformly, blind to positions)
        for proj in (
            target.model.language_model.layers[0].self_attn.q_proj,
            target.model.language_model.layers[0].self_attn.k_proj,
        ):
            proj.weight.mul_(25)
    module = oracle_module(target)
    prompt, pixels = request(n_images, seed=1)
    lm = CachedLM(target)
    lm.prefill([prompt], **pixels)
    drafter = AASDDrafter(module, lm)
    drafter.prefill(prompt)
    generated = []
    with torch.no_grad():
        for block in range(3):
            tokens, probs = drafter.propose(generated, 3, SamplingConfig())
            full = torch.cat([prompt, torch.tensor(generated + tokens[:-1].tolist(), dtype=torch.long)])
            reference = target(input_ids=full[None], **pixels).logits[0, -3:].softmax(-1)
            assert torch.allclose(probs, reference, atol=1e-5), f"block {block}"
            generated += tokens[:2].tolist() + [7 + block]  # two accepted, then a correction
            lm.extend(generated)
            lm.rollback(generated)
    lm = CachedLM(target)
    sd = generate(
        lm, prompt, AASDDrafter(module, lm), gamma=4, max_new_tokens=20, eos_token_id=[], target_inputs=pixels
    )
    assert sd.acceptance_rate == 1.0 and sd.target_calls == 4


@pytest.mark.width_independent
def test_aasd_sampling_first_two_tokens_follow_target():
    target = random_llava(layers=2, seed=4, heads=4)
    module = random_module(target, seed=5)
    prompt, pixels = request(1, seed=2)
    sampling = SamplingConfig(1.0)
    lm = CachedLM(target)  # reference: the target's own next-token distributions after prompt and prompt + x
    lm.prefill([prompt], **pixels)
    rows = []
    for x in range(64):
        rows.append(logits_to_probs(lm.extend([x])[0], sampling))  # [2, V]: after the prompt, after prompt + x
        lm.rollback([])
    p1 = rows[0][0]
    p2_given = torch.stack([r[1] for r in rows])
    p2 = (p1[:, None] * p2_given).sum(0)
    drafter = AASDDrafter(module, lm)
    firsts, seconds = [], []
    for seed in range(700):
        res = generate(lm, prompt, drafter, gamma=2, max_new_tokens=2, sampling=sampling, eos_token_id=[],
                       target_inputs=pixels, seed=seed)  # fmt: skip
        firsts.append(res.output_ids[0])
        seconds.append(res.output_ids[1])
    assert chi2_pvalue(firsts, p1) > 1e-3 and chi2_pvalue(seconds, p2) > 1e-3


def test_drafter_needs_the_target_cache():
    target = random_llava(heads=4)
    with pytest.raises(TypeError, match="CachedLM"):
        AASDDrafter(random_module(target), target)


def test_text_rows_replace_each_image_by_newline():
    prompt = torch.tensor([1] + [4093] * 16 + [7, 8] + [4093] * 16 + [9])
    assert baselines.replace_images(prompt, [198]).tolist() == [1, 198, 7, 8, 198, 9]


def test_cached_llava_target_stops_at_its_generation_config_eos():
    """``generate`` with a ``CachedLM`` target (as AASD needs) reads EOS from the wrapped model's generation config."""
    target = random_llava(layers=2, seed=6, heads=4)
    prompt, pixels = request(1, seed=3)
    free = autoregressive(target, prompt, max_new_tokens=12, eos_token_id=[], target_inputs=pixels).output_ids
    target.generation_config.eos_token_id = free[4]
    lm = CachedLM(target)
    res = generate(lm, prompt, AASDDrafter(random_module(target), lm), gamma=3, max_new_tokens=12, target_inputs=pixels)
    assert res.output_ids == free[: free.index(free[4]) + 1] and res.stop_reason == "eos"


def test_text_only_batches_of_the_data_file_keep_the_answers_and_drop_the_images():
    data = build_data(2, 1, scenarios=["describe", "nq"])
    rows = file_rows(data, "train")
    picks = torch.arange(len(rows))
    batch = rows.batch(picks)
    text = text_only_batch(batch, [198], rows.image_token_id, rows.image_tokens, vocab_size=4096)
    assert "pixel_values" not in text and IMAGE_TOKEN_ID not in text["input_ids"]
    for b in range(len(rows)):
        ids, prompt_len = rows.prompt(b)[0], len(rows.prompt(b)[0])
        n_images = int((ids == IMAGE_TOKEN_ID).sum()) // IMAGE_TOKENS
        kept = text["labels"][b][text["labels"][b] != -100].tolist()
        assert kept == rows.answers[b] == batch["input_ids"][b, prompt_len : prompt_len + len(kept)].tolist()
        shorter = int(batch["attention_mask"][b].sum() - text["attention_mask"][b].sum())
        assert shorter == n_images * (IMAGE_TOKENS - 1)


def test_own_cache_training_window_covers_the_prompt():
    """Target cache off, the module reads its own k'/v' of every position at inference, so training must too."""
    ids = torch.tensor([[1, 7, 8, 9, 20, 21, 2, 0]])
    labels = torch.tensor([[-100, -100, -100, -100, 20, 21, 2, -100]])
    win, pos, valid = answer_window({"input_ids": ids, "labels": labels}, from_start=True)
    assert pos[0].tolist() == list(range(6)) and valid[0].tolist() == [False] * 3 + [True] * 3


def test_paper_profile_fails_fast_offline(monkeypatch):
    """The paper profile names the paper's datasets; offline, loading them fails at once with the fix to run."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert aasd_experiments.profile_targets("paper") == ["llava-hf/llava-1.5-7b-hf", "llava-hf/llava-1.5-13b-hf"]
    with pytest.raises(DatasetNotAvailableError, match="hf download"):
        aasd_experiments.load_requests(2, profile="paper")


def test_runs_are_keyed_by_the_weights_of_target_and_draft(tmp_path, monkeypatch):
    from specdec.aasd import experiments as ab
    from specdec.zoo.models import weights_digest, weights_identity

    w = {d: ab.weights_of(d, "tabed-target") for d in ("AR", "AASD", "AASD k=1", "AASD w/o image KV", "FT-LLaVA")}
    assert w["AR"] == weights_digest(weights_identity("tabed-target"))
    assert w["AASD"] == w["AASD w/o image KV"]  # same module, another context at inference
    assert len(set(w.values())) == 4 and ab.weights_of("AASD", "aasd-target-s") != w["AASD"]
    module = tmp_path / "aasd-module-tabed-target"
    module.mkdir()
    (module / "module.safetensors").write_bytes(b"retrained")
    # a retrained module, same target
    from specdec.aasd import zoo as aasd_zoo  # where the module folders are named

    monkeypatch.setattr(aasd_zoo, "module_name", lambda target, variant, train_seed=0: str(module))
    assert ab.weights_of("AASD", "tabed-target") != w["AASD"] and ab.weights_of("AR", "tabed-target") == w["AR"]


def test_a_row_id_that_names_another_request_is_run_again(tmp_path):
    from specdec import results
    from specdec.aasd import experiments as ab

    request = ab.load_requests(3)[0]  # one request of a task, with its image
    store = results.ResultStore("tiny", "runs", ab.KEY, root=tmp_path)
    loaded = ab.load_target("tabed-target")

    def run(rows):
        ab.experiment(store, "tiny", "table1", "tabed-target", rows, ["AASD"], [3], 4, loaded).run()

    run([request])
    run([request])  # the same request: done
    assert len(store.frame()) == 2  # AR and AASD
    reworded = {**request, "prompt": request["prompt"].replace("\n", " \n", 1)}
    run([reworded])
    frame = store.frame()
    assert len(frame) == 4 and frame.row.nunique() == 1 and frame.request.nunique() == 2
