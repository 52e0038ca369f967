"""Past one process: Ray RLlib's EnvRunners on moreau's vector environments
(moreau.rllib, python/examples/rllib_ppo.py) and SHAC under
torch.distributed (python/examples/distributed.py, launched by torchrun)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_world_seeds_are_distinct_per_runner_and_per_world():
    """RLlib resets runner k with seed + k; Gymnasium's rule (seed + i for
    world i) would repeat streams across runners, moreau.rllib's does not."""
    rllib = pytest.importorskip("moreau.rllib")
    seeds = [s for runner in range(4) for s in rllib.world_seeds(100 + runner, 64)]
    assert len(set(seeds)) == len(seeds)
    assert rllib.world_seeds(100, 64) == rllib.world_seeds(100, 64)
    assert all(0 <= s < 2**63 for s in seeds)


def test_the_environment_creator_refuses_bad_configs_by_name():
    rllib = pytest.importorskip("moreau.rllib")
    with pytest.raises(ValueError, match="env_config\\['task'\\]"):
        rllib.make_env({"num_envs": 2})
    with pytest.raises(ValueError, match="unknown task 'Ant-v9'"):
        rllib.make_env({"task": "Ant-v9", "num_envs": 2})
    with pytest.raises(ValueError, match="threads"):
        rllib.make_env({"task": "InvertedPendulum-v5", "threads": 0})
    with pytest.raises(TypeError, match="ctrl_cost"):
        rllib.make_env({"task": "InvertedPendulum-v5", "num_envs": 2, "ctrl_cost": 1.0})
    env = rllib.make_env({"task": "Hopper-v5", "num_envs": 3, "ctrl_cost_weight": 0.01})
    assert env.num_envs == 3 and env.unwrapped.params["ctrl_cost_weight"] == 0.01
    obs, _ = env.reset(seed=5)
    again, _ = rllib.make_env({"task": "Hopper-v5", "num_envs": 3}).reset(seed=5)
    np.testing.assert_array_equal(obs, again)
    # Worlds of one runner start apart.
    assert not np.array_equal(obs[0], obs[1])


def test_set_num_threads_fixes_the_pool_once_per_process():
    """In a fresh interpreter: asking the count does not start the pool; the
    first set wins, the same count again is no error, another raises."""
    code = """
import moreau
n = moreau.num_threads()
moreau.set_num_threads(1)
assert moreau.num_threads() == 1
moreau.set_num_threads(1)
try:
    moreau.set_num_threads(2)
except RuntimeError as e:
    assert "already runs 1 threads" in str(e), e
else:
    raise AssertionError("resized")
try:
    moreau.set_num_threads(0)
except ValueError:
    pass
else:
    raise AssertionError("0 threads accepted")
import numpy as np
m = moreau.scene("quadruped")
b = moreau.BatchSim(m, 4)
b.step(np.zeros((4, m.nv)), 10)
assert moreau.num_threads() == 1
print("ok", n)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_rllib_ppo_with_two_env_runners_trains_the_inverted_pendulum_through_a_killed_runner():
    """RLlib's PPO (python/examples/rllib_ppo.py's config) with 2 EnvRunners
    of 8 worlds each on a local Ray instance: each runner's batch is one
    moreau vector environment on 1 thread (the CPU Ray gave it), its
    worlds seeded apart from the other runner's, and the runners have no
    Vulkan driver (a CPU runner opens no adapter; a GPU batch there
    fails). After 3 iterations one
    runner's actor is killed (ray.kill, its process ended as by a
    crash); RLlib replaces it and training
    goes on until the mean return reaches 500 (at most 1 000)."""
    ray = pytest.importorskip("ray")
    rllib_ppo = _example("rllib_ppo")
    import moreau

    # The runners see no Vulkan driver: a CPU runner must not need one (a
    # GPU batch there fails, which describe() checks).
    no_vulkan = {"VK_ICD_FILENAMES": "/nonexistent/icd.json", "VK_DRIVER_FILES": "/nonexistent/icd.json"}
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": no_vulkan})
    try:
        algo = rllib_ppo.build_config(
            task="InvertedPendulum-v5",
            env_runners=2,
            envs_per_runner=8,
            train_batch=2000,
            minibatch=250,
            normalize_observations=False,
            seed=0,
        ).build_algo()
        group = algo.env_runner_group

        def describe(runner):
            env = runner.env.unwrapped
            try:
                moreau.BatchSim(env.model, 1, backend="gpu")
                adapter = "found"
            except ValueError as e:
                adapter = str(e)
            assert "adapter" in adapter, adapter
            return (
                os.getpid(),
                moreau.num_threads(),
                type(env).__name__,
                env.num_envs,
                [int(rng.bit_generator.seed_seq.entropy) for rng in env._rngs],
            )

        returns, killed = [], None
        for it in range(60):
            result = algo.train()
            ret = result["env_runners"].get("episode_return_mean")
            returns.append(ret)
            if it == 0:
                before = group.foreach_env_runner(describe, local_env_runner=False)
                assert len(before) == 2
                assert {d[1:4] for d in before} == {(1, "MoreauVectorEnv", 8)}
                seeds = [s for d in before for s in d[4]]
                assert len(set(seeds)) == 16, seeds
            if it == 2:
                handles = group.foreach_env_runner(
                    lambda r: ray.get_runtime_context().current_actor, local_env_runner=False
                )
                killed = before[0][0]
                # (As a crash would: the process dies, Ray may restart the actor.)
                ray.kill(handles[0], no_restart=False)
            if it > 2 and ret is not None and ret >= 500:
                break
        print("mean returns per iteration:", returns)
        assert returns[-1] is not None and returns[-1] >= 500, returns
        after = group.foreach_env_runner(describe, local_env_runner=False)
        assert group.num_healthy_remote_env_runners() == 2
        assert group.num_remote_worker_restarts() >= 1
        assert killed not in [d[0] for d in after]
        assert {d[1:4] for d in after} == {(1, "MoreauVectorEnv", 8)}
        algo.stop()
    finally:
        ray.shutdown()


def test_torchrun_ranks_all_reduce_equal_gradients(tmp_path):
    """torchrun --nproc_per_node=2 of python/examples/distributed.py (SHAC,
    16 worlds per rank, 4 windows): the ranks' own first-window gradients
    differ (their worlds are seeded apart), the all-reduced ones are equal
    on both ranks and the mean of the two, and the trained parameters are
    equal on both ranks."""
    pytest.importorskip("torch")
    torchrun = pathlib.Path(sys.executable).parent / "torchrun"
    out = subprocess.run(
        [str(torchrun), "--nproc_per_node=2", "--standalone",
         str(EXAMPLES / "distributed.py"), "--windows", "4", "--num-envs", "16", "--horizon", "20",
         "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 ranks × 16 worlds" in out.stdout
    r0, r1 = np.load(tmp_path / "rank0.npz"), np.load(tmp_path / "rank1.npz")
    layers = [k for k in r0.files if k.startswith("local")]
    assert layers
    for k in layers:
        i = k[len("local"):]
        assert not np.allclose(r0[k], r1[k]), k
        np.testing.assert_array_equal(r0[f"averaged{i}"], r1[f"averaged{i}"])
        np.testing.assert_allclose(r0[f"averaged{i}"], (r0[k] + r1[k]) / 2, rtol=1e-12, atol=1e-15)
    for k in [k for k in r0.files if k.startswith("param")]:
        np.testing.assert_array_equal(r0[k], r1[k])


def test_a_failed_world_is_reported_to_the_runner_and_reset_without_ending_it():
    """A world whose physics fails (here: a velocity of 1e200) is truncated
    and flagged in its info, as RLlib's runner reads infos (Gymnasium's
    DictInfoToList, one dict per world); the next step resets it and the
    other worlds step on."""
    rllib = pytest.importorskip("moreau.rllib")
    from gymnasium.wrappers.vector import DictInfoToList

    env = DictInfoToList(rllib.make_env({"task": "Hopper-v5", "num_envs": 3}))
    env.reset(seed=0)
    batch = env.unwrapped.batch
    batch.set_state(1, batch.q[1], np.full(batch.v.shape[1], 1e200))
    _, _, _, truncated, infos = env.step(np.zeros((3, 3), np.float32))
    assert truncated.tolist() == [False, True, False]
    assert [bool(i.get("failure", False)) for i in infos] == [False, True, False]
    obs, reward, terminated, truncated, infos = env.step(np.zeros((3, 3), np.float32))
    assert np.isfinite(obs).all() and reward[1] == 0.0
    assert not truncated.any() and not terminated.any()
    assert not any(i.get("failure", False) for i in infos)
    assert np.abs(batch.v[1]).max() < 10
