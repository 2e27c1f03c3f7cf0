"""Capture -> replay (CUDA events) -> gate on a GPU: what scripts/gpu-python-check runs.

A toy bf16 attention model on the GPU is captured by a forward hook (BSHD), the built-in
sdpa_flash and sdpa_cudnn kernels and a user kernel (user_kernels:attention_fp32) are replayed
on the fixture with CUDA-event timings, and `touchstone gate --gate sage_compat` judges cudnn and
the user kernel against FlashAttention-2 (the three are timed in one interleaved run, so the
gate pairs them by round). Prints a short table; exit 0 when every step worked
and the timings are labelled device_events (a verdict of REJECT for a slower kernel is a result,
not a failure); 1 otherwise. GPU_CHECK_DEVICE=cpu runs the same flow on the CPU at a small size
with CPU kernels (to check this script where there is no GPU)."""
import json
import os
import statistics
import subprocess
import sys

import torch

import touchstone as tsp
from touchstone import cli

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import user_kernels  # noqa: E402


def main(ts, out, work, device="cuda"):
    if device == "cuda" and not torch.cuda.is_available():
        print("gpu-python-check: skipped: no CUDA device", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "captured.h5")  # 100+ MB: beside the build, not in $OUT
    H, D, grid, cond = (8, 128, (8, 24, 42), 128) if device == "cuda" else (2, 64, (2, 4, 8), 16)
    video = grid[0] * grid[1] * grid[2]
    S = video + cond
    torch.manual_seed(0)
    qkv = torch.nn.Linear(H * D, 3 * H * D, device=device, dtype=torch.bfloat16)
    x = torch.randn(1, S, H * D, device=device, dtype=torch.bfloat16)
    baseline, other = ("sdpa_flash", "sdpa_cudnn") if device == "cuda" else (
        "torch_exact_fp64", "user_kernels:attention_bshd")
    clock = "device_events" if device == "cuda" else "host_steady"

    class Core(torch.nn.Module):
        def forward(self, q, k, v):  # [B, S, H, D]
            return user_kernels.attention_bshd(q, k, v, q.size(-1) ** -0.5) if device == "cpu" \
                else torch.nn.functional.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)

    core = Core()
    cap = tsp.AttentionCapture(layout="BSHD")
    with torch.no_grad(), cap.hook(core):
        q, k, v = qkv(x).view(1, S, 3, H, D).unbind(2)
        core(q, k, v)
    cap.write(path, model="gpu-python-check toy", grid=grid, replace=True,
              segments=[{"name": "video", "kind": "video", "length": video},
                        {"name": "text", "kind": "cond", "length": cond}])
    rows, ok = [], True
    # One interleaved timing run: the gate pairs the kernels by round (separate runs leave the
    # run-to-run variance unknown, and the speed rule then says "missing").
    kernels = ((baseline, "base"), (other, "other"), ("user_kernels:attention_fp32", "mine"))
    args = ["replay", path, "--device", device, "--reps", "20"]
    for kernel, name in kernels:
        args += ["--kernel", kernel, "--name", name]
    code = cli.main(args)
    for kernel, name in kernels:
        samples, got = tsp.read_timings(path, name) if code == 0 else ([float("nan")] * 11, None)
        good = code == 0 and got == clock and len(samples) == 20
        ok &= good
        rows.append(f"replay {kernel:28} exit {code}  {got}  median {statistics.median(samples):8.3f} ms"
                    f"  {'ok' if good else 'FAILED'}")
    report = os.path.join(out, "gate.json")
    g = subprocess.run([ts, "gate", "--gate", "sage_compat", "--fixture", path,
                        "--baseline", "stored:base", "--candidate", "stored:other",
                        "--candidate", "stored:mine", "--json", report],
                       capture_output=True, text=True)
    with open(os.path.join(out, "gate.txt"), "w") as fh:
        fh.write(g.stdout + g.stderr)
    ok &= g.returncode in (0, 1)
    if g.returncode in (0, 1):
        with open(report) as fh:
            for c in json.load(fh)["candidates"]:
                rules = {r["id"]: r for r in c["rules"]}
                # An unpaired timing run has no interval: the JSON says null, not {}.
                speed = c["details"].get("speed") or {}
                point = (speed.get("interval") or {}).get("point", float("nan"))
                acc_ok = all(rules[i]["status"] == "pass" for i in ("sage_like", "vs_exact"))
                ok &= acc_ok and bool(speed.get("level")) and speed.get("clock", clock) == clock
                rows.append(f"gate {c['candidate']:13} {c['verdict']:12} rel_l2 vs {baseline} "
                            f"{rules['sage_like'].get('figure', float('nan')):.2e}  "
                            f"speedup {point:.3f}  "
                            f"({rules.get('not_slower', {}).get('status', 'no speed rule')})")
    else:
        rows.append(f"gate exit {g.returncode}: {g.stderr.strip()}")
    print(f"torch {torch.__version__}, "
          f"{torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}, S={S} H={H} D={D}")
    print("\n".join(rows))
    print("gpu-python-check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4], os.environ.get("GPU_CHECK_DEVICE", "cuda")))
