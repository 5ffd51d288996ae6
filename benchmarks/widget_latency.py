"""Widget latency: how long each app of notebooks 01–06 takes to answer a control, after warm-up.

    JAX_PLATFORMS=cpu python benchmarks/widget_latency.py [--repeats 5] [--bandit-runs 1] [--skip 04 06]

Two kinds of control, reported separately:

* **plain moves** only index precomputed results and redraw (target: ≤ 300 ms median). For the apps of
  notebooks 01–03 a move is the whole observer, run outside a kernel (setting a control's ``.value`` runs its
  observers synchronously, exactly as a slider move does in Jupyter: update function, live-figure update, PNG
  render into the Image widget). For 04–06 the pure update function the observer calls is timed on its own
  (``update``) and together with the redraw and PNG render (``+ draw``; for 06 the app's whole observer).
* **refits** train something: a new temperature or seed in notebook 02 (mlp, ensemble and ensemble+ at five
  num_train values, one vectorised call, no compilation) and a new agent, temperature or dimension in notebook 06
  (one bandit run). In the notebooks these run in a background thread with a status line; here they are timed
  synchronously (``background=False``), which is how long a student waits for the panels to update.

For every row: median and maximum wall time, and the median CPU time of this process (CPU time is what a busy
shared machine does not inflate; JAX's own threads count too).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

TARGET_MS = 300


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


def _time_calls(fn, args_list):
    """Calls fn(*args) for each args; returns [(wall_s, cpu_s, None)]."""
    out = []
    for args in args_list:
        t0, c0 = time.perf_counter(), time.process_time()
        fn(*args)
        out.append((time.perf_counter() - t0, time.process_time() - c0, None))
    return out


def _stats(samples, use_first=False):
    walls = [(s[2] if use_first else s[0]) for s in samples]
    return statistics.median(walls), max(walls), statistics.median(s[1] for s in samples)


def _print_plain(rows):
    print(f"\n{'plain moves (no training)':56s} {'med ms':>8s} {'max ms':>8s} {'cpu ms':>8s}   ≤{TARGET_MS}")
    for name, samples, *flag in rows:
        med, mx, cpu = _stats(samples, use_first=bool(flag))
        cpu_text = "" if flag else f"{cpu * 1e3:8.0f}"
        ok = "yes" if med * 1e3 <= TARGET_MS else "NO"
        print(f"{name:56s} {med * 1e3:8.0f} {mx * 1e3:8.0f} {cpu_text:>8s}   {ok}")


def _print_refits(rows):
    print(f"\n{'refits (training; a background thread in the notebooks)':56s} {'med s':>8s} {'max s':>8s} "
          f"{'cpu s':>8s}   n")
    for name, samples in rows:
        med, mx, cpu = _stats(samples)
        print(f"{name:56s} {med:8.2f} {mx:8.2f} {cpu:8.2f}   {len(samples)}")


def _cycle(values, n):
    return (list(values) * (n // len(values) + 1))[:max(n, 2)]


def bench_01_to_03(r, plain, refits):
    from jtk.testbed.ensemble_study import make_ensemble_comparison
    from jtk.widgets import coins as wc, ensembles as we, joint as wj

    t0 = time.perf_counter()
    joint = wj.joint_predictions_app(wj.JointPredictions(), temperature=0.1, seed=0, num_train=10, background=False)
    build_joint = time.perf_counter() - t0
    t0 = time.perf_counter()
    ens = we.ensemble_app(make_ensemble_comparison(temperature=0.1, seed=0))
    build_ens = time.perf_counter() - t0
    coin_decision, coin_grid = wc.decision_app(horizon=10), wc.joint_grid_app(flips=2)
    print(f"build (not a slider move): notebook 02 app {build_joint:.1f} s (first fit, compilation included), "
          f"notebook 03 comparison + app {build_ens:.1f} s")

    c = joint.controls
    # warm-up: one move of every control (fits the second temperature used below, renders once)
    c["tau"].value, c["num_train"].value, c["agent"].value = 50, 30, "mlp"
    c["temperature"].value = 0.5
    c["temperature"].value = 0.1
    ens.controls["prior_scale"].value, ens.controls["num_train"].value = 1.0, 30
    ens.controls["num_members"].value = 5
    coin_decision.controls["horizon"].value, coin_grid.controls["flips"].value = 20, 3

    plain.append(("02 τ (1 … 100)", _time_moves(c["tau"], _cycle([1, 100, 10, 70, 2, 30, 100, 5], r))))
    plain.append(("02 num_train (1 … 100)", _time_moves(c["num_train"], _cycle([1, 100, 3, 10, 30], r))))
    plain.append(("02 agent selector", _time_moves(c["agent"], _cycle(["ensemble", "ensemble+", "mlp"], r))))
    env_img = joint.images["environment"]
    cached = _time_moves(c["temperature"], _cycle([0.5, 0.1], r), stamp_image=env_img)
    plain.append(("02 temperature → environment figure (fitted before)", cached, True))
    plain.append(("02 temperature, whole observer (fitted before)", cached))
    fresh = _time_moves(c["temperature"], [0.01, 0.03, 0.2, 1.0, 0.05, 0.3][:max(min(r, 6), 2)], stamp_image=env_img)
    plain.append(("02 temperature → environment figure (new ρ)", fresh, True))
    refits.append(("02 new temperature: refit 3 agents × 5 num_train", fresh))
    ec = ens.controls
    plain.append(("03 prior scale", _time_moves(ec["prior_scale"], _cycle([0.0, 3.0, 10.0, 1.0], r))))
    plain.append(("03 num_train (1 … 100)", _time_moves(ec["num_train"], _cycle([1, 100, 3, 10, 30], r))))
    plain.append(("03 ensemble size", _time_moves(ec["num_members"], _cycle([1, 10, 4, 7], r))))
    plain.append(("01 horizon", _time_moves(coin_decision.controls["horizon"], _cycle([1, 50, 10, 30], r))))
    plain.append(("01 flips n", _time_moves(coin_grid.controls["flips"], _cycle([1, 6, 2, 4], r))))


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


def bench_04(r, plain):
    from matplotlib.figure import Figure

    from jtk.regression import coverage as cv
    from jtk.widgets import coverage as wcov

    t0 = time.perf_counter()
    sweep = cv.sweep_f_main((0.5, 1, 2), k=8, seed=0, preset="lab", progress=False)
    print(f"build (not a slider move): notebook 04 sweep (f_main 0.5, 1, 2; k = 8) {time.perf_counter() - t0:.1f} s")
    fig = Figure(figsize=(10, 3.4))
    base = {"f_main": 0.5, "method": "BD", "k": 8, "x": 1.2}
    moves = {"f_main": _cycle([1.0, 2.0, 0.5], r), "method": _cycle(["EnsBS", "VD", "BLR", "BD"], r),
             "k": _cycle([2, 8, 4, 6], r), "x": _cycle([-5.1, -2.4, 1.2, 4.5], r)}

    def update(**kw):
        wcov.fit_panel_data(sweep, kw["f_main"], kw["method"], kw["k"], kw["x"])
        wcov.sweep_panel_data(sweep, kw["method"], kw["k"], kw["x"])

    def update_and_draw(**kw):
        wcov.draw(fig, sweep, **kw)
        _png(fig)

    update_and_draw(**base)  # warm-up
    for name, values in moves.items():
        plain.append((f"04 {name}: update", _time_calls(lambda v: update(**{**base, name: v}), [(v,) for v in values])))
        plain.append((f"04 {name}: update + draw", _time_calls(lambda v: update_and_draw(**{**base, name: v}),
                                                              [(v,) for v in values])))


def bench_05(r, plain):
    import matplotlib.pyplot as plt

    from jtk.plots.active import plot_toy_view
    from jtk.ppc.active import make_toy_state, toy_view

    t0 = time.perf_counter()
    state = make_toy_state(seed=0)
    print(f"build (not a slider move): notebook 05 toy state {time.perf_counter() - t0:.1f} s")
    fig, ax = plt.subplots(figsize=(8.5, 3.5))

    def update_and_draw(*args):
        ax.clear()
        plot_toy_view(toy_view(state, *args), ax)
        _png(fig)

    update_and_draw("batchmig", 4, state.model_names[0])  # warm-up
    moves = {"criterion": [(c, 4, state.model_names[0]) for c in _cycle(["mig", "tig", "random", "batchmig"], r)],
             "batch size": [("batchmig", q, state.model_names[0]) for q in _cycle([1, 10, 5, 7], r)],
             "selection model": [("batchmig", 4, m) for m in _cycle(state.model_names, r)]}
    for name, args in moves.items():
        plain.append((f"05 {name}: update", _time_calls(lambda *a: toy_view(state, *a), args)))
        plain.append((f"05 {name}: update + draw", _time_calls(update_and_draw, args)))
    plt.close(fig)


def bench_06(r, plain, refits, bandit_runs):
    from jtk.widgets import bandit as wb

    explorer = wb.BanditExplorer(num_problems=4, max_horizon=1000)
    t0 = time.perf_counter()
    explorer.run_all(["ensemble+"], input_dim=2)
    print(f"build (not a slider move): notebook 06 first run (ensemble+, compilation included) "
          f"{time.perf_counter() - t0:.1f} s")
    horizons = _cycle([250, 1000, 500, 750], r)
    plain.append(("06 horizon: update", _time_calls(lambda h: (wb.curves_view(explorer, 2, h, 0.1),
                                                               wb.pulls_view(explorer, "ensemble+", 2, h, 0.1)),
                                                   [(h,) for h in horizons])))
    # The app's own observer (update, in-place redraw of the live figure, PNG into the Image widget), as for 01–03.
    app = wb.bandit_app(explorer, agents=["ensemble+"], agent="ensemble+", background=False)
    app.controls["horizon"].value = 500  # warm-up
    plain.append(("06 horizon: update + draw (whole observer)", _time_moves(app.controls["horizon"], horizons)))
    runs = [("mlp", 2, 0.1), ("dropout", 2, 0.1), ("ensemble+", 2, 0.2), ("ensemble+", 2, 0.5)][:bandit_runs]
    if runs:
        refits.append(("06 new agent / ρ at d = 2: one bandit run (T = 1000, 4 problems)",
                       _time_calls(lambda *key: explorer.result(*key), runs)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="moves timed per control (after one warm-up move)")
    parser.add_argument("--bandit-runs", type=int, default=1, help="new bandit runs timed for notebook 06 (0–4)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["01-03", "04", "05", "06"],
                        help="notebooks to leave out")
    args = parser.parse_args()
    r = args.repeats
    plain: list = []
    refits: list = []
    if "01-03" not in args.skip:
        bench_01_to_03(r, plain, refits)
    if "04" not in args.skip:
        bench_04(r, plain)
    if "05" not in args.skip:
        bench_05(r, plain)
    if "06" not in args.skip:
        bench_06(r, plain, refits, args.bandit_runs)
    _print_plain(plain)
    _print_refits(refits)
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
          "(wall times on a shared machine are inflated by other processes; CPU times are not)")


if __name__ == "__main__":
    main()
