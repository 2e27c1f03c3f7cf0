"""touchstone.gate / touchstone.compare / load_gate / validate_fixture in-process (docs/python.md
"Gating from Python"): the C++ engine's typed verdicts, its metrics, its errors."""
import json

import numpy as np
import pytest

import touchstone

pytestmark = pytest.mark.usefixtures("extension")


def test_gate_returns_typed_verdicts_and_writes_reports(tiny_fixture, tmp_path, ts):
    junit, html = tmp_path / "g.xml", tmp_path / "g.html"
    run = touchstone.gate(tiny_fixture, "sage2:preset=sm89", gate="bit_exact", junit=junit,
                          html=html)
    c = run.candidates[0]
    assert run.exit_code == 1 and c.verdict == "REJECT" and not c.accepted
    failed = [o for o in c.outcomes if o.status == "fail"]
    assert failed and all(o.message and o.bound for o in failed)
    assert any(isinstance(o.figure, float) for o in failed)
    assert "touchstone gate --gate bit_exact" in c.repro
    assert "<testsuite" in junit.read_text() and "<html" in html.read_text().lower()
    # The same figures as the CLI's JSON report.
    cli = json.loads(ts("gate", "--gate", "bit_exact", "--fixture", tiny_fixture,
                        "--candidate", "sage2:preset=sm89", "--json", expect=1).stdout)
    mine = json.loads(run.render_json())
    assert [o["id"] for o in mine["candidates"][0]["rules"]] == \
        [o["id"] for o in cli["candidates"][0]["rules"]]


def test_compare_tensors_and_stored_names(tiny_fixture, tmp_path):
    fx = touchstone.read_fixture(tiny_fixture)
    q = np.asarray(fx.q, dtype=np.float32)
    m = touchstone.compare(q, q)
    assert m["rel_l2"] == 0 and m["cosine"] == pytest.approx(1.0)
    m = touchstone.compare(q * 1.05, "/attention/q", fixture=tiny_fixture, breakdown=True)
    assert m["gain"] == pytest.approx(1.05, rel=1e-2)
    assert len(m["breakdown"]["per_head"]) == fx.config["heads"]
    with pytest.raises(touchstone.CaptureError, match=r"no dataset /outputs/nope/attention .*outputs: none"):
        touchstone.compare(q, "nope", fixture=tiny_fixture)
    with pytest.raises(touchstone.CaptureError, match="same shape|shape"):
        touchstone.compare(q[:-1], q)


def test_bad_input_is_a_capture_error_with_the_cpp_message(tiny_fixture, tmp_path):
    with pytest.raises(touchstone.CaptureError, match="sage_compt"):
        touchstone.load_gate("sage_compt")
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5")
    with pytest.raises(touchstone.CaptureError, match="bad.h5"):
        touchstone.validate_fixture(bad)
    assert touchstone.validate_fixture(tiny_fixture)
    with pytest.raises(touchstone.CaptureError, match="no_such_backend|unknown"):
        touchstone.gate(tiny_fixture, "no_such_backend", gate="sage_compat")
    g = touchstone.load_gate("sage_compat")
    assert "head_gain" in g.rule_ids and g.baseline.startswith("sage2")
    # -1 is the C++ side's "default": given here it is bad input, not the default.
    for kw in ({"pairs": -1}, {"pairs": 0}, {"warmup": -1}, {"rotate": 0}, {"pairs": 2.5}, {"pairs": True}):
        with pytest.raises(touchstone.CaptureError, match=next(iter(kw))):
            touchstone.gate(tiny_fixture, "sol:tau=1.3", gate="sparse_acceptance", **kw)
