"""The AASD zoo's sizes and training settings (``specdec.aasd.train`` builds it; the data card explains them).

Every choice here is the project's: the paper gives no module size, depth, training data, steps or loss.
"""

from __future__ import annotations

from specdec.vlm.train import TABED_TRAIN, VISION

# The second target ("LLaVA-7B" to tabed-target's "13B"): a smaller text model on the same data file, trained by
# the same loop (``vlm.train.train_model``); on CPU, one thread, so fewer and smaller steps than tabed-target.
SECOND_TARGET = "aasd-target-s"
TARGET_SPECS: dict[str, dict] = {
    SECOND_TARGET: dict(
        text=dict(
            hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=3
        ),
        vision=VISION,
        max_images=5,
        seed=20,
        train=dict(TABED_TRAIN, steps=350, batch_size=32),
    ),
}
TARGETS = ("tabed-target", SECOND_TARGET)
# ablation variants of the module (tiny: trained on tabed-target): name suffix -> module settings
MODULE_VARIANTS = {
    "noproj": dict(projector_k=None),
    "k1": dict(projector_k=1),
    "own": dict(context="own"),
}


def module_name(target: str, variant: str = "") -> str:
    """The zoo folder of a target's module (``target``: a zoo name or a hub id)."""
    return f"aasd-module-{target.split('/')[-1]}" + (f"-{variant}" if variant else "")
