"""Bad-input probes of issue 28, part 2: multilingual and AASD entry points, the ResultStore, hub and model loaders,
notebook parameters and the loaders of user-given files. Each probe asserts its clear error (message matched) or the
correct result of a legal edge case; nothing here trains or loads more than the tiny shipped models."""

import ast
import math
import pathlib
import sys

import numpy as np
import pytest
import torch

from specdec import notebook_params, results
from specdec.aasd import experiments as aasd_experiments
from specdec.cos import algorithm as cos_algorithm
from specdec.multilingual import drafters as ml_drafters
from specdec.multilingual import experiments as ml_experiments
from specdec.multilingual import tables as ml_tables
from specdec.results import ResultStore
from specdec.zoo import ROOT
from specdec.zoo.models import load, load_collab, load_pair, load_profile

sys.path.insert(0, str(ROOT / "scripts"))
import run_notebooks  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"


# ------------------------------------------------------------------------------------------------- multilingual
@pytest.mark.parametrize(
    "a, b, match",
    [
        ([], [], "non-empty"),  # p = 0.0 on no data was a verdict on nothing
        ([1.0, 2.0], [1.0], "equally long"),
        ([[1.0, 2.0]], [[1.0, 2.0]], "1-D"),
    ],
)
def test_paired_bootstrap_refuses(a, b, match):
    with pytest.raises(ValueError, match=match):
        ml_tables.paired_bootstrap(a, b)


def test_paired_bootstrap_of_one_item_and_of_equal_samples():
    assert ml_tables.paired_bootstrap([1.0], [0.0])["n"] == 1
    same = ml_tables.paired_bootstrap([0.5, 0.7, 0.1], [0.5, 0.7, 0.1])
    assert same["mean_diff"] == 0.0 and same["p_value"] == 1.0


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: ml_drafters.drafter_name("sps-ff", "de"), ValueError, r"unknown multilingual method 'sps-ff'"),
        (lambda: ml_drafters.drafter_name("SpS-F", "de"), ValueError, "choose one of"),
        (
            lambda: ml_experiments.prompt_set(ml_experiments.Drafters("tiny"), "django", "de", "en", 0),
            ValueError,
            "n must be an integer >= 1",
        ),
        (
            lambda: ml_experiments.prompt_set(ml_experiments.Drafters("tiny"), "django", "de", "en", -3),
            ValueError,
            "n must be an integer >= 1",
        ),
        (
            lambda: ml_experiments.prompt_set(ml_experiments.Drafters("tiny"), "django", "de", "en", "2"),
            TypeError,
            "n must be an integer",
        ),
        (
            lambda: ml_experiments.prompt_set(ml_experiments.Drafters("tiny"), "djanog", "de", "en", 2),
            ValueError,
            r"unknown source 'djanog' \(did you",
        ),
        (lambda: ml_experiments.Drafters("papr"), ValueError, "unknown profile"),
        (
            lambda: ml_experiments.prompt_set(ml_experiments.Drafters("tiny"), "django", "xx", "en", 2),
            ValueError,
            "unknown language 'xx'",
        ),
        (
            lambda: ml_experiments.prompt_set(ml_experiments.Drafters("tiny"), "django", "de", "de", 2),
            ValueError,
            "both 'de'",
        ),
    ],
)
def test_multilingual_entry_points_refuse(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_typo_method_is_not_stored_as_plain_decoding():
    prompt = {"id": "x", "ids": torch.tensor([1, 5]), "reference": ""}
    with pytest.raises(ValueError, match="method 'sps-ff' has no drafter"):
        ml_experiments.run_group(
            ml_experiments.Drafters("tiny"),
            None,
            {"sps-ff": None},
            prompt,
            gamma=2,
            temperature=0.0,
            seed=0,
            max_new_tokens=2,
        )


# --------------------------------------------------------------------------------------------------------- AASD
@pytest.mark.parametrize("n", [0, -5, 2.5, True])
def test_aasd_requests_need_a_positive_count(n):
    with pytest.raises((ValueError, TypeError), match="n_per_task must be an integer"):
        aasd_experiments.load_requests(n)


@pytest.mark.parametrize("name", ["AASDD", "FT-LLaMa", "AASD k=2", ""])
def test_aasd_draft_names_are_checked(name):
    with pytest.raises(ValueError, match="unknown AASD draft"):
        aasd_experiments.draft_source(name, "tabed-target")


def test_aasd_a_small_legal_count_gives_one_request_per_subtask():
    rows = aasd_experiments.load_requests(1)
    assert len({(r["task"], r["subtask"]) for r in rows}) == len(rows)


@pytest.mark.parametrize("n", [0, -1])
def test_tabed_suite_needs_a_positive_count(n):
    from specdec.tabed import data as tabed_data

    with pytest.raises(ValueError, match="n_per_scenario must be an integer >= 1"):
        tabed_data.load_suite("tiny", n)
    with pytest.raises(ValueError, match="n_second must be an integer >= 1"):
        tabed_data.load_suite("tiny", 1, n_second=n)


# ------------------------------------------------------------------------------------------------- ResultStore
@pytest.mark.parametrize(
    "profile, table, key, match",
    [
        ("..", "t", ["k"], "profile must be a non-empty name"),
        ("../elsewhere", "t", ["k"], "must stay inside its folder"),
        ("tiny", "../../x", ["k"], "must stay inside its folder"),
        ("tiny", "/etc/x", ["k"], "must stay inside its folder"),
        ("tiny", "a/../../b", ["k"], "must stay inside its folder"),
        ("tiny", "", ["k"], "table must be a non-empty name"),
        ("", "t", ["k"], "profile must be a non-empty name"),
        ("tiny", None, ["k"], "table must be a non-empty name"),
        ("tiny", "t", [], "at least one key column"),
        ("tiny", "t", ["a", "a"], "distinct"),
        ("tiny", "t", ["a", ""], "non-empty column names"),
        ("tiny", "t", [1], "column names"),
    ],
)
def test_store_refuses_bad_names_and_keys(tmp_path, profile, table, key, match):
    with pytest.raises(ValueError, match=match):
        ResultStore(profile, table, key, root=tmp_path)
    assert not any(tmp_path.parent.glob("x*.csv"))


def test_a_str_key_is_one_column(tmp_path):
    store = ResultStore("tiny", "t", "prompt", root=tmp_path)
    assert store.key == ["prompt"]
    store.append([{"prompt": "abc", "v": 1}])
    assert store.done(prompt="abc") and not store.done(prompt="a")


@pytest.mark.parametrize(
    "first, second, same",
    [
        (None, None, True),  # None is written as '' and matched as ''
        (0.1234567, 0.1234568, False),  # float keys are exact, not 6 significant digits
        (0.1, 0.1, True),
        (0.0, 0, True),  # 0.0 and 0 are one key, as committed tables hold "0"
        (1e-7, 1.00000001e-7, False),
        (np.float64(0.3), 0.3, True),
        (np.int64(5), 5, True),
        ("x" * 200_000, "x" * 200_000, True),  # a long text key
        (math.nan, math.nan, True),
        (True, "True", True),
    ],
)
def test_store_keys_are_typed(tmp_path, first, second, same):
    store = ResultStore("tiny", "t", ["k"], root=tmp_path)
    store.append([{"k": first, "v": 1}])
    again = ResultStore("tiny", "t", ["k"], root=tmp_path)  # a rerun: keys read back from the file
    assert again.done(k=first)
    assert again.done(k=second) == same
    again.append([{"k": first, "v": 2}])  # already stored: no duplicate row
    assert len(again.rows()) == 1


def test_a_none_key_does_not_append_a_duplicate_on_every_run(tmp_path):
    for _ in range(3):
        store = ResultStore("tiny", "t", ["a", "b"], root=tmp_path)
        store.run([{"a": 1, "b": None}], lambda a, b: {"v": 0})
    assert len(store.rows()) == 1


def test_a_cell_longer_than_the_csv_field_limit_reads_back(tmp_path):
    text = "word " * 40_000  # 200,000 characters: over csv's default 131,072 limit
    ResultStore("tiny", "t", ["k"], root=tmp_path).append([{"k": 1, "text": text}])
    store = ResultStore("tiny", "t", ["k"], root=tmp_path)
    assert store.get(k=1)["text"] == text and store.frame().text[0] == text


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.9])
def test_a_file_cut_inside_a_quoted_multiline_cell_is_repaired(tmp_path, cut):
    store = ResultStore("tiny", "t", ["k"], root=tmp_path)
    store.append([{"k": 1, "text": "line one\nline two"}])
    whole = store.path.read_bytes()
    store.append([{"k": 2, "text": 'first "quoted" line\nsecond line\nthird'}])
    data = store.path.read_bytes()
    start = len(whole) + data[len(whole) :].index(b"\n") + 1  # a cut after a line break inside row 2's cell
    store.path.write_bytes(data[: max(start, len(whole) + int(cut * (len(data) - len(whole))))])
    again = ResultStore("tiny", "t", ["k"], root=tmp_path)
    assert not again.done(k=2) and again.done(k=1)  # the cut row is not counted as done
    again.append([{"k": 2, "text": "redone"}, {"k": 3, "text": "next"}])
    frame = ResultStore("tiny", "t", ["k"], root=tmp_path).frame()
    assert frame.k.tolist() == [1, 2, 3] and frame.text.tolist() == ["line one\nline two", "redone", "next"]


def test_complete_prefix_of_csv_bytes():
    assert results.complete_prefix(b"a,b\n1,2\n") == 8
    assert results.complete_prefix(b'a,b\n1,"x\n') == 4
    assert results.complete_prefix(b'a,b\n1,"x\ny"\n2,"""q""\n') == 12  # row 2's quoted cell is still open
    assert results.complete_prefix(b'a,b\n1,"x\ny"\n2,"""q"""\n') == 22
    assert results.complete_prefix(b"a,b") == 0


# ---------------------------------------------------------------------------------------------- hub and loaders
@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: load("tiny-targt"), ValueError, r"unknown zoo model 'tiny-targt' \(did you mean 'tiny-target'\?\)"),
        (lambda: load("tabed-targt", kind="llava"), ValueError, "did you mean 'tabed-target'"),
        (lambda: load("tiny-target", kind="lava"), ValueError, "kind must be 'causal_lm' or 'llava'"),
        (lambda: load("./no/such/dir"), Exception, "no model directory at"),
        (lambda: load_profile("tinyy"), ValueError, "unknown profile 'tinyy'"),
        (lambda: load_pair("tiny", "defalt"), ValueError, "has no pair 'defalt'"),
        (lambda: load_collab("tiny", "we4"), ValueError, "no collaborative model set 'we4'"),
        (lambda: cos_algorithm.make_combination("zz", 2), ValueError, "unknown combination 'zz'"),
    ],
)
def test_loaders_name_the_bad_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_user_given_files_are_loaded_with_weights_only():
    """``torch.load`` on a path a user passes must not unpickle code (``weights_only=True`` everywhere)."""
    unsafe = []
    for path in sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "scripts").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "torch.load":
                only = [k for k in node.keywords if k.arg == "weights_only"]
                if not only or ast.unparse(only[0].value) != "True":
                    unsafe.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not unsafe


def test_a_crafted_pickle_is_refused(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("ran code",))

    path = tmp_path / "data.pt"
    torch.save({"x": Payload()}, path)
    with pytest.raises(Exception, match="Weights only load failed|Unsupported"):
        torch.load(path, weights_only=True)


# ------------------------------------------------------------------------------------------ notebook parameters
def nb(prefix: str) -> pathlib.Path:
    return next(NOTEBOOKS.glob(f"{prefix}*.ipynb"))


@pytest.mark.parametrize(
    "prefix, params, error, match",
    [
        ("40_", {"n_per_task": -5}, ValueError, "parameter n_per_task must be an integer >= 1, got -5"),
        ("40_", {"n_per_task": 0}, ValueError, "n_per_task must be an integer >= 1"),
        ("10_", {"n_per_scenario": -1}, ValueError, "n_per_scenario must be an integer >= 1"),
        ("10_", {"n_per_scenaro": 3}, ValueError, r"unknown parameter .* 'n_per_scenaro' \(did you mean"),
        ("10_", {"methods": ["MX"]}, ValueError, r"parameter methods 'MX' \(did you mean 'M'\?\)"),
        ("10_", {"methods": "MT"}, TypeError, "parameter methods must be list"),
        ("10_", {"gamma": 2.5}, TypeError, "parameter gamma must be int"),
        ("10_", {"gamma": True}, TypeError, "parameter gamma must be int"),
        ("10_", {"max_new_tokens": "64"}, TypeError, "max_new_tokens must be int"),
        ("12_", {"windows": [0]}, ValueError, "parameter windows entries must be an integer >= 1"),
        ("12_", {"windows": []}, ValueError, "must list at least one size"),
        ("12_", {"criteria": ["hardd"]}, ValueError, "did you mean 'hard'"),
        ("12_", {"paper_latency_ratio": math.nan}, TypeError, "finite numbers only"),
        ("14_", {"image_counts": [0, 2]}, ValueError, "image_counts entries must be an integer >= 1"),
        ("14_", {"image_counts": ["5"]}, TypeError, "image_counts entries must be an integer"),
        ("20_", {"tasks": ["gsm8"]}, ValueError, "did you mean 'gsm8k'"),
        ("20_", {"n_prompts": 0}, ValueError, "n_prompts must be an integer >= 1"),
        ("20_", {"lam": "0.5"}, TypeError, "parameter lam must be float"),
        ("21_", {"gammas": [1, -2]}, ValueError, "gammas entries must be an integer >= 1"),
        ("30_", {"pairs": ["de", "xx"]}, ValueError, "parameter pairs 'xx'"),
        ("30_", {"n_prompts": -1}, ValueError, "n_prompts must be an integer >= 1"),
        ("31_", {"lang": "ge"}, ValueError, "parameter lang 'ge'"),
        ("40_", {"drafts": ["AASDD"]}, ValueError, "did you mean 'AASD'"),
        ("41_", {"target": 3}, TypeError, "parameter target must be str"),
        ("00_", {"profile": "papr"}, ValueError, "did you mean 'paper'"),
        ("90_", {"seed": 1}, ValueError, "unknown parameter"),
        ("01_", {"real_sizes": "yes"}, TypeError, "real_sizes must be bool"),
        ("02_", {"runs": 0}, ValueError, "runs must be an integer >= 1"),
    ],
)
def test_notebook_parameters_are_checked(prefix, params, error, match):
    path = nb(prefix)
    with pytest.raises(error, match=match):
        notebook_params.check(params, notebook_params.declared(path), path.name)


@pytest.mark.parametrize(
    "prefix, params",
    [
        ("30_", {"n_prompts": None, "seed": 0}),  # None: every held-out pair
        ("12_", {"windows": [1, "ALL"], "paper_latency_ratio": None}),
        ("40_", {"targets": [], "device": ""}),
        ("20_", {"lam": 1}),  # an int where a float is declared
        ("00_", {"seed": -1}),  # a seed is not a size
    ],
)
def test_legal_notebook_parameters_pass(prefix, params):
    path = nb(prefix)
    assert notebook_params.check(params, notebook_params.declared(path), path.name) == params


def test_every_notebook_checks_its_parameters_in_its_first_code_cell():
    import json

    for path in sorted(NOTEBOOKS.glob("[0-9]*.ipynb")):
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        first = next(c for c in cells if not {"parameters", "injected-parameters"} & set(c["metadata"].get("tags", [])))
        assert "check_parameters(globals())" in "".join(first["source"]).splitlines()[0], path.name
        assert notebook_params.declared(path), path.name


def test_the_runner_refuses_a_typo_before_running_anything(capsys):
    code = run_notebooks.main(["--only", "40_", "-p", "n_per_tsk", "5", "--notebooks-dir", str(NOTEBOOKS)])
    assert code == 2 and "unknown parameter" in capsys.readouterr().err


def test_the_runner_passes_a_name_only_to_the_notebooks_that_declare_it():
    jobs = [
        (nb("00_"), nb("00_"), {"profile": "tiny", "seed": 3}),
        (nb("90_"), nb("90_"), {"profile": "tiny", "seed": 3}),
    ]
    checked = run_notebooks.checked_jobs(jobs)
    assert checked[0][2] == {"profile": "tiny", "seed": 3} and checked[1][2] == {"profile": "tiny"}


def test_the_in_notebook_check_reads_the_namespace():
    namespace = {"__annotations__": {"n": int, "xs": list}, "n": 3, "xs": [1], "nn": 2, "In": [], "_": None}
    with pytest.raises(ValueError, match=r"unknown parameter of this notebook 'nn' \(did you mean 'n'\?\)"):
        notebook_params.check_parameters(namespace)
    del namespace["nn"]
    notebook_params.check_parameters(namespace)
    namespace["n"] = -4
    with pytest.raises(ValueError, match="parameter n must be an integer >= 1"):
        notebook_params.check_parameters(namespace)


# ------------------------------------------------------------------------------------ stale rows (issue 28 defect 1)
def test_tabed_latency_tables_are_keyed_by_the_image_counts(tmp_path, monkeypatch):
    from specdec.tabed import latency as tl

    monkeypatch.setattr(results, "RESULTS", tmp_path)
    setting = {"device": "cpu", "per_count": 1}
    first = tl.stored("tiny", "lat", {**setting, "image_counts": str([1, 2])}, lambda: [{"n_images": 1, "s": 0.1}])
    again = tl.stored("tiny", "lat", {**setting, "image_counts": str([5])}, lambda: [{"n_images": 5, "s": 0.5}])
    assert first.n_images.tolist() == [1] and again.n_images.tolist() == [5]  # not the [1, 2] run's rows
    exact = tl.stored("tiny", "lat2", {**setting, "x": 0.1234567}, lambda: [{"v": 1}])
    assert len(exact) == 1 and len(tl.stored("tiny", "lat2", {**setting, "x": 0.1234568}, lambda: [{"v": 2}])) == 1


def test_every_setting_of_notebooks_01_and_14_keys_their_tables():
    import csv
    import inspect

    from specdec.harness import engine_experiments as ee
    from specdec.tabed import experiments as tabed_experiments

    assert ee.SPEED_KEY == [
        "pair",
        "weights",
        "prompts",
        "gamma",
        "device",
        "max_new_tokens",
        "repeats",
        "latency_repeats",
    ]
    assert "summary.frame(requested=True)" in inspect.getsource(ee.engine_efficiency)
    assert '"image_counts": str(image_counts)' in inspect.getsource(tabed_experiments.Latency)
    for table, columns in [
        ("engine_efficiency", ["max_new_tokens", "repeats", "latency_repeats"]),
        ("engine_speed_rows", ["max_new_tokens", "repeats", "latency_repeats"]),
        ("tabed_latency_caption", ["image_counts"]),
        ("tabed_latency_components", ["image_counts"]),
        ("tabed_latency_steps", ["image_counts"]),
    ]:
        with (ROOT / "results" / "tiny" / f"{table}.csv").open(newline="") as f:
            assert set(columns) <= set(next(csv.reader(f))), table


def test_offline_errors_name_the_stand_in_hub(monkeypatch, tmp_path):
    from specdec import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(hub.ModelNotAvailableError, match="make standin-hub"):
        load("no-such-org/no-such-model")


def test_the_runner_leaves_a_notebook_without_a_parameters_cell_alone(tmp_path):
    import nbformat

    path = tmp_path / "00_x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), path)
    assert run_notebooks.checked_jobs([(path, path, {"profile": "tiny", "a": 1})])[0][2] == {"profile": "tiny", "a": 1}


def test_the_runners_own_device_default_is_no_typo_for_a_notebook_without_it(tmp_path):
    """paper-smoke ran notebook 90 alone with the paper profile's device default, which 90 does not declare."""
    import nbformat

    path = tmp_path / "90_x.ipynb"
    cell = nbformat.v4.new_code_cell('profile: str = "tiny"', metadata={"tags": ["parameters"]})
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    params = {"profile": "paper", "device": "cpu"}
    assert run_notebooks.checked_jobs([(path, path, params)], implicit={"device"})[0][2] == {"profile": "paper"}
    with pytest.raises(ValueError, match="device"):  # the same name given by the user is checked as before
        run_notebooks.checked_jobs([(path, path, params)])
