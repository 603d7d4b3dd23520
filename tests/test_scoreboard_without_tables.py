"""Notebook 90 (the scoreboard) for a profile that has no tables yet stops with one error naming the notebooks to
run, not a raw FileNotFoundError of the first table it reads."""

from __future__ import annotations

import pytest

from specdec import results, zoo

KERNEL_INSTALLED = (zoo.ROOT / ".venv" / "share" / "jupyter" / "kernels" / "specdec").exists()


def test_no_tables_at_all_names_make_reproduce(tmp_path):
    with pytest.raises(results.MissingResults, match=r"profile 'paper' has no result tables yet") as error:
        results.require_tables("paper", tmp_path, {"peer_hf_assisted": "02_peer_hf_assisted"})
    assert "`make reproduce PROFILE=paper`" in str(error.value) and "run_notebooks.py --profile paper" in str(
        error.value
    )
    assert isinstance(error.value, FileNotFoundError)  # callers that catch a missing file still do


def test_a_missing_table_names_the_notebook_that_writes_it(tmp_path):
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "cos_main.csv").write_text("a\n1\n")
    with pytest.raises(results.MissingResults, match="lacks peer_hf_assisted.csv") as error:
        results.require_tables("paper", tmp_path, {"peer_hf_assisted": "02_peer_hf_assisted"})
    assert "--profile paper --only 02_` (02_peer_hf_assisted)" in str(error.value)
    (tmp_path / "paper" / "peer_hf_assisted.csv").write_text("a\n1\n")
    paths = results.require_tables("paper", tmp_path, {"peer_hf_assisted": "02_peer_hf_assisted"})
    assert paths == {"peer_hf_assisted": tmp_path / "paper" / "peer_hf_assisted.csv"}


@pytest.mark.skipif(not KERNEL_INSTALLED, reason="needs the specdec kernel (make install)")
def test_notebook_90_for_a_profile_without_tables_names_the_fix(tmp_path, monkeypatch):
    import papermill

    monkeypatch.setenv("SPECDEC_OUTPUT_DIR", str(tmp_path / "out"))  # the kernel's results/: empty
    with pytest.raises(papermill.PapermillExecutionError) as error:
        papermill.execute_notebook(
            str(zoo.ROOT / "notebooks" / "90_scoreboard.ipynb"),
            str(tmp_path / "90.ipynb"),
            parameters={"profile": "paper"},
            kernel_name="specdec",
            cwd=str(zoo.ROOT / "notebooks"),
            progress_bar=False,
        )
    assert error.value.ename == "MissingResults"
    assert "profile 'paper' has no result tables yet" in error.value.evalue
    assert "make reproduce PROFILE=paper" in error.value.evalue
