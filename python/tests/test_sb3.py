"""moreau.sb3: Stable-Baselines3's VecEnv over a moreau vector environment
(same-step autoreset, terminal observations, truncation flags, seeds), and
SB3's PPO learning InvertedPendulum-v5 on 8 of them."""

import numpy as np
import pytest
import torch

import moreau.gym as mg
from moreau.sb3 import to_sb3

TASK = "InvertedPendulum-v5"


def test_an_ended_episode_resets_in_the_same_step_with_its_terminal_observation():
    env = to_sb3(mg.make_vec(TASK, 4, backend="cpu1"))
    env.seed(7)
    obs = env.reset()
    assert obs.shape == (4, 4)
    # Pushing the cart one way tips the pole past 0.2 rad: terminated.
    push = np.tile(env.action_space.high, (4, 1))
    for step in range(200):
        obs, reward, done, infos = env.step(push)
        assert reward.dtype == np.float32 and done.dtype == bool
        if done.any():
            break
    assert done.all(), f"no episode ended in {step + 1} steps"
    for i in range(4):
        final = infos[i]["terminal_observation"]
        assert abs(final[1]) > 0.2, final
        assert infos[i]["TimeLimit.truncated"] is False
        # The returned observation is the next episode's first: the file's
        # state plus the reset noise (scale 0.01), the step count restarted.
        assert np.abs(obs[i]).max() <= 0.01, obs[i]
    assert (env.venv._elapsed == 0).all()
    # The next step continues the new episodes.
    obs, reward, done, infos = env.step(np.zeros((4, 1), np.float32))
    assert not done.any() and (reward == 1.0).all()
    assert all("terminal_observation" not in i for i in infos)


def test_a_truncated_episode_says_so_and_the_others_step_on():
    env = to_sb3(mg.make_vec(TASK, 3, backend="cpu1", max_episode_steps=5))
    env.seed(0)
    env.reset()
    zero = np.zeros((3, 1), np.float32)
    for _ in range(4):
        _, _, done, _ = env.step(zero)
        assert not done.any()
    obs, _, done, infos = env.step(zero)
    assert done.all()
    assert all(i["TimeLimit.truncated"] for i in infos)
    assert all(np.array_equal(i["terminal_observation"].shape, (4,)) for i in infos)


def test_seeds_give_gymnasiums_reset_states():
    """seed(s) then reset(): environment i is seeded s + i, as moreau.gym's
    reset(seed=s) (and Gymnasium's SyncVectorEnv) does."""
    env = to_sb3(mg.make_vec(TASK, 3, backend="cpu1"))
    env.seed(11)
    ours = env.reset()
    theirs, _ = mg.make_vec(TASK, 3, backend="cpu1").reset(seed=11)
    np.testing.assert_array_equal(ours, theirs)
    assert env.get_attr("dt") == [0.04] * 3
    with pytest.raises(TypeError, match="MoreauVectorEnv"):
        to_sb3(object())


def mean_return(policy, episodes=8, seed=1000):
    """Mean return of `policy(obs) -> actions` over `episodes` fresh
    episodes (one per environment)."""
    env = mg.make_vec(TASK, episodes, backend="cpu1")
    obs, _ = env.reset(seed=seed)
    total, ended = np.zeros(episodes), np.zeros(episodes, dtype=bool)
    while not ended.all():
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += np.where(ended, 0.0, reward)
        ended |= terminated | truncated
    return total.mean()


def test_sb3_ppo_learns_the_inverted_pendulum_on_8_vector_environments():
    """SB3's PPO (its MlpPolicy; 128 steps per environment per rollout,
    learning rate 1e-3) for 60 000 steps on 8 environments: the trained
    deterministic policy balances for at least 500 of the 1 000 steps of
    fresh episodes (measured: 1 000), the untrained one does not."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(1)
    env = VecMonitor(to_sb3(mg.make_vec(TASK, 8, backend="cpu1")))
    env.seed(0)
    model = PPO(
        "MlpPolicy", env, n_steps=128, batch_size=256, learning_rate=1e-3, seed=0, device="cpu", verbose=0
    )

    def act(obs):
        return model.predict(obs, deterministic=True)[0]

    before = mean_return(act)
    model.learn(60_000)
    after = mean_return(act)
    # SB3's own episode records (VecMonitor) saw the episodes end.
    assert len(model.ep_info_buffer) > 0
    print(f"PPO on {TASK}: mean return {before:.1f} untrained, {after:.1f} after 60k steps")
    assert before < 100
    assert after >= 500
