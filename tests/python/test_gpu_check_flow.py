"""scripts/gpu-python-check's own flow (tests/python/gpu_check.py) on the CPU: a script that runs
only on the GPU machine must not rot between its runs there (it once read a speed figure that the
gate no longer gives for separate timing runs, and crashed after the work was done)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_capture_replay_and_gate_flow_passes_on_the_cpu(ts, tmp_path):
    env = dict(os.environ, GPU_CHECK_DEVICE="cpu")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), HERE,
                                         env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, os.path.join(HERE, "gpu_check.py"), ts.exe,
                        str(tmp_path / "out"), str(tmp_path / "work")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[-1] == "gpu-python-check: ok"
    gates = [ln for ln in lines if ln.startswith("gate ")]
    assert len(gates) == 2
    # Both candidates were timed beside the baseline in one run: a real speedup, not nan. On a
    # loaded CPU the interval may straddle 1 (inconclusive, a legitimate answer); a speed rule
    # that could not be judged at all (missing: the samples were not comparable) is the rot.
    for ln in gates:
        figure = ln.split("speedup", 1)[1].split()[0]
        assert figure not in ("nan", "-", "—") and float(figure) > 0, gates
        assert any(s in ln for s in ("(pass)", "(fail)", "(inconclusive)")), gates
