"""touchstone.testing as a user writes against it, from docs/python.md alone ("touchstone.testing",
"pytest"): a good kernel and a broken one (one head x 1.05) through assert_sage_like and
assert_gate; the broken one fails with a message naming the rule and the head."""
import os
import re
import shutil
import tempfile

import numpy as np
import pytest
import torch

import touchstone
from touchstone.testing import assert_gate, assert_sage_like

pytestmark = pytest.mark.usefixtures("extension")


def good_attention(q, k, v, softmax_scale):
    """Attention in float32 on [1, H, S, D]."""
    p = torch.softmax(torch.matmul(q.float(), k.float().transpose(-1, -2)) * softmax_scale, dim=-1)
    return torch.matmul(p, v.float()).to(q.dtype)


def one_head_scaled(q, k, v, softmax_scale):
    """The good kernel with head 0's output scaled by 1.05."""
    out = good_attention(q, k, v, softmax_scale).float()
    out[:, 0] *= 1.05
    return out.to(q.dtype)


def kept_copy(msg):
    """The working copy the message's last line names: a path longer than a line continues on
    the lines below it, unindented, and joins back by concatenation."""
    lead = "(the fixture with the candidate's output:"
    at = msg.rindex("\n" + lead) + 1 + len(lead)
    kept = msg[at:].replace("\n", "").strip()
    assert kept.endswith(")"), msg[at:]
    return kept[:-1]


def test_a_good_kernel_is_sage_like(tiny_fixture):
    verdict = assert_sage_like(tiny_fixture, good_attention)
    assert verdict.verdict == "ACCEPT" and verdict.accepted
    by_id = {o.id: o for o in verdict.outcomes}
    assert by_id["head_gain"].status == "pass" and by_id["head_gain"].figure < 0.01
    assert by_id["sage_like"].bound == "<= 0.04"


def test_a_kernel_scaling_one_head_fails_naming_the_rule_and_the_head(tiny_fixture):
    with pytest.raises(AssertionError) as e:
        assert_sage_like(tiny_fixture, one_head_scaled)
    msg = str(e.value)
    assert msg.startswith("stored:one_head_scaled: REJECT by gate sage_compat, on")
    lines = [l for l in msg.splitlines() if "head_gain" in l and "[fail]" in l]
    assert lines, msg
    # The figure is the head's gain error, 0.05 (bf16 storage moves it in the 3rd digit).
    figures = [float(x) for x in re.findall(r"\d+\.\d+(?:e-?\d+)?", lines[0])]
    assert any(abs(f - 0.05) < 0.003 for f in figures), lines[0]
    # The head: gate messages name the worst head once gates/verdict.cpp does (h23a); when the
    # line names one, it must be head 0.
    named = re.findall(r"\bhead\s*[=:#]?\s*(\d+)", lines[0])
    if named:
        assert named[0] == "0", lines[0]
    path = kept_copy(msg)
    assert os.path.isfile(path)
    assert "one_head_scaled" in touchstone.read_fixture(path).outputs


@pytest.mark.parametrize("folders", ["short", "long"])
def test_a_failure_leads_with_where_it_fails_in_100_columns_from_the_users_frame(tiny_fixture,
                                                                                monkeypatch,
                                                                                tmp_path, folders):
    monkeypatch.setenv("COLUMNS", "240")  # the terminal running pytest does not widen the message
    if folders == "long":
        # A long TMPDIR (a CI runner's work folder): the fixture, and the working copy that
        # assert_gate makes under TMPDIR, lie at paths longer than a line of the message.
        deep = tmp_path / ("a-very-long-directory-name-" + "x" * 40) / ("and-deeper-" + "y" * 40)
        deep.mkdir(parents=True)
        shutil.copyfile(tiny_fixture, deep / "tiny.h5")
        tiny_fixture = str(deep / "tiny.h5")
        assert len(tiny_fixture) > 100
        monkeypatch.setenv("TMPDIR", str(deep))
        monkeypatch.setattr(tempfile, "tempdir", str(deep))  # gettempdir() read TMPDIR once
    with pytest.raises(AssertionError) as e:
        assert_sage_like(tiny_fixture, one_head_scaled)
    # pytest shows the test's own line, not touchstone.testing's frames.
    # pytest 8 filters by the exception (it reads __tracebackhide__ off each frame); 7 by default.
    kept = e.traceback.filter(e) if int(pytest.__version__.split(".")[0]) >= 8 else e.traceback.filter()
    shown = [str(entry.path) for entry in kept]
    assert shown and not any(p.endswith(os.path.join("touchstone", "testing.py")) for p in shown), shown
    lines = str(e.value).splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    # After the verdict, the rules not passed, those naming the head first: one rule a line
    # (continued under it), never the whole report again in one line.
    at = next(i for i, l in enumerate(lines) if l.startswith("rules not passed"))
    # The verdict line names the user's fixture, continued over as many lines as its path takes.
    assert at <= 2 + len(tiny_fixture) // 90
    assert tiny_fixture in "".join(l.strip() for l in lines[:at])
    assert lines[at + 1].startswith("  head_vs_exact [fail]: ")
    assert "worst head 0" in " ".join(lines[at + 1:at + 3])
    rules = [l for l in lines[at + 1:lines.index("")] if not l.startswith("      ")]
    assert len(rules) >= 2 and all(l.count("[fail]") == 1 for l in rules), rules
    # The report's input is the user's fixture (cut, not lost, where the path is longer than a
    # line); the copy is named only where its output is needed (the repro line, the last line),
    # in its folder under TMPDIR.
    msg = str(e.value)
    copy = kept_copy(msg)
    assert os.path.isfile(copy) and os.path.dirname(os.path.dirname(copy)) == tempfile.gettempdir()
    inp = next(i for i, l in enumerate(lines) if l.startswith("input:"))
    assert f"input:{tiny_fixture}(fixture)" in "".join(lines[inp:inp + 4]).replace(" ", "")
    if len(f"input: {tiny_fixture} (fixture)") <= 100:
        assert f"input: {tiny_fixture} (fixture)" in lines
    # The copy's folder, in the text read with every line's cut joined: the repro line and the
    # last line, nowhere else.
    flat = "".join(l.strip().rstrip("\\").strip() for l in lines)
    assert flat.count(os.path.basename(os.path.dirname(copy))) == 2, msg


def test_tensor_and_stored_candidates_and_an_untouched_fixture(tiny_fixture, touchstone_load,
                                                              tmp_path):
    before = touchstone_load(tiny_fixture)
    fx = touchstone.read_fixture(tiny_fixture)
    q, k, v = (torch.from_numpy(np.asarray(a, dtype=np.float32)).permute(1, 0, 2).unsqueeze(0)
               for a in (fx.q, fx.k, fx.v))
    out = good_attention(q, k, v, fx.softmax_scale)
    assert_gate(tiny_fixture, out, layout="BHSD", gate="sage_compat", name="mine").accepted
    bad = one_head_scaled(q, k, v, fx.softmax_scale)[0].permute(1, 0, 2).numpy()  # [S, H, D]
    with pytest.raises(AssertionError, match="head_gain"):
        assert_gate(tiny_fixture, bad, gate="sage_compat")
    after = touchstone_load(tiny_fixture)
    assert after.outputs == before.outputs == []
    # The name of a stored output (here in a copy that holds the good kernel's output).
    import shutil

    copy = str(tmp_path / "with_output.h5")
    shutil.copyfile(tiny_fixture, copy)
    touchstone.add_output(copy, "mine", out[0].permute(1, 0, 2))
    assert assert_gate(copy, "mine").candidate == "stored:mine"
    assert touchstone_load(copy).outputs == ["mine"]


def test_reports_go_where_the_plugin_option_says(tiny_fixture, tmp_path, monkeypatch):
    from touchstone import testing

    monkeypatch.setattr(testing, "report_dir", str(tmp_path))
    assert_sage_like(tiny_fixture, good_attention)
    assert_sage_like(tiny_fixture, good_attention)
    name = "test_reports_go_where_the_plugin_option_says"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{name}-2.html", f"{name}-2.junit.xml", f"{name}.html", f"{name}.junit.xml"]
    assert "<testsuite" in (tmp_path / f"{name}.junit.xml").read_text()
    assert (tmp_path / f"{name}.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_bad_input_names_the_users_fixture_not_the_working_copy(tiny_fixture):
    with pytest.raises(touchstone.CaptureError) as e:
        assert_gate(tiny_fixture, "stored:no_such_output", gate="sage_compat")
    assert tiny_fixture in str(e.value) and "touchstone-assert-" not in str(e.value), str(e.value)


def test_the_exact_reference_as_baseline_of_a_ratio_rule_is_bad_input(tiny_fixture):
    """sage_compat bounds the error against exact by 1.5 x the baseline's own: against exact itself
    that is 0, so a correct kernel would be REJECTed; the baseline is refused instead."""
    with pytest.raises(touchstone.CaptureError) as e:
        assert_gate(tiny_fixture, good_attention, gate="sage_compat", baseline="exact")
    msg = str(e.value)
    assert "'vs_exact'" in msg and "e.g. sage2:preset=" in msg and "\n" not in msg
    assert assert_gate(tiny_fixture, good_attention, gate="sage_compat", baseline="sage2").accepted
