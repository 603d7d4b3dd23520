"""The shipped tiny zoo: present, small, sharing one vocabulary, and lossless under greedy SD."""

import pytest

from specdec import zoo
from specdec.engine import autoregressive, generate
from specdec.zoo import tasks


def test_weights_are_shipped_and_small():
    # not the AASD targets' answer caches (distill-*.jsonl, gitignored: python -m specdec.aasd.train answers)
    total = sum(f.stat().st_size for f in zoo.MODELS.rglob("*") if f.is_file() and not f.name.startswith("distill-"))
    assert total <= 80 * 2**20, f"data/models holds {total / 2**20:.1f} MiB (the developers' guide's limit: 80)"
    for name in zoo.TINY_ZOO:
        assert (zoo.model_dir(name) / "model.safetensors").exists(), f"{name} weights missing: run `make models`"


def test_drafts_are_5_to_20_times_smaller(zoo):
    target, draft_s, draft_xs, _ = zoo
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    for draft in (draft_s, draft_xs):
        assert 5 <= n(target) / n(draft) <= 20
    assert 1e6 <= n(target) <= 10e6


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_sd_is_lossless_on_heldout_prompts(zoo, gamma):
    target, draft_s, draft_xs, tokenizer = zoo
    prompts = tasks.heldout_prompts(n=17)  # 17 per kind x 3 kinds = 51 prompts
    assert len(prompts) >= 50
    for i, p in enumerate(prompts):
        ids = tasks.encode(tokenizer, p["prompt"])
        draft = draft_s if i % 2 == 0 else draft_xs
        ar = autoregressive(target, ids, max_new_tokens=24, eos_token_id=tokenizer.eos_token_id)
        sd = generate(target, ids, draft, gamma=gamma, max_new_tokens=24, eos_token_id=tokenizer.eos_token_id)
        assert sd.output_ids == ar.output_ids, (p["id"], gamma)
