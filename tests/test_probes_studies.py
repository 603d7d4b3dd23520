"""Bad-input probes of the studies' notebook-facing functions and the harness (issue 45): each is a hostile call
with the one clear error it must raise (type and message), before anything is loaded or written. What is still
unclear or wrong is listed in ``tests/test_probes_api.py`` (``KNOWN_UNCLEAR``, ``KNOWN_WRONG``)."""

import pytest
import torch

from specdec.aasd import algorithm as aasd_algorithm
from specdec.aasd import experiments as aasd_experiments
from specdec.harness.profile import Profile

RAISES = {  # name: (call, error type, message pattern)
    "aasd.load_requests of a string seed": (
        lambda: aasd_experiments.load_requests(1, seed="a"),
        TypeError,
        "seed must be an integer >= 0, got 'a'",
    ),
    "aasd.weights_of an unknown target": (
        lambda: aasd_experiments.weights_of("AASD", "no-such-target"),
        ValueError,
        "unknown AASD target 'no-such-target'.*choose one of",
    ),
    "aasd.repeat_kv of 0 repeats": (
        lambda: aasd_algorithm.repeat_kv(torch.zeros(1, 2, 3, 4), 0),
        ValueError,
        "n_rep must be an integer >= 1",
    ),
    "aasd.rope_tables of an odd head_dim": (
        lambda: aasd_algorithm.rope_tables(torch.arange(3), 5, 1e4),
        ValueError,
        "head_dim must be an even integer >= 2",
    ),
    "aasd.rope_tables of a base below 1": (
        lambda: aasd_algorithm.rope_tables(torch.arange(3), 4, 0.5),
        ValueError,
        "theta must be a finite number > 1",
    ),
    "Profile.load of a device this machine lacks": (
        lambda: Profile.load("tiny", device="cuda:99"),
        ValueError,
        "device 'cuda:99' is not on this machine",
    ),
}


@pytest.mark.parametrize("name", sorted(RAISES))
def test_a_bad_call_raises_one_clear_error(name):
    call, error, match = RAISES[name]
    with pytest.raises(error, match=match):
        call()


def test_rope_and_repeat_of_legal_arguments():
    cos, sin = aasd_algorithm.rope_tables(torch.arange(3), 4, 1e4)
    assert cos.shape == sin.shape == (3, 4) and float(cos[0].min()) == 1.0
    x = torch.randn(1, 2, 3, 4)
    assert aasd_algorithm.repeat_kv(x, 1) is x and aasd_algorithm.repeat_kv(x, 2).shape == (1, 4, 3, 4)
