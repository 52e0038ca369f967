"""moreau.gym.tensors.TorchVecEnv: torch tensors in and out of moreau's
vector environments, the same numbers as the numpy interface, the copies
counted, bad actions refused with the environment untouched."""

import numpy as np
import pytest
import torch

import moreau.gym as mg
from moreau.gym.tensors import TorchVecEnv


def _actions(rng, envs, dtype):
    low, high = envs.single_action_space.low, envs.single_action_space.high
    return rng.uniform(1.5 * low, 1.5 * high, envs.action_space.shape).astype(dtype)


@pytest.mark.parametrize("task,dtype", [("InvertedPendulum-v5", np.float32), ("Hopper-v5", np.float64)])
def test_tensors_in_and_out_give_the_numpy_interfaces_numbers(task, dtype):
    """Tensors in and out on the CPU: the numpy environment's observations,
    rewards, terminations, truncations and infos bit for bit over 60 steps
    with episodes ending (actions out of range, clipped by the task; in
    float32 and float64, the control cost on the actions as given), no
    copy counted, each step's tensors kept by later steps."""
    n = 16
    plain = mg.make_vec(task, n, reset_rng="philox")
    wrapped = TorchVecEnv(mg.make_vec(task, n, reset_rng="philox"), "cpu")
    assert wrapped.single_observation_space == plain.single_observation_space
    o_plain, _ = plain.reset(seed=5)
    o_torch, _ = wrapped.reset(seed=5)
    assert isinstance(o_torch, torch.Tensor) and o_torch.device.type == "cpu"
    np.testing.assert_array_equal(o_torch.numpy(), o_plain)
    rng = np.random.default_rng(1)
    kept, ended = [], 0
    for _ in range(60):
        a = _actions(rng, plain, dtype)
        expected = plain.step(a)
        got = wrapped.step(torch.from_numpy(a.copy()))
        for x, y in zip(got[:4], expected[:4]):
            assert isinstance(x, torch.Tensor)
            assert x.dtype == torch.from_numpy(np.asarray(y)).dtype
            np.testing.assert_array_equal(x.numpy(), y)
        assert got[4].keys() == expected[4].keys()
        for key in expected[4]:
            np.testing.assert_array_equal(got[4][key], expected[4][key])
        kept.append((got[0].clone(), got[0]))
        ended += int(expected[2].sum())
    assert ended > 0 or task == "Hopper-v5"
    for copy, tensor in kept:
        torch.testing.assert_close(tensor, copy, rtol=0, atol=0)
    assert wrapped.copies == {"to_host": 0, "to_device": 0}


def test_another_device_counts_every_copy():
    """On a device other than the CPU (torch's ``meta`` device here, which
    keeps shapes and dtypes but no data; CUDA takes the pinned path), every
    output crosses once, counted in bytes."""
    envs = TorchVecEnv(mg.make_vec("InvertedPendulum-v5", 8), "meta")
    obs, _ = envs.reset(seed=0)
    assert obs.device.type == "meta" and tuple(obs.shape) == (8, 4)
    assert envs.copies["to_device"] == obs.numel() * obs.element_size()
    before = envs.copies["to_device"]
    out = envs.step(torch.zeros((8, 1), dtype=torch.float32))
    sizes = sum(t.numel() * t.element_size() for t in out[:4])
    assert all(t.device.type == "meta" for t in out[:4])
    assert envs.copies == {"to_host": 0, "to_device": before + sizes}


def test_bad_actions_are_refused_by_name_and_leave_the_environments_alone():
    """A numpy array, a tensor of the wrong shape or of integers, or one
    with a NaN: refused, naming the problem; the environments then step as
    if the bad call had not happened."""
    plain = mg.make_vec("InvertedPendulum-v5", 4, reset_rng="philox")
    wrapped = TorchVecEnv(mg.make_vec("InvertedPendulum-v5", 4, reset_rng="philox"))
    plain.reset(seed=2)
    wrapped.reset(seed=2)
    with pytest.raises(TypeError, match="torch tensor"):
        wrapped.step(np.zeros((4, 1), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        wrapped.step(torch.zeros((4, 2)))
    with pytest.raises(ValueError, match="floating point"):
        wrapped.step(torch.zeros((4, 1), dtype=torch.int32))
    with pytest.raises(ValueError, match="finite"):
        wrapped.step(torch.full((4, 1), float("nan")))
    a = np.full((4, 1), 0.5, dtype=np.float32)
    expected = plain.step(a)
    got = wrapped.step(torch.from_numpy(a))
    np.testing.assert_array_equal(got[0].numpy(), expected[0])
    np.testing.assert_array_equal(got[1].numpy(), expected[1])
