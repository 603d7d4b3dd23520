"""Notebook 01 (a) and notebook 02's findings as verdicts, on hand-built rows."""

import pandas as pd
import pytest

from specdec import paper, peer
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE


def test_the_tabed_headline_is_recomputed_from_the_papers_tables():
    v = paper.tabed_headline_verdict()
    assert v.status == HOLDS and round(v.estimate, 2) == 1.74 and v.n == 4


def _peer_rows(n, sd_seconds, same=True, jitter=0.0):
    return pd.DataFrame(
        {
            "same_text": [same] * n,
            "new_tokens": [48] * n,
            "hf_seconds": [1.0 + jitter * ((i % 3) - 1) for i in range(n)],
            "specdec_seconds": [sd_seconds + jitter * (((i + 1) % 3) - 1) for i in range(n)],
        }
    )


@pytest.mark.parametrize(
    "sd_seconds,jitter,status", [(0.75, 0.02, HOLDS), (1.3, 0.02, FAILS), (0.98, 0.3, INCONCLUSIVE)]
)
def test_peer_speed(sd_seconds, jitter, status):
    same, speed = peer.peer_verdicts(_peer_rows(9, sd_seconds, jitter=jitter))
    assert same.status == HOLDS and speed.status == status and speed.n == 9
    assert speed.estimate == pytest.approx(1.0 / sd_seconds, rel=0.05)


def test_one_different_text_fails_the_peer_check():
    rows = _peer_rows(4, 0.8)
    rows.loc[2, "same_text"] = False
    assert peer.peer_verdicts(rows)[0].status == FAILS
