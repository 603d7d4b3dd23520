"""Bad-input probes of issue 45 ("bad input, round three"): each numbered case of the issue gives one clear error
before anything is written, or a correct result. Training CLIs (budgets, the committed zoo), the store's edges (a
last row without its line end, key encoding, merge duplicates, re-keying, provenance), the draft side (logits,
weights, pixels), strict checkpoints, notebook parameter ranges, late notebook crashes, sharded rows, stop strings,
CD's μ, uint8 pixels and path names. Random tiny models and temporary folders only: the file runs in seconds."""

import json
import math
import pathlib
import re
import shutil
import sys

import pytest
import torch

from conftest import probe_llama, random_llama
from specdec import notebook_params, results, sharding, validate
from specdec.cos import contrastive
from specdec.cos import train as cos_train
from specdec.drafters import ModelDrafter
from specdec.engine import generate
from specdec.multilingual import train as ml_train
from specdec.results import ResultStore
from specdec.zoo import MODELS, ROOT, cli
from specdec.zoo import training as zoo_training

sys.path.insert(0, str(ROOT / "scripts"))
import run_notebooks  # noqa: E402

NAN, INF = math.nan, math.inf
PROMPT = torch.tensor([1, 5, 6, 7])


@pytest.fixture(scope="module")
def nan_draft():
    """A draft whose weights are NaN (a broken checkpoint, a float16 overflow)."""
    return probe_llama(3, nan="model.layers.0.mlp.down_proj.weight")


# ---------------------------------------------------------------------------------------- 1. training CLIs
BAD_SCALES = ["0", "-1", "-0.5", "nan", "inf", "x"]


@pytest.mark.parametrize("scale", BAD_SCALES)
@pytest.mark.parametrize(
    "main, argv",
    [
        (cos_train.main, ["train", "--models", "cos-amateur", "--steps-scale"]),
        (zoo_training.main, ["--models", "tiny-draft-xs", "--steps-scale"]),
        (ml_train.main, ["train", "--steps-scale"]),
    ],
    ids=["cos.train", "zoo.training", "multilingual.train"],
)
def test_training_clis_refuse_a_step_scale_that_is_not_positive(main, argv, scale, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*argv, scale])
    assert exit_.value.code == 2
    assert "--steps-scale" in capsys.readouterr().err


@pytest.mark.parametrize("scale", [0, -1, 0.0, NAN, INF, "1", True, None])
def test_scaled_steps_refuses_a_bad_scale(scale):
    with pytest.raises(ValueError, match="steps_scale must be a finite number > 0"):
        cli.scaled_steps(100, scale)


def test_scaled_steps_of_good_scales():
    assert cli.scaled_steps(100, 1.0) == 100 and cli.scaled_steps(100, 0.001) == 1 and cli.scaled_steps(10, 2) == 20


def test_cos_train_all_refuses_before_writing(tmp_path):
    with pytest.raises(ValueError, match="steps_scale"):
        cos_train.train_all({"train": {}, "heldout": {}}, ["cos-amateur"], tmp_path / "out", steps_scale=0)
    with pytest.raises(ValueError, match="unknown models"):
        cos_train.train_all({"train": {}, "heldout": {}}, ["cos-amatuer"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_training_clis_default_to_a_folder_outside_the_committed_zoo(tmp_path, monkeypatch, capsys):
    """Without --out the weights go to .cache/trained; only an explicit --out data/models replaces the zoo."""
    streams = tmp_path / "streams.pt"
    torch.save({"train": {}, "heldout": {}}, streams)
    seen = []
    monkeypatch.setattr(cos_train, "train_all", lambda streams, names, out, **kw: seen.append(out))
    cos_train.main(["train", "--models", "cos-amateur", "--streams", str(streams)])
    cos_train.main(["train", "--models", "cos-amateur", "--streams", str(streams), "--out", str(MODELS)])
    assert seen == [cli.TRAINED, MODELS]
    assert not cli.TRAINED.resolve().is_relative_to(MODELS.resolve())
    assert "no --out given" in capsys.readouterr().out


@pytest.mark.parametrize("module", ["aasd", "real_draft"])
def test_aasd_and_real_draft_training_default_outside_the_committed_weights(module, tmp_path, monkeypatch, capsys):
    """``aasd.train`` and ``zoo.real_draft train`` write into data/models (data/models-real) only when told so."""
    from specdec import realmodel
    from specdec.aasd import train as aasd_train
    from specdec.zoo import real_draft

    seen = []
    if module == "aasd":
        torch.save({}, tmp_path / "data.pt")
        monkeypatch.setattr(aasd_train, "tiny", lambda step, data, out, *a, **kw: seen.append(out))
        argv, main, committed = ["modules", "--data", str(tmp_path / "data.pt")], aasd_train.main, MODELS
    else:
        monkeypatch.setattr(real_draft, "train_draft", lambda out=None: seen.append(out.parent) or {})
        argv, main, committed = ["train"], real_draft.main, realmodel.REAL_MODELS
    main(argv)
    main([*argv, "--out", str(committed)])
    assert seen == [cli.TRAINED, committed] and "no --out given" in capsys.readouterr().out


def test_multilingual_drafters_need_an_explicit_models_folder(capsys):
    with pytest.raises(SystemExit):
        ml_train.main(["drafters"])
    assert "--out data/models" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["train", "--prompts-per-set", "0"], ["train", "--threads", "-2"]])
def test_multilingual_train_refuses_non_positive_counts(argv):
    with pytest.raises(SystemExit):
        ml_train.main(argv)


@pytest.mark.parametrize("argv", [["--models", "tiny-draft-xx"], ["--threads", "-1"]])
def test_zoo_training_refuses_unknown_models_and_negative_threads(argv):
    with pytest.raises(SystemExit):
        zoo_training.main(argv)


def test_make_models_targets_name_the_committed_zoo_explicitly():
    """``make models*`` keep writing into data/models: each training command there names it (--out)."""
    makefile = (ROOT / "Makefile").read_text()
    commands = re.findall(r"-m (specdec\.[\w.]+(?:train|training)\b[^\n]*)", makefile)
    assert len(commands) == 5
    assert all("--out data/models" in c for c in commands), commands


# ----------------------------------------------------------------------- 2. a last row without its line end
def test_store_keeps_a_last_row_without_its_line_end_and_never_rewrites_on_read(tmp_path):
    (tmp_path / "p").mkdir()
    path = tmp_path / "p" / "t.csv"
    path.write_bytes(b"k,v\n1,a\n2,b")
    store = ResultStore("p", "t", ["k"], root=tmp_path)
    assert store.rows() == [{"k": "1", "v": "a"}, {"k": "2", "v": "b"}]
    assert list(store.frame().k) == [1, 2]
    assert path.read_bytes() == b"k,v\n1,a\n2,b"  # a read leaves the file as it is
    store.append([{"k": 3, "v": "c"}])  # a write completes the last line first
    assert path.read_bytes() == b"k,v\n1,a\n2,b\r\n3,c\r\n"


def test_store_leaves_out_a_row_cut_inside_a_quoted_cell(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "t.csv").write_bytes(b'k,v\n1,a\n2,"b')
    assert ResultStore("p", "t", ["k"], root=tmp_path).rows() == [{"k": "1", "v": "a"}]


# ------------------------------------------------------------------------------------------- 3. the draft side
def test_a_draft_with_nan_weights_stops_with_a_clear_error(target, nan_draft):
    with pytest.raises(FloatingPointError, match="the draft's .* hold NaN or inf"):
        generate(target, PROMPT, nan_draft, max_new_tokens=4, gamma=2)


def test_a_batched_draft_with_nan_weights_stops_with_a_clear_error(target, nan_draft):
    from specdec.batching import generate_batch

    with pytest.raises(FloatingPointError, match="the draft's"):
        generate_batch(target, [PROMPT, PROMPT[:3]], nan_draft, max_new_tokens=4, gamma=2)


class _BrokenDrafter:
    """A protocol drafter whose probabilities are NaN (a custom drafter, not ``ModelDrafter``)."""

    vocab_size = 64
    calls = tokens_fed = 0

    def prefill(self, prompt_ids, **_):
        pass

    def propose(self, generated, gamma, sampling, generator=None):
        return torch.ones(gamma, dtype=torch.long), torch.full((gamma, 64), NAN)

    def rollback(self, generated):
        pass


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_nan_draft_probabilities_of_any_drafter_are_an_error(target, temperature):
    from specdec.sampling import SamplingConfig

    with pytest.raises(FloatingPointError, match="the draft's probabilities"):
        generate(target, PROMPT, _BrokenDrafter(), max_new_tokens=4, gamma=2, sampling=SamplingConfig(temperature))


@pytest.mark.parametrize("fill", [NAN, INF])
def test_non_finite_draft_logits_of_an_ensemble_are_an_error(target, fill):
    draft = probe_llama(4)
    with torch.no_grad():
        draft.lm_head.weight[3].fill_(fill)
    drafter = ModelDrafter(draft, make_rows=lambda p: [p, p[1:]], weights=[0.5, 0.5])
    with pytest.raises(FloatingPointError, match="the draft's"):
        generate(target, PROMPT, drafter, max_new_tokens=4, gamma=2)


@pytest.mark.parametrize(
    "inputs, error, match",
    [
        ({"pixel_values": torch.full((1, 3, 4, 4), NAN)}, ValueError, r"draft_inputs\['pixel_values'\] holds"),
        ({"pixel_values": torch.full((1, 3, 4, 4), INF)}, ValueError, "non-finite"),
        ({"pixel_values": torch.zeros((1, 3, 4, 4), dtype=torch.uint8)}, TypeError, "not raw image bytes"),
        ([torch.zeros(1)], TypeError, "draft_inputs must be a dict"),
    ],
)
def test_draft_only_inputs_are_checked_like_the_targets(target, inputs, error, match):
    draft = probe_llama(1)
    with pytest.raises(error, match=match):
        generate(target, PROMPT, draft, max_new_tokens=2, draft_inputs=inputs)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.bool])
def test_integer_target_pixels_are_refused(target, dtype):
    with pytest.raises(TypeError, match="normalised floats"):
        pixels = torch.zeros(1, 3, 4, 4, dtype=dtype)
        generate(target, PROMPT, None, max_new_tokens=2, target_inputs={"pixel_values": pixels})


# --------------------------------------------------------------------------------------- 4. strict checkpoints
@pytest.fixture(scope="module")
def saved_draft(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt") / "draft"
    random_llama(64, 16, 2, seed=5, max_position_embeddings=32).save_pretrained(folder)
    return folder


def _edited(saved: pathlib.Path, tmp_path, **config) -> pathlib.Path:
    folder = tmp_path / "edited"
    shutil.copytree(saved, folder)
    data = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, **config}))
    return folder


@pytest.mark.parametrize(
    "config, match",
    [
        ({"num_hidden_layers": 3}, r"missing from the checkpoint .*model\.layers\.2\."),
        ({"num_hidden_layers": 1}, r"in the checkpoint but not the model .*model\.layers\.1\."),
        ({"intermediate_size": 24}, r"of another shape .*mlp\.down_proj\.weight \(checkpoint"),
    ],
)
def test_a_partial_or_mismatched_checkpoint_is_an_error_naming_its_tensors(saved_draft, tmp_path, config, match):
    from specdec.zoo.models import load

    with pytest.raises(ValueError, match=match):
        load(_edited(saved_draft, tmp_path, **config), with_tokenizer=False)


def test_a_renamed_tensor_is_an_error(saved_draft, tmp_path):
    from safetensors.torch import load_file, save_file

    from specdec.zoo.models import load

    folder = _edited(saved_draft, tmp_path)
    tensors = load_file(folder / "model.safetensors")
    tensors["model.norm.weight_renamed"] = tensors.pop("model.norm.weight")
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match=r"missing from the checkpoint 1: model\.norm\.weight"):
        load(folder, with_tokenizer=False)


def test_a_whole_checkpoint_loads(saved_draft):
    from specdec.zoo.models import load

    model, _ = load(saved_draft, with_tokenizer=False)
    assert model.config.num_hidden_layers == 2


def test_weights_identity_of_a_folder_without_safetensors_is_an_error(tmp_path):
    from specdec.zoo.models import weights_identity

    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="holds no \\*.safetensors"):
        weights_identity(tmp_path)


# ------------------------------------------------------------------------------- 5. notebook parameter ranges
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))


def _spec(prefix):
    return notebook_params.declared(next(nb for nb in NOTEBOOKS if nb.name.startswith(prefix)))


def test_every_float_list_and_dict_parameter_has_a_declared_range():
    missing = [
        f"{nb.name}: {name}"
        for nb in NOTEBOOKS
        for name, annotation in notebook_params.declared(nb).items()
        if any(t in annotation for t in ("float", "list", "dict")) and name not in notebook_params.RANGES
    ]
    assert missing == []


@pytest.mark.parametrize(
    "prefix, name, value, match",
    [
        ("12_", "paper_latency_ratio", -3.0, r"in \[0.0, 1.0\]"),
        ("12_", "paper_latency_ratio", 0.0, "must be > 0"),
        ("12_", "paper_latency_ratio", 7.0, r"in \[0.0, 1.0\]"),
        ("00_", "temperature", -0.5, ">= 0"),
        ("20_", "lam", 1.5, r"in \[0.0, 1.0\]"),
        ("20_", "mu", -0.1, r"in \[0.0, 10.0\]"),
        ("20_", "mu", 1e308, r"in \[0.0, 10.0\]"),
        ("20_", "configs", [], "non-empty list"),
        ("20_", "configs", [{"set": "we"}], "must have the keys"),
        ("20_", "configs", [{"set": "we", "temperature": -1.0}], ">= 0"),
        ("20_", "configs", [{"set": "we", "temperature": 1.0, "x": 1}], "must have the keys"),
        ("20_", "paper_pairs", {"we": ["cos_table2_we"]}, "list of two"),
        ("20_", "paper_pairs", {"we": "cos_table2_we"}, "list of two"),
        ("21_", "lams", [0.1, 1.1], r"lams\[1\]"),
        ("21_", "mus", [0.1, -0.2], r"mus\[1\]"),
        ("21_", "tradeoff_lams", [], "non-empty"),
        ("22_", "c2_gammas", {"we": 0}, ">= 1"),
        ("22_", "c2_gammas", {"we": 1.5}, "integer"),
        ("22_", "paper_apf_pairs", {"we": ""}, "non-empty string"),
        ("30_", "temperatures", [-1.0], ">= 0"),
        ("30_", "temperatures", [], "non-empty"),
        ("30_", "seeds", [0.5], "integer"),
        ("30_", "pairs", [], "non-empty"),
        ("01_", "batch_sizes", [0], ">= 1"),
        ("12_", "criteria", [""], "non-empty string"),
        ("32_", "langs", [], "non-empty"),
        ("40_", "drafts", [], "non-empty"),
    ],
)
def test_notebook_parameters_out_of_their_declared_range_are_refused(prefix, name, value, match):
    with pytest.raises((ValueError, TypeError), match=match):
        notebook_params.check({name: value}, _spec(prefix), prefix)


@pytest.mark.parametrize(
    "prefix, name, value",
    [
        ("12_", "paper_latency_ratio", None),
        ("12_", "paper_latency_ratio", 0.063),
        ("20_", "lam", 0.0),
        ("20_", "mu", 0.0),
        ("20_", "configs", [{"set": "cd", "temperature": 0.0}]),
        ("40_", "targets", []),
        ("10_", "paper_setting", None),
        ("12_", "windows", [1, "ALL"]),
    ],
)
def test_notebook_parameters_inside_their_range_pass(prefix, name, value):
    assert notebook_params.check({name: value}, _spec(prefix), prefix) == {name: value}


# ------------------------------------------------------------------------ 6. legal parameters that crashed late
def test_figures_over_a_parameter_list_keep_one_axes_iterable():
    """``plt.subplots(1, len(x))`` returns a bare Axes for one entry: notebook 20 with one config failed with "'Axes'
    object is not iterable". Every subplot grid sized by a parameter keeps its axes an array."""
    bad = []
    for nb in NOTEBOOKS:
        for cell in json.loads(nb.read_text())["cells"]:
            source = "".join(cell["source"])
            for call in re.findall(r"[^\n]*plt\.subplots\([^\n]*len\([^\n]*\n[^\n]*", source):
                if "squeeze=False" not in call and "atleast_1d" not in call:
                    bad.append(f"{nb.name}: {call.splitlines()[0]}")
    assert bad == []


# ------------------------------------------------------------------------------------ 7. sharded rows all kept
class _TwoRows:
    def __call__(self, store):
        return lambda k: [{"part": 0, "v": k * 10}, {"part": 1, "v": k * 10 + 1}]


def test_run_sharded_keeps_every_row_compute_returns(tmp_path):
    keys = [{"k": i} for i in range(6)]
    sharded = ResultStore("p", "sharded", ["k"], root=tmp_path)
    sharding.run_sharded(sharded, keys, _TwoRows(), shards=3)
    plain = ResultStore("p", "plain", ["k"], root=tmp_path)
    plain.run(keys, _TwoRows()(plain))
    assert len(sharded.rows()) == len(plain.rows()) == 12
    order = lambda rows: sorted((r["k"], r["part"], r["v"]) for r in rows)  # noqa: E731
    assert order(sharded.rows()) == order(plain.rows())


# -------------------------------------------------------------------------------------- 8. store key integrity
@pytest.mark.parametrize(
    "first, second",
    [({"x": 0.0}, {"x": -0.0}), ({"x": None}, {"x": ""}), ({"x": 1}, {"x": 1.0}), ({"x": 0.5}, {"x": 0.50000})],
)
def test_store_key_values_have_one_encoding(tmp_path, first, second):
    store = ResultStore("p", "t", ["x"], root=tmp_path)
    store.append([{**first, "v": 1}])
    assert store.done(**second)
    store.append([{**second, "v": 2}])
    assert len(store.rows()) == 1


def test_store_keeps_close_floats_apart(tmp_path):
    store = ResultStore("p", "t", ["x"], root=tmp_path)
    store.append([{"x": 0.1234567, "v": 1}, {"x": 0.1234568, "v": 2}])
    assert len(store.rows()) == 2


def test_store_reports_a_duplicate_key_from_a_merge(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "t.csv").write_text("k,v\n1,a\n2,b\n1,a\n")
    with pytest.raises(ValueError, match=r"apart \(a duplicate from a merge\?\).*'k': '1'.*rows \[1, 3\]"):
        ResultStore("p", "t", ["k"], root=tmp_path).rows()


def test_store_keeps_the_consecutive_rows_of_one_key(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "t.csv").write_text("k,v\n1,a\n1,b\n2,c\n")
    assert len(ResultStore("p", "t", ["k"], root=tmp_path).rows()) == 3


def test_store_refuses_to_re_key_a_table(tmp_path):
    store = ResultStore("p", "t", ["a", "b"], root=tmp_path)
    store.append([{"a": 1, "b": 2, "v": 3}])
    with pytest.raises(ValueError, match=r"written with the key columns \['a', 'b'\], opened with \['a'\]"):
        ResultStore("p", "t", ["a"], root=tmp_path).rows()
    for suffix in (".sqlite", ".sqlite-wal", ".sqlite-shm"):  # a fresh clone: the provenance file still knows
        (tmp_path / "p" / f"t{suffix}").unlink(missing_ok=True)
    with pytest.raises(ValueError, match="opened with"):
        ResultStore("p", "t", ["b"], root=tmp_path).rows()
    assert len(ResultStore("p", "t", ["b", "a"], root=tmp_path).rows()) == 1  # the same columns in another order
    # a finer key whose new column the rows already carry is no re-key (the committed tabed_latency_caption's
    # image_counts); one the rows lack is
    assert len(ResultStore("p", "t", ["a", "b", "v"], root=tmp_path).rows()) == 1
    with pytest.raises(ValueError, match="opened with"):
        ResultStore("p", "t", ["a", "b", "w"], root=tmp_path).rows()


def test_a_writer_killed_after_the_csv_replace_leaves_no_row_without_provenance(tmp_path, monkeypatch):
    from specdec import tabledb

    store = ResultStore("p", "t", ["k"], root=tmp_path)
    store.append([{"k": 0, "v": 0}])
    original = tabledb.Table._replace_csv

    def killed(self, data):
        original(self, data)
        raise KeyboardInterrupt  # as a kill right after the move, before the commit

    monkeypatch.setattr(tabledb.Table, "_replace_csv", killed)
    with pytest.raises(KeyboardInterrupt):
        store.append([{"k": 1, "v": 1}])
    monkeypatch.undo()
    again = ResultStore("p", "t", ["k"], root=tmp_path)
    stored = {r["k"] for r in again.rows()}
    lines = [json.loads(line) for line in again.provenance_path.read_text().splitlines()]
    with_provenance = {k[0] for line in lines for k in line["keys"]}
    assert stored <= with_provenance


def test_a_failed_csv_replace_takes_its_provenance_line_back(tmp_path, monkeypatch):
    from specdec import tabledb

    store = ResultStore("p", "t", ["k"], root=tmp_path)
    store.append([{"k": 0, "v": 0}])
    before = store.provenance_path.read_bytes()

    def full_disk(self, data):
        raise OSError("no space left on device")

    monkeypatch.setattr(tabledb.Table, "_replace_csv", full_disk)
    with pytest.raises(OSError):
        store.append([{"k": 1, "v": 1}])
    assert store.provenance_path.read_bytes() == before


# ------------------------------------------------------------------------------ 9. stop strings, μ, pixel dtype
@pytest.mark.parametrize("stop", ["", [""], ["a", ""]])
def test_empty_stop_strings_are_refused(target, stop):
    with pytest.raises(ValueError, match="stop_strings must hold non-empty strings"):
        generate(target, PROMPT, None, max_new_tokens=2, stop_strings=stop, tokenizer=object())


@pytest.mark.parametrize("mu", [1e308, 1e39])
def test_contrastive_scores_that_overflow_are_refused(mu):
    with pytest.raises(ValueError, match="overflow float32"):
        contrastive(torch.randn(2, 8), torch.randn(2, 8), mu=mu)


def test_contrastive_of_a_large_but_representable_mu_is_correct():
    expert, amateur = torch.randn(8), torch.randn(8)
    out = contrastive(expert, amateur, mu=1e6, temperature=0.0)
    assert int(out.argmax()) == int((expert - 1e6 * amateur).argmax()) == int(amateur.argmin())


def test_masked_logits_stay_legal_in_contrastive():
    expert = torch.tensor([0.0, 1.0, -INF])
    assert torch.isfinite(contrastive(expert, torch.zeros(3), mu=0.5)).all()


# --------------------------------------------------------------------------------------------- 10. path names
PROBE = "specdec-probe-profile"  # a folder name no checkout has (CI clones into /tmp/x, so "x" is taken)


@pytest.mark.parametrize("profile", [f"../../{PROBE}", f"../{PROBE}", "a/b", f"/tmp/{PROBE}", "..", ".", ""])
def test_run_notebooks_refuses_a_profile_path_before_creating_anything(tmp_path, monkeypatch, profile):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        run_notebooks.main(["--profile", profile, "--only", "00_"])
    assert "profile" in str(exit_.value.code)
    made = [p for p in (ROOT.parent / PROBE, ROOT.parent.parent / PROBE, pathlib.Path("/tmp") / PROBE) if p.exists()]
    assert made == [] and not any(tmp_path.iterdir())


@pytest.mark.parametrize("profile, name", [("../x", "a"), ("tiny", "../a"), ("tiny", "a/b"), ("a/b", "c")])
def test_figure_path_refuses_path_names(profile, name):
    with pytest.raises(ValueError, match="must"):
        results.figure_path(profile, name)


@pytest.mark.parametrize("name", ["../tiny", "../../data/profiles/tiny", "sub/tiny", ".."])
def test_profile_load_refuses_path_names(name):
    from specdec.harness.profile import Profile

    with pytest.raises(ValueError, match="profile"):
        Profile.load(name)


@pytest.mark.parametrize("name", ["../paper", "x/../../paper"])
def test_hub_cli_refuses_path_names(name, capsys):
    from specdec import hub

    with pytest.raises(SystemExit):
        hub.main(["list", "--profile", name])
    assert "profile" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["a", "tiny", "paper-try"])
def test_plain_names_pass(value):
    assert validate.plain_name("profile", value) == value


# ------------------------------------------------------------------ more training CLIs: refused at parse time
@pytest.mark.parametrize(
    "module, argv, match",
    [
        ("vlm", ["train", "--steps", "0"], "--steps: expected an integer > 0"),
        ("vlm", ["train", "--steps", "-5"], "--steps: expected an integer > 0"),
        ("vlm", ["train", "--batch-size", "0"], "--batch-size"),
        ("vlm", ["train", "--lr", "-1"], "--lr: expected a finite number > 0"),
        ("vlm", ["train", "--lr", "nan"], "--lr"),
        ("vlm", ["train", "--weight-decay", "-0.1"], "--weight-decay"),
        ("vlm", ["train", "--seeds", "-1"], "--seeds: expected an integer >= 0"),
        ("vlm", ["data", "--per-scenario", "0"], "--per-scenario"),
        ("vlm", ["data", "--heldout-per-scenario", "-1"], "--heldout-per-scenario"),
        ("vlm", ["train", "--threads", "-1"], "--threads"),
        ("vlm", ["train", "--data", "/nonexistent/tabed.pt"], "no data file"),
        ("aasd", ["seeds", "--train-seeds", "-1"], "--train-seeds"),
        ("aasd", ["seeds", "--train-seeds", "0"], "--train-seeds"),
        ("aasd", ["target", "--threads", "0"], "--threads"),
        ("aasd", ["paper", "--steps", "0"], "--steps"),
        ("aasd", ["paper", "--n", "-2"], "--n"),
        ("aasd", ["paper", "--max-new-tokens", "0"], "--max-new-tokens"),
        ("aasd", ["paper", "--batch-size", "0"], "--batch-size"),
        ("zoo", ["train", "--threads", "0"], "--threads: expected an integer > 0"),
    ],
)
def test_training_clis_refuse_bad_arguments_before_anything_runs(module, argv, match, capsys):
    import importlib

    name = {"vlm": "specdec.vlm.train", "aasd": "specdec.aasd.train", "zoo": "specdec.zoo.real_draft"}[module]
    with pytest.raises(SystemExit):
        importlib.import_module(name).main(argv)
    assert match in capsys.readouterr().err


# ---------------------------------------------------------------- AASD suites: errors at once, not in a cell
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"gammas": (0,)}, ValueError, "gamma must be an integer >= 1"),
        ({"gammas": ()}, ValueError, "gammas must be a non-empty list"),
        ({"gammas": 3}, ValueError, "gammas must be a non-empty list"),
        ({"gammas": (2.5,)}, TypeError, "gamma must be an integer"),
        ({"drafts": ("AASDD",)}, ValueError, r"unknown AASD draft 'AASDD' \(did you mean 'AASD'\?\)"),
        ({"drafts": "AASD w/o projectr"}, ValueError, "unknown AASD draft"),
        ({"targets": ("tabed-targt",)}, ValueError, r"did you mean 'tabed-target'"),
        ({"max_new_tokens": 0}, ValueError, "max_new_tokens must be an integer >= 1"),
        ({"max_new_tokens": -1}, ValueError, "max_new_tokens must be an integer >= 1"),
        ({"seed": 1.5}, TypeError, "seed must be an integer"),
        ({"n_per_task": 0}, ValueError, "n_per_task must be an integer >= 1"),
    ],
)
def test_aasd_table1_checks_its_arguments_when_built(kwargs, error, match):
    from specdec.aasd import experiments as aasd_experiments

    with pytest.raises(error, match=match):
        aasd_experiments.table1("tiny", **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"target": "nope"}, "unknown AASD target"),
        ({"drafts": ("x",)}, "unknown AASD draft"),
        ({"gammas": (-1,)}, ">= 1"),
    ],
)
def test_aasd_ablations_check_their_arguments_when_built(kwargs, match):
    from specdec.aasd import experiments as aasd_experiments

    with pytest.raises(ValueError, match=match):
        aasd_experiments.ablations("tiny", **kwargs)


@pytest.mark.parametrize("seed", [-1, 1.5, "1"])
def test_aasd_weights_of_a_bad_training_seed_is_refused(seed):
    from specdec.aasd import experiments as aasd_experiments

    with pytest.raises((ValueError, TypeError), match="train_seed must be an integer"):
        aasd_experiments.weights_of("AASD", "tabed-target", train_seed=seed)


# ------------------------------------------------------ 6. Table 3 of a pair this run did not decode (notebook 30)
def test_table3_of_a_pair_not_in_the_run_is_inconclusive_naming_the_missing_rows():
    import pandas as pd

    from specdec.multilingual import drafter_verdicts
    from specdec.verdict import INCONCLUSIVE

    de_only = pd.DataFrame(
        {"pair": ["de-en"] * 3, "temperature": [0.0] * 3, "method": ["sps-generic", "sps-f", "sps-pf"]}
    )
    verdict = drafter_verdicts.table3_verdict(de_only, "zh-en", 0.0)
    assert verdict.status == INCONCLUSIVE and verdict.n == 0 and "no rows of" in verdict.detail
    assert math.isnan(verdict.estimate)
