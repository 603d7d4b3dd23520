"""Bad-input probes over the whole public API (issue 45): every ``python -m`` command line, every study's
``findings_from_results`` on a folder without results, and every public function that takes a result frame fed a
foreign one. Each probe expects one clear error before anything is written, or a correct result; the probes whose
answer is still unclear or wrong are listed, as known, in ``KNOWN_UNCLEAR``, ``KNOWN_UNCLEAR_FRAMES`` and
``KNOWN_WRONG`` below (the one place for every probe file), each expected to fail (strict: a fixed one fails this
file until it leaves the list). ``tests/test_probe_coverage.py`` checks that every
public callable has a probe."""

import contextlib
import inspect
import re

import pandas as pd
import pytest
import torch
from probe_coverage import public_api

from specdec import engine_findings, papers, tabledb, verdict

API = public_api()
CLIS = sorted(name for name in API if name.endswith(".main"))
FINDINGS = {"engine": engine_findings, **papers.findings()}
FRAME_PARAMETERS = ("frame", "df", "runs", "table", "results", "sweep", "summary")


def _frame_functions() -> list[str]:
    """The public functions whose first parameter is a result frame and that need no other argument."""
    out = []
    for name, obj in sorted(API.items()):
        if not inspect.isfunction(obj) or name.startswith("specdec.tabledb."):
            continue
        params = list(inspect.signature(obj).parameters.values())
        required = [p for p in params[1:] if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if params and params[0].name in FRAME_PARAMETERS and not required:
            out.append(name)
    return out


FRAME_FUNCTIONS = _frame_functions()


# ------------------------------------------------------------------------------------ python -m command lines
@pytest.mark.parametrize("name", CLIS)
@pytest.mark.parametrize("argv", [["--no-such-option"], ["--steps", "nan", "--no-such-option"]])
def test_a_command_line_refuses_an_unknown_option_before_anything_runs(name, argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        API[name](argv)
    assert exit_.value.code == 2 and "error:" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("name", CLIS)
def test_a_command_line_prints_its_usage(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        API[name](["--help"])
    assert exit_.value.code == 0 and "usage:" in capsys.readouterr().out and not any(tmp_path.iterdir())


# ---------------------------------------------------------------------------- findings of a folder with no rows
@pytest.mark.parametrize("study", sorted(FINDINGS))
def test_findings_of_a_folder_without_results_name_the_missing_table(study, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"\.csv"):
        FINDINGS[study].findings_from_results("tiny", root=tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("study", sorted(FINDINGS))
@pytest.mark.parametrize("profile, match", [("../x", "must stay inside"), ("nope", "unknown profile 'nope'")])
def test_findings_of_a_bad_profile_name_are_refused(study, profile, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        FINDINGS[study].findings_from_results(profile, root=tmp_path)


# ------------------------------------------------------------------------------------------ a foreign frame
FOREIGN = pd.DataFrame({"unrelated": [1.0, 2.0]})


def _answer_to_a_foreign_frame(name: str) -> str:
    """``"clear"``: one error a user can act on (``ValueError`` / ``TypeError``, or a ``KeyError`` naming columns),
    or a result that claims nothing (no verdict that holds or fails); ``"wrong"``: a verdict on no data; else
    ``"unclear"`` (a pandas ``AttributeError`` / bare ``KeyError`` from deep inside)."""
    try:
        with contextlib.redirect_stdout(None):
            out = API[name](FOREIGN.copy())
    except (ValueError, TypeError) as error:
        return "clear" if str(error) else "unclear"
    except KeyError as error:
        return "clear" if "column" in str(error) else "unclear"
    except (AttributeError, IndexError):
        return "unclear"
    verdicts = out if isinstance(out, list) else [out]
    judged = [v for v in verdicts if isinstance(v, verdict.Verdict) and v.status in (verdict.HOLDS, verdict.FAILS)]
    return "wrong" if judged else "clear"


# -------------------------------------------------------------------------------- known unclear, in one place
# Probes whose answer is still unclear: {name: (call, the pattern of its unclear message, or None: it raises no
# ValueError / TypeError / KeyError / FileNotFoundError at all)}. Each is expected to fail (strict): once the call
# raises one such error with another message, its XPASS fails this file, and the probe moves up among the others.
KNOWN_UNCLEAR: dict = {}
# Probes that get a wrong answer (a result where one clear error is due), known and listed here; strict xfails too.
KNOWN_WRONG: dict = {}
# Public functions over a result frame that, fed a frame lacking their columns, raise pandas' AttributeError
# ("'DataFrame' object has no attribute 'method'") or a bare KeyError from deep inside instead of one error naming
# the columns they need (``test_a_foreign_frame_gives_a_clear_answer``; ``validate.reads_frame`` is the mend).
KNOWN_UNCLEAR_FRAMES: set[str] = set()


@pytest.mark.parametrize("name", sorted(set(FRAME_FUNCTIONS) - KNOWN_UNCLEAR_FRAMES))
def test_a_foreign_frame_gives_a_clear_answer(name):
    torch.set_num_threads(1)
    assert _answer_to_a_foreign_frame(name) == "clear"


def _clear_error(call, unclear: str | None) -> bool:
    """Whether ``call`` raises one error a user can act on: a ``ValueError`` / ``TypeError`` / ``KeyError`` /
    ``FileNotFoundError`` whose message is not the known unclear one (``unclear``, a pattern)."""
    try:
        call()
    except (ValueError, TypeError, KeyError, FileNotFoundError) as error:
        return unclear is None or not re.search(unclear, str(error))
    except Exception:  # noqa: BLE001 (an AttributeError, a RuntimeError from torch: not clear)
        return False
    return False  # accepted silently


# The table's CSV text (``specdec.csvtext``, re-exported by ``tabledb``) given a str where bytes, a number or a path
# is due: Python's own message ("must be str, not bytes", "Unknown format code") or no error at all, before.
TABLE_TEXT = {
    "tabledb.parse_csv of a str": (lambda: tabledb.parse_csv("a,b\n"), "must be str, not bytes"),
    "tabledb.float_text of a str": (lambda: tabledb.float_text("1"), "Unknown format code"),
    "tabledb.provenance_path of a str": (lambda: tabledb.provenance_path("x.csv"), None),
    "tabledb.cell_value of an int": (lambda: tabledb.cell_value(3), "not subscriptable"),
}


@pytest.mark.parametrize("name", sorted(TABLE_TEXT))
def test_the_tables_text_helpers_refuse_a_str(name):
    assert _clear_error(*TABLE_TEXT[name])


@pytest.mark.parametrize("name", sorted(KNOWN_UNCLEAR))
@pytest.mark.xfail(strict=True, reason="known unclear (issue 45): listed in KNOWN_UNCLEAR")
def test_known_unclear(name):
    assert _clear_error(*KNOWN_UNCLEAR[name])


@pytest.mark.parametrize("name", sorted(KNOWN_WRONG))
@pytest.mark.xfail(strict=True, reason="known wrong (issue 45): listed in KNOWN_WRONG")
def test_known_wrong(name):
    assert _clear_error(*KNOWN_WRONG[name])


@pytest.mark.parametrize("name", sorted(KNOWN_UNCLEAR_FRAMES))
@pytest.mark.xfail(strict=True, reason="known unclear (issue 45): listed in KNOWN_UNCLEAR_FRAMES")
def test_known_unclear_frame(name):
    assert _answer_to_a_foreign_frame(name) == "clear"


def test_the_known_unclear_frame_functions_are_frame_functions():
    assert KNOWN_UNCLEAR_FRAMES <= set(FRAME_FUNCTIONS)


# The qualified names these generic probes reach (``tests/test_probe_coverage.py`` adds the names the probe files
# refer to): each command line's ``main``, each ``findings_from_results``, each frame function.
PROBED = {*CLIS, *FRAME_FUNCTIONS, *(f"{module.__name__}.findings_from_results" for module in FINDINGS.values())}
