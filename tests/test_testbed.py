import concurrent.futures
import dataclasses
import re
import threading

import jax
import numpy as np
import pandas as pd
import pytest
from scipy.special import log_softmax

import _fakes
import jtk
from jtk.testbed import runs
from jtk import testbed, train as train_lib
from jtk.testbed import engine
from jtk.agents import ProblemInfo

# every temperature and τ, the smallest / a middle / the largest training set, 2 seeds
CHECK_GRID = testbed.grid(num_train=(1, 30, 1000), seeds=2)
# |d_KL| of the true environment is float32 rounding: ≤ 1e-7 on the CPU, up to 1.04e-5 measured on an H100 (other
# reduction orders); the bound keeps a margin over each.
ZERO_KL = 1e-5 if jax.default_backend() == "cpu" else 5e-5


@pytest.mark.parametrize("exact", [True, False])
def test_agent_that_knows_the_environment_has_zero_kl(exact):
    problems = CHECK_GRID if exact else CHECK_GRID[::6]
    df = testbed.evaluate(testbed.OracleAgent(problems, exact), problems, name="oracle", progress=False)
    assert len(df) == len(problems)
    assert np.abs(df["kl"]).max() < ZERO_KL
    assert set(df["likelihood"]) == {"exact" if exact else "mc1000"}


def test_oracle_agent_refuses_unknown_data():
    oracle = testbed.OracleAgent(CHECK_GRID[:1])
    with pytest.raises(ValueError, match="only knows the problems"):
        oracle.fit(np.zeros((3, 2)), np.zeros(3, int))


def test_uniform_agent_matches_closed_form():
    df = testbed.evaluate("uniform", CHECK_GRID, progress=False)
    for _, row in df.iterrows():
        p = testbed.Problem(row.temperature, int(row.num_train), int(row.tau), int(row.seed))
        _, _, test = testbed.load_problem(p)
        logp = log_softmax(np.asarray(test.true_logits, np.float64), -1)
        true_ll = logp[np.arange(len(test.y)), np.asarray(test.y)].reshape(-1, p.tau).sum(-1)
        closed_form = np.mean(true_ll + p.tau * np.log(2.0))
        assert abs(row.kl - closed_form) < 1e-4 * max(1.0, abs(closed_form))


def test_generic_and_vectorised_paths_agree():
    agent = jtk.agents.make("ensemble+", num_members=3, num_steps=50)
    problems = testbed.grid(temperatures=(0.1,), num_train=(10, 200), taus=(10,), seeds=1)
    fast = testbed.evaluate(agent, problems, progress=False)

    class Wrapped:  # hides the JaxAgent type, so the testbed uses fit() problem by problem
        def fit(self, x, y, seed=0, prior=None):
            return agent.fit(x, y, seed=seed, prior=prior)

    slow = testbed.evaluate(Wrapped(), problems, name=fast.agent[0], progress=False)
    np.testing.assert_allclose(fast["kl"], slow["kl"], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(fast["accuracy"], slow["accuracy"], atol=2e-3)


def test_tau_problems_share_environment_and_training_data():
    p1 = testbed.Problem(0.1, 30, 1, 4)
    e1, d1, t1 = testbed.load_problem(p1)
    e10, d10, t10 = testbed.load_problem(dataclasses.replace(p1, tau=10))
    np.testing.assert_array_equal(d1.x, d10.x)
    np.testing.assert_array_equal(e1[0][0], e10[0][0])
    assert t1.x.shape == (1000, 2) and t10.x.shape == (10_000, 2)
    other = testbed.load_problem(testbed.Problem(0.1, 30, 1, 5))[1]
    assert not np.allclose(d1.x, other.x)


def test_paper_grid_is_the_420_problems_of_the_paper():
    problems = testbed.paper_problems()
    assert len(problems) == 420
    assert {p.tau for p in problems} == {1, 10}
    assert sorted({p.num_train for p in problems}) == [1, 3, 10, 30, 100, 300, 1000]
    assert sorted({p.temperature for p in problems}) == [0.01, 0.1, 0.5]
    assert len({p.training_problem for p in problems}) == 210
    assert len(testbed.quick_problems()) == 16


def test_results_have_the_documented_columns_and_are_deterministic():
    problems = testbed.grid(temperatures=(0.5,), num_train=(10,), seeds=2)
    a = testbed.evaluate(jtk.agents.make("mlp", num_steps=50), problems, name="mlp", progress=False)
    assert {"agent", "temperature", "num_train", "tau", "seed", "kl", "train_seconds", "eval_seconds"} <= set(a)
    assert list(a.agent.unique()) == ["mlp"] and len(a) == 4
    b = testbed.evaluate(jtk.agents.make("mlp", num_steps=50), problems, name="mlp", progress=False)
    pd.testing.assert_frame_equal(a.drop(columns=["train_seconds", "eval_seconds"]),
                                  b.drop(columns=["train_seconds", "eval_seconds"]))


def test_executor_path_gives_identical_results():
    from concurrent.futures import ThreadPoolExecutor

    problems = testbed.grid(temperatures=(0.1,), num_train=(10, 100), seeds=1)
    local = testbed.evaluate("uniform", problems, progress=False)
    with ThreadPoolExecutor(2) as ex:
        remote = testbed.evaluate("uniform", problems, executor=ex, progress=False)
    pd.testing.assert_series_equal(local["kl"], remote["kl"])


def test_summarize_clips_negatives_groups_and_normalises():
    rows = []
    for agent, scale in (("a", 1.0), ("b", 2.0)):
        for seed in range(3):
            for tau, kl in ((1, 0.1 * (seed + 1)), (10, 1.0 * (seed + 1))):
                rows.append(dict(agent=agent, tau=tau, seed=seed, num_train=10, temperature=0.1, input_dim=2,
                                 kl=scale * kl, accuracy=0.8, ece=0.1, train_seconds=1, eval_seconds=1))
    rows.append(dict(rows[0], kl=-5.0, seed=3))
    table = testbed.summarize(pd.DataFrame(rows), baseline="a")
    assert np.isclose(table.loc["a", "kl_1"], (0.1 + 0.2 + 0.3 + 0.0) / 4)
    assert np.isclose(table.loc["b", "kl_10"], 4.0)
    assert np.isclose(table.loc["b", "kl_10_se"], np.std([2, 4, 6], ddof=0) / np.sqrt(3))  # per-seed means
    by_env = testbed.summarize(pd.DataFrame(rows), se="environment")
    assert np.isclose(by_env.loc["b", "kl_10_se"], np.std([2, 4, 6], ddof=1) / np.sqrt(3))
    assert np.isclose(table.loc["b", "kl_10_rel"], 2.0)
    with pytest.raises(ValueError, match="baseline"):
        testbed.summarize(pd.DataFrame(rows), baseline="mlp")


@pytest.mark.parametrize("kwargs, match", [
    (dict(temperature=0.0, num_train=10, tau=1, seed=0), "temperature"),
    (dict(temperature=0.1, num_train=0, tau=1, seed=0), "num_train"),
    (dict(temperature=0.1, num_train=10, tau=0, seed=0), "tau"),
    (dict(temperature=0.1, num_train=10, tau=1, seed=-1), "seed"),
])
def test_bad_problems_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        testbed.Problem(**kwargs)


def test_grid_seeds():
    """An int n means seeds 0..n-1; an iterable is taken as given; bad seeds name the argument."""
    assert sorted({p.seed for p in testbed.grid(seeds=3)}) == [0, 1, 2]
    assert sorted({p.seed for p in testbed.grid(seeds=[4, 7])}) == [4, 7]
    assert testbed.grid(seeds=[]) == []
    with pytest.raises(ValueError, match="seeds must be >= 1"):
        testbed.grid(seeds=0)
    with pytest.raises(ValueError, match="seeds entries must be >= 0"):
        testbed.grid(seeds=[1, -2])
    with pytest.raises(TypeError, match="seeds must be an int n"):
        testbed.grid(seeds=2.5)
    with pytest.raises(TypeError, match="seeds must be an int n"):
        testbed.grid(seeds="12")


def test_bad_evaluate_arguments():
    with pytest.raises(ValueError, match="name must be one of"):
        testbed.evaluate("mpl", "quick", progress=False)
    with pytest.raises(TypeError, match="fit"):
        testbed.evaluate(object(), "quick", progress=False)
    with pytest.raises(ValueError, match="problems must be one of"):
        testbed.evaluate("uniform", "huge", progress=False)
    with pytest.raises(TypeError, match=r"problems\[0\]"):
        testbed.evaluate("uniform", [("0.1", 10)], progress=False)


def test_a_posterior_with_wrong_shapes_is_reported():
    class Bad:
        def fit(self, x, y, seed=0, prior=None):
            return self

        def sample_logits(self, x, num_samples, seed=0):
            return np.zeros((num_samples, len(x)))  # forgot the class axis

    with pytest.raises(ValueError, match=r"expected \[1000, n, K\]"):
        testbed.evaluate(Bad(), testbed.quick_problems(seeds=1)[:1], progress=False)


def test_prior_tells_the_agent_the_problem():
    p = testbed.Problem(0.5, 30, 10, 2)
    assert p.prior() == ProblemInfo(input_dim=2, num_classes=2, num_train=30, temperature=0.5, tau=10)


def test_classification_grid_uses_polyadic_test_inputs():
    problems = testbed.classification_problems()
    assert len(problems) == 360
    assert {p.input_dim for p in problems} == {2, 10, 100}
    assert {p.num_train for p in problems if p.input_dim == 10} == {10, 100, 1000, 10_000}
    p = testbed.Problem(0.1, 20, 10, 0, input_dim=10, test_inputs="polyadic", num_test=50)
    _, data, test = testbed.load_problem(p)
    x = np.asarray(test.x).reshape(50, 10, 10)
    distinct = [len(np.unique(sample, axis=0)) for sample in x]
    assert max(distinct) <= 2 and min(distinct) >= 1 and np.mean(distinct) > 1.5
    iid = testbed.load_problem(dataclasses.replace(p, test_inputs="iid"))[2]
    assert len(np.unique(np.asarray(iid.x).reshape(50, 10, 10)[0], axis=0)) == 10
    with pytest.raises(ValueError, match="test_inputs"):
        dataclasses.replace(p, test_inputs="sobol")


def test_polyadic_problems_evaluate_in_higher_dimensions():
    problems = [testbed.Problem(0.1, 100, tau, 0, input_dim=10, test_inputs="polyadic", num_test=200)
                for tau in (1, 10)]
    df = testbed.evaluate("uniform", problems, progress=False)
    assert df.kl.notna().all() and (df.kl[df.tau == 10].values > df.kl[df.tau == 1].values).all()


class _AfterFirstCheck:
    """An interrupt whose flag turns true at its second check."""

    def __init__(self):
        self.checks = 0

    @property
    def requested(self):
        self.checks += 1
        return self.checks > 1


def test_evaluate_stops_between_chunks_when_interrupted(monkeypatch):
    """An interrupt (jtk.results.DeferredInterrupt's protocol) stops evaluate after the running chunk."""
    from jtk.results import Interrupted

    monkeypatch.setenv("JTK_THREADS", "1")
    problems = testbed.problems("quick")
    assert len(engine.make_chunks(problems, jtk.agents.make("mlp"))) > 1
    with pytest.raises(Interrupted) as err:
        testbed.evaluate("mlp", problems, progress=False, interrupt=_AfterFirstCheck())
    assert 0 < err.value.kept < err.value.total == len(problems)


# four minibatch buckets: four chunks or more, more than two threads run at once
THREAD_GRID = testbed.grid(temperatures=(0.1,), num_train=(1, 3, 10, 30), seeds=2)


def test_chunks_in_threads_give_bitwise_the_serial_results(monkeypatch):
    agent = jtk.agents.make("ensemble+", num_members=3, num_steps=30)
    assert len(engine.make_chunks(THREAD_GRID, agent)) >= 4
    frames = {}
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("JTK_THREADS", threads)
        frames[threads] = testbed.evaluate(agent, THREAD_GRID, progress=False).drop(
            columns=["train_seconds", "eval_seconds"])
    pd.testing.assert_frame_equal(frames["1"], frames["2"], check_exact=True)
    pd.testing.assert_frame_equal(frames["1"], frames["3"], check_exact=True)


def test_interrupt_keeps_the_chunks_running_in_threads_and_cancels_the_rest(monkeypatch):
    from jtk.results import Interrupted

    monkeypatch.setenv("JTK_THREADS", "2")
    agent = jtk.agents.make("mlp", num_steps=30)
    sizes = [sum(len(g) for g in c) for c in engine.make_chunks(THREAD_GRID, agent)]
    with pytest.raises(Interrupted) as err:
        testbed.evaluate(agent, THREAD_GRID, progress=False, interrupt=_AfterFirstCheck())
    # the two chunks that had started finish and are kept; the two queued ones never start
    assert err.value.kept == sum(sizes[:2]) and err.value.total == len(THREAD_GRID) == sum(sizes)


def test_local_threads_one_per_core_only_for_jtk_agents_on_the_cpu(monkeypatch):
    from jtk import executors

    monkeypatch.delenv("JTK_THREADS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)))
    mlp = jtk.agents.make("mlp")
    assert executors.local_threads(100, [mlp]) == executors.MAX_LOCAL_THREADS
    assert executors.local_threads(3, [mlp]) == 3
    assert executors.local_threads(100, [mlp, testbed.OracleAgent(CHECK_GRID[:1])]) == 1  # another's code
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert executors.local_threads(100, [mlp]) == 1
    monkeypatch.setenv("JTK_THREADS", "6")
    assert executors.local_threads(100, [mlp]) == 6 and executors.local_threads(2, [mlp]) == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("JTK_THREADS", bad)
        with pytest.raises(ValueError, match=f"JTK_THREADS must be a positive integer, got '{bad}'"):
            executors.local_threads(4, [mlp])


@pytest.mark.parametrize("name,members,size", [("mlp", 1, 4), ("ensemble+", 10, 1), ("ensemble+", 100, 1),
                                               ("dropout", 1, 32)])
def test_chunks_share_one_size_are_bounded_and_costliest_first(name, members, size):
    agent = jtk.agents.make(name, **({"num_members": members} if name != "dropout" else {}))
    chunks = engine.make_chunks(testbed.problems("paper"), agent)
    assert sorted(len(g) for c in chunks for g in c) == [2] * 210  # every group once, both τ in it
    assert {c.size for c in chunks} == {size}  # one shape per program, whatever the minibatch size
    for c in chunks:
        spec = agent.specialize(c[0][0].prior())
        assert len(c) <= c.size <= engine.MAX_GROUPS_PER_CHUNK and c.size * members <= engine.MEMBERS_PER_CHUNK
        if hasattr(spec, "members_per_block"):  # an ensemble: problems × member blocks fill the cache budget
            nominal = agent.specialize(testbed.Problem(temperature=0.1, num_train=1000, tau=1, seed=0).prior())
            assert c.size == 1 or c.size * nominal.members_per_block() * (agent.batch_size + train_lib.PARAMETER_ROWS) \
                <= train_lib.CPU_BLOCK_ROWS
        else:
            assert c.size == 1 or c.size * members * agent.batch_size <= engine.MEMBER_ROWS_PER_CHUNK
    cost = [c.size * agent.specialize(c[0][0].prior()).batch_size for c in chunks]
    assert cost == sorted(cost, reverse=True)


def test_a_small_grid_is_not_padded_beyond_its_largest_minibatch_size():
    """The quick grid has 4 groups per minibatch size: chunks of 4 (dropout: not of the paper grid's 32)."""
    for agent in (jtk.agents.make("mlp"), jtk.agents.make("dropout")):
        assert {c.size for c in engine.make_chunks(testbed.problems("quick"), agent)} == {4}


def test_chunks_pickle_with_their_size_and_programs(monkeypatch):
    import pickle

    monkeypatch.setattr(engine, "_PROGRAMS", {})  # no program of an earlier test

    chunk = engine.make_chunks(testbed.problems("quick"), jtk.agents.make("mlp"))[0]
    again = pickle.loads(pickle.dumps(chunk))
    assert isinstance(again, engine.Chunk) and again.size == chunk.size and list(again) == list(chunk)
    assert again.programs == chunk.programs and len(chunk.programs) == 2  # minibatches 16 and 100


def test_the_paper_grid_trains_every_minibatch_size_in_one_program(monkeypatch):
    monkeypatch.setattr(engine, "_PROGRAMS", {})
    agent = jtk.agents.make("mlp")
    chunks = engine.make_chunks(testbed.problems("paper"), agent)
    assert {c.programs for c in chunks} == {tuple(agent.specialize(ProblemInfo(input_dim=2, num_classes=2, num_train=n))
                                                  for n in (1, 3, 10, 30, 100))}
    assert [a.batch_size for a in chunks[0].programs] == [1, 4, 16, 32, 100]
    for c in chunks:  # each chunk is one of its program's branches
        assert agent.specialize(c[0][0].prior()) in c.programs


@pytest.mark.parametrize("name", ["mlp", "sgld"])  # trained by the shared loop / by its own train
def test_one_program_for_all_minibatch_sizes_gives_the_bits_of_one_program_each(name, monkeypatch):
    """A grid of three minibatch sizes compiles one training program, and every row equals evaluating each size on its
    own in a fresh process's state (then each chunk's program has its single branch, the program the switch
    replaced)."""
    monkeypatch.setattr(engine, "_PROGRAMS", {})
    agent = jtk.agents.make(name, num_steps=60, **({"burn_in": 20, "thin": 20, "warm_start_steps": 10}
                                                     if name == "sgld" else {}))
    problems = testbed.grid(temperatures=(0.1,), num_train=(1, 10, 100), seeds=1, taus=(1,))
    program = engine._finish_states if agent.incremental else engine._train_states
    before = program._cache_size()
    together = testbed.evaluate(agent, problems, progress=False)
    assert program._cache_size() == before + 1
    apart = []
    for p in problems:
        monkeypatch.setattr(engine, "_PROGRAMS", {})  # else the three-branch program serves each
        apart.append(testbed.evaluate(agent, [p], progress=False))
    assert program._cache_size() == before + 4
    apart = pd.concat(apart, ignore_index=True)
    columns = ["num_train", "kl", "kl_std", "accuracy", "ece"]
    pd.testing.assert_frame_equal(testbed.sort_rows(together)[columns].reset_index(drop=True),
                                  testbed.sort_rows(apart)[columns].reset_index(drop=True), check_exact=True)


def test_chunks_on_a_gpu_are_as_wide_as_the_accelerator_limit(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    for members, largest, size in ((1, 90, 96), (10, 90, 96), (100, 16, 16)):  # 90: the n ≥ 100 groups
        chunks = engine.make_chunks(testbed.problems("paper"), jtk.agents.make("ensemble+", num_members=members))
        assert max(len(c) for c in chunks) == largest
        assert {c.size for c in chunks} == {size}  # one shape: the small minibatch sizes are padded to it
        assert all(c.size * members <= engine.MEMBERS_PER_CHUNK for c in chunks)


def test_components_in_blocks_of_inputs_equal_the_whole_evaluation():
    agent = jtk.agents.make("ensemble+", num_members=300, num_steps=2)
    block = engine.COMPONENT_ROWS_PER_BLOCK // 300
    _, args = engine._train_inputs(agent, [testbed.Problem(temperature=0.1, num_train=10, tau=1, seed=0)])
    _, states = engine._train_chunk(*args)
    state = jax.tree_util.tree_map(lambda a: a[0], states)
    x = jax.random.normal(jax.random.key(0), (10 * block + 7, 2))  # 11 blocks, the last one padded
    whole = agent.components(state, x)
    blocked = jax.jit(engine._blocked_components, static_argnums=0)(agent, state, x)
    assert blocked.shape == whole.shape == (300, x.shape[0], 2)
    np.testing.assert_allclose(np.asarray(blocked), np.asarray(whole), rtol=1e-5, atol=1e-5)


def test_padded_count_is_a_power_of_two_then_a_multiple_of_32():
    assert [testbed.padded_count(n) for n in (1, 2, 3, 5, 17, 30, 32)] == [1, 2, 4, 8, 32, 32, 32]
    assert [testbed.padded_count(n) for n in (33, 64, 65, 90, 96, 97)] == [64, 64, 96, 96, 96, 128]
    for n in range(1, 300):
        assert 0 <= testbed.padded_count(n) - n < max(32, n)


def test_the_gpu_path_in_its_cpu_form_scores_as_the_cpu_path(monkeypatch):
    """With the backend reported as a GPU, the testbed takes its GPU path on this CPU: chunks as wide as
    MEMBERS_PER_CHUNK (one per minibatch size here), every member of an ensemble trained at once (no member blocks),
    components scored without input blocks, one thread, the grid's programs compiled ahead side by side
    (testbed.compile_ahead). Only float rounding may differ from the CPU path, so the scores agree within the
    cross-machine tolerance (docs/reference.md)."""
    from jtk import results

    agent = jtk.agents.make("ensemble+", num_members=20, num_steps=200)  # K = 20: blocks of 10 on the CPU
    problems = testbed.problems("quick", seeds=1)
    cpu = testbed.evaluate(agent, problems, progress=False)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    jax.clear_caches()  # traces made on the CPU path would be reused: the backend is read while tracing
    assert agent.specialize(problems[0].prior()).members_per_block() == 20
    assert {c.size for c in engine.make_chunks(problems, agent)} == {2}  # all groups of a minibatch size at once
    gpu = testbed.evaluate(agent, problems, progress=False)
    jax.clear_caches()
    pd.testing.assert_frame_equal(gpu[["kl", "accuracy"]], cpu[["kl", "accuracy"]], check_exact=False,
                                  rtol=results.CROSS_MACHINE_RTOL, atol=results.CROSS_MACHINE_ATOL)


def test_a_later_grid_reuses_the_program_that_has_its_minibatch_sizes(monkeypatch):
    """After a grid of minibatch sizes 1, 16 and 100, new num_train values in those sizes compile nothing; a new size
    compiles one program with all four."""
    monkeypatch.setattr(engine, "_PROGRAMS", {})
    agent = jtk.agents.make("mlp", num_steps=20)
    grid = lambda *ns: testbed.grid(temperatures=(0.1,), num_train=ns, seeds=1, taus=(1,))  # noqa: E731
    testbed.evaluate(agent, grid(1, 10, 100), progress=False)
    before = engine._finish_states._cache_size()
    testbed.evaluate(agent, grid(9, 700), progress=False)
    assert engine._finish_states._cache_size() == before
    chunks = engine.make_chunks(grid(2, 300), agent)
    assert [a.batch_size for a in chunks[0].programs] == [1, 2, 16, 100]


def test_programs_are_shared_only_between_grids_of_one_chunk_size(monkeypatch):
    """A program's shapes include the chunk size: the quick grid's chunks of 4 do not take the paper grid's five
    branches (compiled for chunks of 32), which would compile three branches it never runs."""
    monkeypatch.setattr(engine, "_PROGRAMS", {})
    agent = jtk.agents.make("dropout")
    paper = engine.make_chunks(testbed.problems("paper"), agent)
    quick = engine.make_chunks(testbed.problems("quick"), agent)
    assert {c.size for c in paper} == {32} and {c.size for c in quick} == {4}
    assert len(paper[0].programs) == 5 and [a.batch_size for a in quick[0].programs] == [16, 100]


AHEAD_GRID = testbed.grid(temperatures=(0.1,), num_train=(3, 100), seeds=1)  # two minibatch sizes, τ = 1 and 10
GRID_PROGRAMS = {"_make_training", "_start_states", "_finish_states", "_train_states", "_eval_chunk"}


def _evaluate_compiling_ahead(agent, monkeypatch, request=None):
    """AHEAD_GRID's rows compiled on first call, its rows on the compile-ahead path (forced here, on the CPU), and
    the (program, thread) of every compile of the latter; with pytest's ``request``, the latter run beside 2 × the
    cores of busy processes (``busy_cpus``)."""
    from jax import monitoring

    from jtk import _compile

    plain = testbed.evaluate(agent, AHEAD_GRID, progress=False).drop(columns=["train_seconds", "eval_seconds"])
    jax.clear_caches()
    monkeypatch.setattr(_compile, "executable_dir", lambda: None)  # kept programs: this process's only
    _compile.clear_programs()  # so that the run below compiles them (ahead) instead of finding them
    if request is not None:
        request.getfixturevalue("busy_cpus")
    compiled = []

    def listener(event, duration, **kw):
        if event.endswith("backend_compile_duration"):
            compiled.append((kw.get("fun_name", ""), threading.current_thread().name))

    monkeypatch.setattr(engine, "compiles_ahead", lambda executor=None: executor is None)
    monitoring.register_event_duration_secs_listener(listener)
    try:
        ahead = testbed.evaluate(agent, AHEAD_GRID, progress=False).drop(columns=["train_seconds", "eval_seconds"])
    finally:
        monitoring.unregister_event_duration_listener(listener)
    return plain, ahead, compiled


@pytest.mark.parametrize("name, kwargs", [("mlp", {"num_steps": 37}), ("ensemble+", {"num_members": 3, "num_steps": 37}),
                                          ("dropout", {"num_steps": 37}),  # sampled functions (mc)
                                          ("sgld", {"num_steps": 37, "burn_in": 7, "thin": 10})])  # its own train
def test_compiling_ahead_compiles_every_grid_program_first_and_changes_no_score(name, kwargs, monkeypatch):
    """The GPU path compiles a grid's programs side by side before it runs any (testbed.compile_ahead): here in its
    CPU form. Every compile of a grid program happens in a compile thread, none while the chunks run, and the rows
    are bitwise those of a run that compiles on first call."""
    agent = jtk.agents.make(name, **kwargs)
    plain, ahead, compiled = _evaluate_compiling_ahead(agent, monkeypatch)
    programs = [(re.fullmatch(r"jit\((\w+)\)", fun), thread) for fun, thread in compiled]
    grid_compiles = [(m.group(1), thread) for m, thread in programs if m and m.group(1) in GRID_PROGRAMS]
    trained_by = {"_start_states", "_finish_states"} if agent.incremental else {"_train_states"}
    assert {fun for fun, _ in grid_compiles} == {"_make_training", "_eval_chunk"} | trained_by
    assert all(thread.startswith("jtk-compile") for _, thread in grid_compiles), grid_compiles
    pd.testing.assert_frame_equal(ahead, plain, check_exact=True)


def test_split_branches_compile_one_training_program_per_minibatch_size_ahead(monkeypatch, request):
    """engine.SPLIT_BRANCHES_AHEAD (a GPU trial): where the grid compiles ahead, each minibatch size gets its own
    training program, all compiled in compile threads, and the rows stay bitwise those of one program, also with
    the compile threads and the chunk threads beside 2 × the cores of busy processes."""
    monkeypatch.setattr(engine, "SPLIT_BRANCHES_AHEAD", True)  # the plain run does not compile ahead: one program
    plain, split, compiled = _evaluate_compiling_ahead(jtk.agents.make("mlp", num_steps=29), monkeypatch, request)
    training = [thread for fun, thread in compiled if fun == "jit(_finish_states)"]
    assert len(training) == 2 and all(t.startswith("jtk-compile") for t in training), compiled  # minibatch 4 and 100
    pd.testing.assert_frame_equal(split, plain, check_exact=True)


@pytest.mark.parametrize("runner", ["evaluate", "evaluate_to_file", "sweep"])
def test_every_grid_runner_compiles_ahead_the_chunks_it_then_runs(runner, tmp_path, monkeypatch):
    """evaluate, jtk testbed --out (evaluate_to_file) and jtk sweep all run a grid through testbed.run_grid: off the
    CPU (forced here) compile_ahead gets exactly the evaluate_chunk calls that then run, and with an executor none."""
    from jtk.testbed import sweep

    agent_kwargs = (("num_steps", 23),)
    agent = jtk.agents.make("mlp", **dict(agent_kwargs))
    ahead, ran = [], []
    monkeypatch.setattr(engine, "compiles_ahead", lambda executor=None: executor is None)
    monkeypatch.setattr(engine, "compile_ahead", lambda tasks, threads=None: ahead.extend(tasks) or len(tasks))
    real_chunk = testbed.evaluate_chunk
    monkeypatch.setattr(engine, "evaluate_chunk", lambda *args: ran.append(args) or real_chunk(*args))
    if runner == "evaluate":
        rows = testbed.evaluate(agent, AHEAD_GRID, progress=False)
    elif runner == "evaluate_to_file":
        rows = runs.evaluate_to_file(agent, AHEAD_GRID, tmp_path / "mlp.csv", progress=False)
    else:
        rows = sweep.run([sweep.Config("mlp", agent_kwargs)], AHEAD_GRID, tmp_path / "sweep", progress=False)
    assert len(rows) == len(AHEAD_GRID) and len(ran) == 2  # two minibatch sizes: two chunks
    assert sorted(map(repr, ahead)) == sorted(map(repr, ran))
    ahead.clear()
    saved = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        testbed.run_grid(["one"], lambda task: ran[0], lambda task, frame: saved.append((task, len(frame))),
                         executor=pool, stop=RuntimeError)
    assert ahead == [] and saved == [("one", 2)]  # τ = 1 and 10 of the chunk's one group


def test_compile_ahead_lowers_each_program_once_and_skips_other_agents():
    agent = jtk.agents.make("mlp", num_steps=41)
    chunks = engine.make_chunks(testbed.problems("paper"), agent)  # five minibatch sizes, one training program
    tasks = [(agent, c, "mlp", "auto") for c in chunks]
    from jtk import _compile

    _compile.clear_programs()  # none kept in this process, and none loaded from the store:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_compile, "executable_dir", lambda: None)
        seen: dict = {}
        lowered = [low for t in tasks for _, _, low in engine._lower_chunk(*t, seen)]
    names = sorted(re.search(r"module @(\w+)", low.as_text()).group(1) for low in lowered)
    assert len(chunks) > 5 and names == ["jit__eval_chunk"] * 2 + ["jit__finish_states", "jit__make_training",
                                                                   "jit__start_states"]  # scoring at τ = 1 and 10
    assert testbed.compile_ahead([(jtk.agents.make("knn"), [[AHEAD_GRID[0]]], "knn", "auto")]) == 0
    assert not testbed.compiles_ahead() if jax.default_backend() == "cpu" else testbed.compiles_ahead()
    assert not testbed.compiles_ahead(executor=object())


@pytest.mark.parametrize("low", [-np.inf, -1e300])
def test_infinite_kl_is_clipped_as_the_reference_but_reported_and_warned(low):
    """The reference's clip stays (reference-exact tables), but frac_finite says how much was clipped, loudly."""
    problems = [testbed.Problem(temperature=0.5, num_train=10, tau=tau, seed=0, num_test=200, num_samples=10)
                for tau in (1, 2)]
    with pytest.warns(testbed.InfiniteKLWarning, match=r"KL is \+inf.*hardmax.*frac_finite = 0\.\d+.*check_agent"):
        rows = testbed.evaluate(_fakes.HardMax(0.0, low), problems, progress=False)
    assert (rows["frac_finite"] < 1).all()
    # the clip rule: mean KL of the finite values with +inf replaced by the problem's largest finite one
    p = problems[0]
    _, data, test = testbed.load_problem(p)
    agent = _fakes.HardMax(0.0, low)
    agent.fit(np.asarray(data.x[:10]), np.asarray(data.y[:10]))
    with np.errstate(over="ignore"):  # -1e300 is -inf in float32, as the testbed scores it
        logits = agent.sample_logits(np.asarray(test.x), 10).astype(np.float32)
    kl, _ = engine.score_numpy(logits, test, 1)
    finite = np.isfinite(kl)
    assert rows.loc[rows["tau"] == 1, "frac_finite"].iloc[0] == finite.mean()
    assert rows.loc[rows["tau"] == 1, "kl"].iloc[0] == pytest.approx(np.where(finite, kl, kl[finite].max()).mean())
    with pytest.warns(testbed.InfiniteKLWarning):
        table = testbed.summarize(rows)
    assert table["frac_finite"].iloc[0] == pytest.approx(rows["frac_finite"].mean())


def test_summary_reports_the_fraction_of_finite_samples_without_warning_when_all_are_finite():
    import warnings

    rows = testbed.evaluate("uniform", testbed.grid(temperatures=(0.5,), num_train=(10,), seeds=2), progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", testbed.InfiniteKLWarning)
        table = testbed.summarize(rows)
    assert table.loc["uniform", "frac_finite"] == 1.0


def test_engine_settings_are_not_copied_into_the_testbed_package():
    """``monkeypatch.setattr(jtk.testbed, "MEMBERS_PER_CHUNK", ...)`` would change a copy the engine never reads: the
    package refuses the name and says where it lives."""
    with pytest.raises(AttributeError, match=r"jtk\.testbed\.engine\.MEMBERS_PER_CHUNK"):
        jtk.testbed.MEMBERS_PER_CHUNK
    assert engine.MEMBERS_PER_CHUNK > 0
