"""sage-fidelity's trust check: a real kernel whose output or timing is implausible is
MISTRUSTED (a broken reference), not an emulation failure."""
import json
import os
import sys

import pytest

from conftest import STAND_IN
from touchstone import cli, fidelity, tables

BLOCK24 = fidelity.attention_flops(37810, 56, 128)  # 40.99 TFLOP


def test_plausible_real_kernel_figures_are_trusted():
    # the H200's sm90 kernel at block24: 51.9 ms (790 TFLOP/s), 1.5e-3 from the emulation
    assert fidelity.mistrust_reasons(0.0105, 0.0112, 0, 51.9, BLOCK24) == []
    assert fidelity.status_of(1.52e-3, 2e-3, []) == "within"
    assert fidelity.status_of(3e-3, 2e-3, []) == "OUTSIDE"
    assert fidelity.status_of(float("nan"), 2e-3, []) == "OUTSIDE"


def test_the_broken_sm90_wrapper_is_mistrusted_by_its_error():
    # SageAttention 2.2.0's release wrapper for sm90: 1.77 from exact, 4.9 ms (8365 TFLOP/s
    # dense-equivalent: below the ceiling the gate mistrusts stored times by, so not for its time)
    why = fidelity.mistrust_reasons(1.77, 0.0105, 0, 4.9, BLOCK24)
    assert len(why) == 1
    assert "1.77 is 168.6x the emulation's 0.0105" in why[0]
    assert fidelity.status_of(1.2, 2e-3, why) == "MISTRUSTED"


def test_a_time_beyond_the_gates_ceiling_is_mistrusted():
    """The ceiling is C++'s (core/timing_defaults.hpp, through the tables), the one by which
    `touchstone gate` mistrusts a stored kernel's time: 0.5 ms at block24 is 82 000 TFLOP/s."""
    assert fidelity.mistrust_reasons(0.0105, 0.0112, 0, 0.5, BLOCK24) == [
        f"0.5 ms is 81979 TFLOP/s for 41 TFLOP (ceiling {tables.MISTRUST_CEILING_TFLOPS:g})"]
    assert cli._parser().parse_args(["sage-fidelity", "ts"]).ceiling_tflops == \
        tables.MISTRUST_CEILING_TFLOPS == tables.TABLES["mistrust"]["ceiling_tflops"]


@pytest.mark.parametrize("args, expect", [
    ((float("nan"), 0.01, 3, 50.0), "3 non-finite output value(s)"),
    ((None, 0.01, 0, 50.0), "rel_l2 vs exact is None"),
    ((0.05, 0.01, 0, 50.0), "is 5.0x the emulation's"),
    ((0.01, 0.01, 0, 0.0), "median time 0.0 ms"),
])
def test_each_reason_alone(args, expect):
    why = fidelity.mistrust_reasons(*args, BLOCK24)
    assert any(expect in w for w in why), why


def test_a_garbage_stand_in_is_mistrusted_and_an_honest_one_is_an_emulation_failure(
        ts, tmp_path, monkeypatch, capsys):
    """sm121 through the honest stand-in (SDPA: not sage2, so OUTSIDE: the emulation is judged
    against it), sm90 through a stand-in returning garbage (MISTRUSTED: it is the reference that
    is broken). Also checks the layouts of the dumped codes are undone (codes match)."""
    monkeypatch.syspath_prepend(STAND_IN)
    sys.modules.pop("sageattention", None)
    monkeypatch.setenv("TOUCHSTONE_STAND_IN_MODE", "sageattn_qk_int8_pv_fp8_cuda_sm90=garbage")
    out = str(tmp_path / "fid")
    code = cli.main(["sage-fidelity", ts.exe, "--out", out, "--fixture-preset", "tiny",
                     "--presets", "sm121 sm90", "--reps", "3", "--device", "cpu"])
    text = capsys.readouterr().out
    assert code == 1  # one preset OUTSIDE
    with open(os.path.join(out, "sage_fidelity.json")) as fh:
        r = json.load(fh)
    assert r["stand_in"] is True
    honest, broken = r["presets"]
    assert honest["status"] == "OUTSIDE" and honest["mistrusted_because"] == []
    assert honest["real_vs_exact_rel_l2"] < 1e-2 and honest["real_clock"] == "host_steady"
    assert honest["q_int8"]["identical_fraction"] >= 0.99
    assert honest["v_fp8"]["identical_fraction"] >= 0.99
    assert honest["k_int8"]["identical_fraction"] >= 0.9
    assert broken["status"] == "MISTRUSTED"
    assert "x the emulation's" in broken["mistrusted_because"][0]
    assert "sm90: MISTRUSTED real kernel (a broken reference, not an emulation failure)" in text


def test_exit_codes():
    assert fidelity.exit_code(["within", "within"]) == 0
    assert fidelity.exit_code(["within", "MISTRUSTED", "OUTSIDE"]) == 1
    assert fidelity.exit_code(["within", "MISTRUSTED"]) == 2


def test_no_sageattention_is_reported_as_skipped(ts, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sageattention", None)  # import fails
    assert cli.main(["sage-fidelity", ts.exe, "--out", str(tmp_path)]) == 2
    assert "skipped: the sageattention module" in capsys.readouterr().err


def test_a_mistrusted_only_run_says_so_on_stderr(monkeypatch, capsys):
    row = {"preset": "sm90", "status": "MISTRUSTED", "output_rel_l2": 1.2,
           "real_vs_exact_rel_l2": 1.77, "emulation_vs_exact_rel_l2": 0.0105,
           "mistrusted_because": ["rel_l2 vs exact 1.77 is 168.6x the emulation's 0.0105"],
           "real_median_ms": 4.9, "real_clock": "device_events", "real_tflops": 8365.0}
    row.update({t: {"identical_fraction": 1.0, "ulp_max": 0} for t in fidelity.INTERMEDIATES})
    report = {"target_rel_l2": 2e-3, "stand_in": False, "presets": [row]}
    monkeypatch.setattr(fidelity, "run", lambda *a, **k: (report, fidelity.exit_code(["MISTRUSTED"])))
    assert cli.main(["sage-fidelity", "ts"]) == 2
    out, err = capsys.readouterr()
    assert "sm90: MISTRUSTED real kernel" in out and "4.9 ms median (device_events), 8.36e+03 TFLOP/s" in out
    assert err.count("\n") == 1 and "the real kernel of sm90 is MISTRUSTED" in err
