"""Widget latency: one slider change → updated figure, after warm-up, with the notebooks' settings.

    JAX_PLATFORMS=cpu python benchmarks/widget_latency.py [--repeats 5]

Builds the apps of notebooks 01–03 outside a kernel (setting a control's
``.value`` runs its observers synchronously, exactly as a slider move does in
Jupyter: update function, live-figure update, PNG render into the Image
widget) and times each slider move. For every slider it prints the median and
the maximum wall time and the median CPU time of the process (CPU time is
what a busy shared machine does not inflate). Target: ≤ 300 ms for
temperature, τ, prior scale and num_train ≤ 100.

The temperature slider is reported three ways: until the environment figure
is updated (what the slider itself draws), and the whole observer for a
temperature already fitted (cached) and for a new one (which refits the
three agents for the new environment in one vectorised call, no compilation).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _time_moves(control, values, stamp_image=None):
    """Sets each value in turn; returns [(wall_s, cpu_s, first_image_update_s or None)]."""
    out = []
    stamps: list[float] = []
    if stamp_image is not None:
        stamp_image.observe(lambda _ch: stamps.append(time.perf_counter()), "value")
    for v in values:
        stamps.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        control.value = v
        out.append((time.perf_counter() - t0, time.process_time() - c0, (stamps[0] - t0) if stamps else None))
    return out


def _row(name, samples, use_first=False):
    walls = [(s[2] if use_first else s[0]) * 1e3 for s in samples]
    cpus = [s[1] * 1e3 for s in samples]
    ok = "yes" if statistics.median(walls) <= 300 else "NO"
    cpu = "" if use_first else f"{statistics.median(cpus):8.0f}"
    print(f"{name:52s} {statistics.median(walls):8.0f} {max(walls):8.0f} {cpu:>8s}   {ok}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="moves timed per slider (after one warm-up move)")
    args = parser.parse_args()
    r = args.repeats

    from jtk.widgets import coins as wc, ensembles as we, joint as wj

    t0 = time.perf_counter()
    joint = wj.joint_predictions_app(wj.JointPredictions(), temperature=0.1, seed=0, num_train=10)
    build_joint = time.perf_counter() - t0
    t0 = time.perf_counter()
    comp = we.build_comparison(temperature=0.1, seed=0)
    ens = we.ensemble_app(comp)
    build_ens = time.perf_counter() - t0
    coin_decision, coin_grid = wc.decision_app(horizon=10), wc.joint_grid_app(flips=2)
    print(f"build (not a slider move): notebook 02 app {build_joint:.1f} s, notebook 03 comparison + app "
          f"{build_ens:.1f} s")

    c = joint.controls
    # warm-up: one move of every control (fits the second temperature used below, renders once)
    c["tau"].value, c["num_train"].value, c["agent"].value = 50, 30, "mlp"
    c["temperature"].value = 0.5
    c["temperature"].value = 0.1
    ens.controls["prior_scale"].value, ens.controls["num_train"].value = 1.0, 30
    ens.controls["num_members"].value = 5
    coin_decision.controls["horizon"].value, coin_grid.controls["flips"].value = 20, 3

    rows = []
    rows.append(("02 τ (1 … 100)", _time_moves(c["tau"], [1, 100, 10, 70, 2, 30, 100, 5][:max(r, 2)])))
    rows.append(("02 num_train (1 … 100)", _time_moves(c["num_train"], ([1, 100, 3, 10, 30] * 2)[:max(r, 2)])))
    rows.append(("02 agent selector", _time_moves(c["agent"], (["ensemble", "ensemble+", "mlp"] * 3)[:max(r, 2)])))
    env_img = joint.images["environment"]
    temps_cached = ([0.5, 0.1] * r)[:max(r, 2)]
    cached = _time_moves(c["temperature"], temps_cached, stamp_image=env_img)
    rows.append(("02 temperature → environment figure", cached, True))
    rows.append(("02 temperature, whole observer (fitted before)", cached))
    fresh_temps = [0.01, 0.03, 0.2, 1.0, 0.05, 0.3][:max(min(r, 6), 2)]
    fresh = _time_moves(c["temperature"], fresh_temps, stamp_image=env_img)
    rows.append(("02 temperature → environment figure (new ρ)", fresh, True))
    ec = ens.controls
    rows.append(("03 prior scale", _time_moves(ec["prior_scale"], ([0.0, 3.0, 10.0, 1.0] * 3)[:max(r, 2)])))
    rows.append(("03 num_train (1 … 100)", _time_moves(ec["num_train"], ([1, 100, 3, 10, 30] * 2)[:max(r, 2)])))
    rows.append(("03 ensemble size", _time_moves(ec["num_members"], ([1, 10, 4, 7] * 3)[:max(r, 2)])))
    rows.append(("01 horizon", _time_moves(coin_decision.controls["horizon"], ([1, 50, 10, 30] * 3)[:max(r, 2)])))
    rows.append(("01 flips n", _time_moves(coin_grid.controls["flips"], ([1, 6, 2, 4] * 3)[:max(r, 2)])))

    print(f"\n{'slider move → updated figure':52s} {'med ms':>8s} {'max ms':>8s} {'cpu ms':>8s}   ≤300")
    for row in rows:
        _row(row[0], row[1], use_first=len(row) > 2)
    refit = [s[0] for s in fresh]
    print(f"\n02 a new temperature also refits mlp/ensemble/ensemble+ at 5 num_train values: "
          f"median {statistics.median(refit):.2f} s, max {max(refit):.2f} s wall; "
          f"median {statistics.median([s[1] for s in fresh]):.2f} s CPU (no compilation)")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
          "(wall times on a shared machine are inflated by other processes; CPU times are not)")


if __name__ == "__main__":
    main()
