"""Gymnasium vector environments on moreau's batched worlds.

``make_vec("InvertedPendulum-v5", num_envs=4096, backend="cpu")`` returns a
:class:`gymnasium.vector.VectorEnv` whose spaces, reset noise, rewards,
termination and truncation follow Gymnasium's own v5 MuJoCo task of that
name, on Gymnasium's own XML file (found in the installed ``gymnasium``
package, not copied), its episode length read from Gymnasium's registry.
Autoreset: ``AutoresetMode.NEXT_STEP`` (Gymnasium >= 1.1): the step after
an episode ends resets that environment, ignores its action and returns
the reset observation with reward 0. Seeds: ``reset(seed=s)`` seeds
environment ``i`` with ``s + i`` (as Gymnasium's ``SyncVectorEnv``), so
episodes repeat on the CPU backends.

Tasks: ``InvertedPendulum-v5``, ``InvertedDoublePendulum-v5``,
``Reacher-v5``, ``Swimmer-v5``, ``HalfCheetah-v5``, ``Hopper-v5``,
``Walker2d-v5``, ``Ant-v5``, ``Humanoid-v5`` (their default keyword
arguments). The tasks read states in MuJoCo's conventions (``qpos`` with
quaternions ``(w, x, y, z)``, a free joint's linear velocity in the world
frame: :meth:`moreau.Model.to_mujoco`) and MuJoCo's body quantities
(``cinert``, ``cvel``, ``cfrc_ext``, ``qfrc_actuator``) from moreau's own.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

import moreau

try:
    import gymnasium
    from gymnasium.spaces import Box
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as e:  # pragma: no cover - a clear message without gymnasium
    raise ImportError("moreau.gym needs gymnasium >= 1.1: pip install gymnasium") from e


@dataclass(frozen=True)
class Task:
    """One of Gymnasium's MuJoCo tasks, as moreau runs it (each function as
    the task's v5 source in ``gymnasium/envs/mujoco/`` defines it). Its
    parameters (``xml_file``, ``frame_skip``, the reward weights, the
    healthy ranges, the observation's switches, ``reset_noise_scale``) are
    Gymnasium's keyword arguments, with Gymnasium's defaults read from its
    task class: the environment's ``params``."""

    # (env, qpos, qvel) batched, MuJoCo's conventions -> observations
    observation: Callable[..., np.ndarray]
    # (env, position before the step, qpos, qvel, actions, dt) -> (rewards, terminated, infos)
    outcome: Callable[..., tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]
    # The velocity's reset noise: "uniform" in [-scale, scale], or "normal" (scale · N(0, 1)).
    velocity_noise: str = "uniform"
    # (rng, qpos0, qvel0) -> (qpos, qvel): a task's own reset (drawing as its source does).
    reset: Optional[Callable[..., tuple[np.ndarray, np.ndarray]]] = None
    # (env) -> what the task's velocity reward differentiates: by default
    # qpos[0] (the 2-D tasks); Ant: its main body's (x, y); Humanoid: the
    # centre of mass's (x, y).
    position: Optional[Callable[..., np.ndarray]] = None
    # What the task's reset() reports (its source's _get_reset_info): "x"
    # (x_position), "xy" (x and y positions, distance_from_origin), "xz"
    # (x_position, z_distance_from_origin), or "" (nothing).
    reset_info: str = ""
    # Whether its infos hold the tendons' lengths and velocities (Humanoid).
    tendons: bool = False


# Keyword arguments of Gymnasium's MuJoCo environments that only concern
# rendering: the image size and camera (see _camera); MuJoCo's scene
# options max_geom and visual_options have no counterpart (a
# visual_options that asks for something warns).
RENDERING = ("width", "height", "camera_id", "camera_name", "default_camera_config", "max_geom", "visual_options")
# Keyword arguments that go to the BatchSim.
SIMULATION = ("dt", "solver", "tolerance", "decomposition", "layout", "pipeline")
# The task parameters the functions below read. A parameter of Gymnasium's
# class outside this set (a later Gymnasium's) keeps its default; given
# another value it is refused rather than ignored.
IMPLEMENTED = frozenset(
    """xml_file frame_skip forward_reward_weight ctrl_cost_weight contact_cost_weight
    contact_cost_range healthy_reward main_body terminate_when_unhealthy healthy_z_range
    healthy_state_range healthy_angle_range contact_force_range reset_noise_scale
    exclude_current_positions_from_observation include_cfrc_ext_in_observation
    include_cinert_in_observation include_cvel_in_observation
    include_qfrc_actuator_in_observation reward_dist_weight reward_control_weight""".split()
)


def gymnasium_parameters(task_id: str) -> dict[str, Any]:
    """The keyword arguments of Gymnasium's task ``task_id`` and their
    defaults, read from its environment class (rendering's aside)."""
    spec = gymnasium.spec(task_id)
    module, name = spec.entry_point.split(":")
    cls = getattr(importlib.import_module(module), name)
    params = {
        k: p.default
        for k, p in inspect.signature(cls.__init__).parameters.items()
        if p.default is not inspect.Parameter.empty and k not in RENDERING and k != "render_mode"
    }
    params.update({k: v for k, v in spec.kwargs.items() if k in params})
    return params


def _rendering_defaults(task_id: str) -> dict[str, Any]:
    """The rendering options' defaults of Gymnasium's task ``task_id``
    (its ``default_camera_config``, …), read from its environment class."""
    module, name = gymnasium.spec(task_id).entry_point.split(":")
    cls = getattr(importlib.import_module(module), name)
    return {
        k: p.default
        for k, p in inspect.signature(cls.__init__).parameters.items()
        if k in RENDERING and p.default is not inspect.Parameter.empty and p.default is not None
    }


def _tendon_info(env, qpos=None) -> dict[str, np.ndarray]:
    """Humanoid's tendon lengths and velocities (num_envs, ntendon), at the
    state ``body_positions`` reads (MuJoCo's ``ten_length``,
    ``ten_velocity``)."""
    length, velocity = env.batch.tendon_states(env._kinematics_q, env._kinematics_v)
    return {"tendon_length": length, "tendon_velocity": velocity}


def _reset_info(env, qpos: np.ndarray) -> dict[str, np.ndarray]:
    """The task's reset info (see ``Task.reset_info``) for every
    environment, from MuJoCo's ``qpos`` (num_envs, nq)."""
    kind = env.task.reset_info
    info = {}
    if kind:
        info["x_position"] = qpos[:, 0].copy()
    if kind == "xy":
        info["y_position"] = qpos[:, 1].copy()
        info["distance_from_origin"] = np.linalg.norm(qpos[:, 0:2], axis=1)
    if kind == "xz":
        info["z_distance_from_origin"] = qpos[:, 1] - env._qpos0[1]
    if env.task.tendons:
        info.update(_tendon_info(env))
    return info


def _inverted_pendulum(env, x_before, q, v, action, dt):
    # inverted_pendulum_v5.py: terminated when the observation is not
    # finite or |angle| > 0.2; reward 1 while healthy.
    obs = np.concatenate([q, v], axis=1)
    terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
    reward = (~terminated).astype(np.float64)
    return reward, terminated, {"reward_survive": reward}


def _healthy_outcome(env, ok, forward, costs, info):
    """The reward ``forward + healthy_reward·ok − costs`` and termination
    (unhealthy, when ``terminate_when_unhealthy``) of the tasks with a
    healthy state."""
    p = env.params
    survive = ok * p["healthy_reward"]
    info["reward_survive"] = survive
    terminated = ~ok if p["terminate_when_unhealthy"] else np.zeros(len(ok), dtype=bool)
    return forward + survive - costs, terminated, info


def _locomotion(healthy=None, info_kind=""):
    """Forward velocity `(x_after - x_before)/dt` (qpos[0]) times
    ``forward_reward_weight``, minus the control cost ``ctrl_cost_weight ·
    Σ a²`` (of the action as given), plus ``healthy_reward`` while
    `healthy(params, q, v)` (terminated when not, if
    ``terminate_when_unhealthy``). The info also has, as the task's source:
    "xy" the y position and velocity and the distance from the origin (the
    position before is then qpos[0:2]); "xz" the height from the initial
    one (qpos[1])."""

    def outcome(env, before, q, v, action, dt):
        p = env.params
        x_before = before[:, 0] if before.ndim == 2 else before
        x_velocity = (q[:, 0] - x_before) / dt
        forward = p["forward_reward_weight"] * x_velocity
        ctrl = p["ctrl_cost_weight"] * np.sum(np.square(action), axis=1).astype(np.float64)
        info = {"x_position": q[:, 0].copy(), "x_velocity": x_velocity, "reward_forward": forward, "reward_ctrl": -ctrl}
        if info_kind == "xy":
            info["y_position"] = q[:, 1].copy()
            info["distance_from_origin"] = np.linalg.norm(q[:, 0:2], axis=1)
            info["y_velocity"] = (q[:, 1] - before[:, 1]) / dt
        if info_kind == "xz":
            info["z_distance_from_origin"] = q[:, 1] - env._qpos0[1]
        if healthy is None:
            return forward - ctrl, np.zeros(len(q), dtype=bool), info
        return _healthy_outcome(env, healthy(p, q, v), forward, ctrl, info)

    return outcome


def _within(x, bounds, closed=False):
    lo, hi = bounds
    return (lo <= x) & (x <= hi) if closed else (lo < x) & (x < hi)


def _hopper_healthy(p, q, v):
    # hopper_v5.py: state_vector()[2:], z and angle within their ranges.
    state = np.concatenate([q[:, 2:], v], axis=1)
    return (
        np.all(_within(state, p["healthy_state_range"]), axis=1)
        & _within(q[:, 1], p["healthy_z_range"])
        & _within(q[:, 2], p["healthy_angle_range"])
    )


def _walker_healthy(p, q, v):
    # walker2d_v5.py: z and angle within their ranges.
    return _within(q[:, 1], p["healthy_z_range"]) & _within(q[:, 2], p["healthy_angle_range"])


def _positions(env, q, dropped):
    """qpos without its first ``dropped`` entries when the task's
    ``exclude_current_positions_from_observation`` says so."""
    return q[:, dropped:] if env.params["exclude_current_positions_from_observation"] else q


def _reacher_observation(env, q, v):
    # reacher_v5.py: cos and sin of the arm's angles, the target's position,
    # the arm's velocities, fingertip − target (x, y) (bodies' origins).
    tip = env.body_positions("fingertip") - env.body_positions("target")
    return np.concatenate([np.cos(q[:, :2]), np.sin(q[:, :2]), q[:, 2:], v[:, :2], tip[:, :2]], axis=1)


def _reacher_outcome(env, x_before, q, v, action, dt):
    p = env.params
    distance = -np.linalg.norm(env.body_positions("fingertip") - env.body_positions("target"), axis=1)
    distance = distance * p["reward_dist_weight"]
    ctrl = -np.sum(np.square(action), axis=1).astype(np.float64) * p["reward_control_weight"]
    return distance + ctrl, np.zeros(len(q), dtype=bool), {"reward_dist": distance, "reward_ctrl": ctrl}


def _reacher_reset(rng, q0, v0):
    # reacher_v5.py's reset_model, draw for draw.
    q = rng.uniform(low=-0.1, high=0.1, size=len(q0)) + q0
    while True:
        goal = rng.uniform(low=-0.2, high=0.2, size=2)
        if np.linalg.norm(goal) < 0.2:
            break
    q[-2:] = goal
    v = v0 + rng.uniform(low=-0.005, high=0.005, size=len(v0))
    v[-2:] = 0
    return q, v


def _double_pendulum_observation(env, q, v):
    # inverted_double_pendulum_v5.py: the cart's x, sin and cos of the link
    # angles, clipped velocities, the cart's clipped constraint force.
    force = np.clip(env.constraint_forces(), -10, 10)[:, :1]
    return np.concatenate([q[:, :1], np.sin(q[:, 1:]), np.cos(q[:, 1:]), np.clip(v, -10, 10), force], axis=1)


def _double_pendulum_outcome(env, x_before, q, v, action, dt):
    tip = env.body_positions("tip")
    x, y = tip[:, 0], tip[:, 2]
    terminated = y <= 1
    distance = 0.01 * x**2 + (y - 2) ** 2
    velocity = 1e-3 * v[:, 1] ** 2 + 5e-3 * v[:, 2] ** 2
    alive = env.params["healthy_reward"] * (~terminated)
    info = {"reward_survive": alive, "distance_penalty": -distance, "velocity_penalty": -velocity}
    return alive - distance - velocity, terminated, info


def _state_finite(qpos, qvel):
    return np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1)


def _planar_outcome(contact_cost, healthy, ctrl_in_float64):
    """Ant and Humanoid: the (x, y) velocity of the task's ``position``,
    ``forward_reward_weight`` times its x, plus ``healthy_reward`` while
    ``healthy(params, qpos, qvel)`` (terminated when not, if
    ``terminate_when_unhealthy``), minus the control cost and
    ``contact_cost(params, cfrc_ext)``."""

    def outcome(env, xy_before, qpos, qvel, action, dt):
        p = env.params
        xy_velocity = (env.task.position(env) - xy_before) / dt
        forward = p["forward_reward_weight"] * xy_velocity[:, 0]
        a = action.astype(np.float64) if ctrl_in_float64 else action
        ctrl = (p["ctrl_cost_weight"] * np.sum(np.square(a), axis=1)).astype(np.float64)
        contact = contact_cost(p, env.com_external_forces())
        info = {
            "x_position": qpos[:, 0].copy(),
            "y_position": qpos[:, 1].copy(),
            "distance_from_origin": np.linalg.norm(qpos[:, 0:2], axis=1),
            "x_velocity": xy_velocity[:, 0],
            "y_velocity": xy_velocity[:, 1],
            "reward_forward": forward,
            "reward_ctrl": -ctrl,
            "reward_contact": -contact,
        }
        if env.task.tendons:
            info.update(_tendon_info(env))
        return _healthy_outcome(env, healthy(p, qpos, qvel), forward, ctrl + contact, info)

    return outcome


def _ant_contact_forces(p, f):
    # ant_v5.py: cfrc_ext clipped to contact_force_range.
    return np.clip(f, *p["contact_force_range"])


def _ant_observation(env, qpos, qvel):
    # ant_v5.py: qpos (without x, y); qvel; cfrc_ext of the bodies but the
    # world, clipped (when include_cfrc_ext_in_observation).
    parts = [_positions(env, qpos, 2), qvel]
    if env.params["include_cfrc_ext_in_observation"]:
        parts.append(_ant_contact_forces(env.params, env.com_external_forces()).reshape(len(qpos), -1))
    return np.concatenate(parts, axis=1)


def _ant_position(env):
    # ant_v5.py: the main body's (x, y) (an id, MuJoCo's body order, or a name).
    body = env.params["main_body"]
    if not isinstance(body, str):
        names = env.model.body_frame_names
        if not 1 <= int(body) <= len(names):
            raise ValueError(f"main_body {body!r}: body ids are 1 to {len(names)} (the world, 0, does not move)")
        body = names[int(body) - 1]
    return env.body_positions(body)[:, :2]


def _humanoid_observation(env, qpos, qvel):
    # humanoid_v5.py: qpos (without x, y); qvel; then, each when its
    # include_*_in_observation says so, cinert and cvel of the bodies but
    # the world, qfrc_actuator but the free joint's, cfrc_ext.
    n, p = len(qpos), env.params
    parts = [_positions(env, qpos, 2), qvel]
    if p["include_cinert_in_observation"]:
        parts.append(env.com_inertias().reshape(n, -1))
    if p["include_cvel_in_observation"]:
        parts.append(env.com_velocities().reshape(n, -1))
    if p["include_qfrc_actuator_in_observation"]:
        parts.append(env.actuator_forces()[:, 6:])
    if p["include_cfrc_ext_in_observation"]:
        parts.append(env.com_external_forces().reshape(n, -1))
    return np.concatenate(parts, axis=1)


TASKS: dict[str, Task] = {
    "Ant-v5": Task(
        observation=_ant_observation,
        outcome=_planar_outcome(
            lambda p, f: p["contact_cost_weight"] * np.sum(np.square(_ant_contact_forces(p, f)), axis=(1, 2)),
            # ant_v5.py: the state finite and z within the range, bounds included.
            lambda p, qpos, qvel: _state_finite(qpos, qvel) & _within(qpos[:, 2], p["healthy_z_range"], closed=True),
            ctrl_in_float64=False,
        ),
        velocity_noise="normal",
        position=_ant_position,
        reset_info="xy",
    ),
    "Humanoid-v5": Task(
        observation=_humanoid_observation,
        outcome=_planar_outcome(
            lambda p, f: np.clip(p["contact_cost_weight"] * np.sum(np.square(f), axis=(1, 2)), *p["contact_cost_range"]),
            lambda p, qpos, qvel: _within(qpos[:, 2], p["healthy_z_range"]),
            # (humanoid_v5.py's control cost reads data.ctrl, float64)
            ctrl_in_float64=True,
        ),
        position=lambda env: env.centers_of_mass()[:, :2],
        reset_info="xy",
        tendons=True,
    ),
    "InvertedDoublePendulum-v5": Task(
        observation=_double_pendulum_observation,
        outcome=_double_pendulum_outcome,
        velocity_noise="normal",
    ),
    "Reacher-v5": Task(
        observation=_reacher_observation,
        outcome=_reacher_outcome,
        reset=_reacher_reset,
    ),
    "InvertedPendulum-v5": Task(
        observation=lambda env, q, v: np.concatenate([q, v], axis=1),
        outcome=_inverted_pendulum,
    ),
    "Swimmer-v5": Task(
        observation=lambda env, q, v: np.concatenate([_positions(env, q, 2), v], axis=1),
        outcome=_locomotion(info_kind="xy"),
        # (Its slides are qpos[0:2], in moreau's q as in MuJoCo's.)
        position=lambda env: env.batch.q[:, 0:2],
        reset_info="xy",
    ),
    "HalfCheetah-v5": Task(
        observation=lambda env, q, v: np.concatenate([_positions(env, q, 1), v], axis=1),
        outcome=_locomotion(),
        velocity_noise="normal",
        reset_info="x",
    ),
    "Hopper-v5": Task(
        observation=lambda env, q, v: np.concatenate([_positions(env, q, 1), np.clip(v, -10, 10)], axis=1),
        outcome=_locomotion(_hopper_healthy, info_kind="xz"),
        reset_info="xz",
    ),
    "Walker2d-v5": Task(
        observation=lambda env, q, v: np.concatenate([_positions(env, q, 1), np.clip(v, -10, 10)], axis=1),
        outcome=_locomotion(_walker_healthy, info_kind="xz"),
        reset_info="xz",
    ),
}


def gymnasium_assets() -> pathlib.Path:
    """Gymnasium's MuJoCo XML files, where the installed package keeps them."""
    return pathlib.Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"


def _model_path(xml_file: str) -> str:
    """Where Gymnasium looks for ``xml_file``: as given when it starts with
    "." or "/", the home directory expanded for "~", else among its
    assets."""
    if xml_file.startswith((".", "/")):
        path = xml_file
    elif xml_file.startswith("~"):
        path = os.path.expanduser(xml_file)
    else:
        path = str(gymnasium_assets() / xml_file)
    if not os.path.exists(path):
        raise OSError(f"File {path} does not exist")
    return path


class MoreauVectorEnv(VectorEnv):
    """``num_envs`` copies of a Gymnasium MuJoCo task on a :class:`moreau.BatchSim`."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(
        self,
        task_id: str,
        num_envs: int,
        backend: str = "cpu",
        max_episode_steps: Optional[int] = None,
        render_mode: Optional[str] = None,
        **kwargs: Any,
    ):
        """``kwargs``: the task's own keyword arguments, as Gymnasium's
        (``xml_file``, ``frame_skip``, ``ctrl_cost_weight``,
        ``reset_noise_scale``, ``healthy_z_range``, …; see
        :func:`gymnasium_parameters`), Gymnasium's rendering options
        (``render_mode="rgb_array"``, ``width``, ``height``,
        ``default_camera_config``'s ``distance``, ``azimuth``, ``elevation``,
        ``lookat`` and ``trackbodyid`` in MuJoCo's conventions, or the
        file's camera of ``camera_id`` or ``camera_name``), and the
        :class:`moreau.BatchSim`'s ``solver``, ``tolerance``, ``dt``,
        ``decomposition``, ``layout``, ``pipeline``."""
        if task_id not in TASKS:
            raise ValueError(f"unknown task {task_id!r}; tasks: {', '.join(sorted(TASKS))}")
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r}: moreau renders 'rgb_array' (or None)")
        self.render_mode = render_mode
        self.task_id = task_id
        self.task = TASKS[task_id]
        self.spec = gymnasium.spec(task_id)
        self.params = gymnasium_parameters(task_id)
        stock_file = self.params["xml_file"]
        sim = {}
        self._rendering: dict[str, Any] = _rendering_defaults(task_id)
        for key, value in kwargs.items():
            if key in self.params:
                if key not in IMPLEMENTED and value != self.params[key]:
                    raise ValueError(
                        f"{task_id}: moreau does not implement Gymnasium's parameter {key!r} "
                        f"(only its default, {self.params[key]!r})"
                    )
                self.params[key] = value
            elif key in SIMULATION:
                sim[key] = value
            elif key in RENDERING:
                self._rendering[key] = value
            else:
                raise TypeError(
                    f"{task_id} got an unexpected keyword argument {key!r}; its parameters: "
                    f"{', '.join(sorted(self.params))}; the batch's: {', '.join(SIMULATION)}"
                )
        frame_skip = self.params["frame_skip"]
        if not isinstance(frame_skip, (int, np.integer)) or frame_skip < 1:
            raise ValueError(f"frame_skip must be a positive integer, got {frame_skip!r}")
        # Gymnasium's max_episode_steps unless one is given (as
        # gymnasium.make_vec passes the registered one).
        self.max_episode_steps: Optional[int] = (
            self.spec.max_episode_steps if max_episode_steps is None else max_episode_steps
        )
        with warnings.catch_warnings():
            # Gymnasium's own files say what moreau knowingly does its own
            # way (its integrator; qpos0 beyond a joint stop, which the
            # tasks' reset noise starts from): said in docs/python.md, not
            # at every construction. A file of the user's warns.
            if self.params["xml_file"] == stock_file:
                warnings.simplefilter("ignore", UserWarning)
            self.model = moreau.load(_model_path(self.params["xml_file"]))
        self.num_envs = num_envs
        self.batch = moreau.BatchSim(self.model, num_envs, backend=backend, **sim)
        # (Gymnasium's dt: the physics step times the frame skip.)
        self.dt = (sim.get("dt") or self.model.dt) * frame_skip
        self._camera = _camera(task_id, self._rendering, self.model)
        self.metadata = {**self.metadata, "render_fps": int(np.round(1.0 / self.dt))}
        # The file's initial state in MuJoCo's conventions (the tasks' qpos
        # and qvel: quaternions (w, x, y, z), a free joint's linear velocity
        # in the world frame), which the reset noise is added to.
        qpos0, qvel0 = self.model.to_mujoco(self.model.q0[None, :], self.model.v0[None, :])
        self._qpos0, self._qvel0 = qpos0[0], qvel0[0]
        # The state the bodies' positions, inertias and velocities are read
        # at (None: the current one), see body_positions.
        self._kinematics_q = None
        self._kinematics_v = None
        # Each environment's controls in its last step (0 after a reset, as
        # MuJoCo's data.ctrl).
        self._ctrl = np.zeros((num_envs, self.model.nu))
        # Environments reset since their last step.
        self._fresh = np.ones(num_envs, dtype=bool)
        obs = self._observe()
        # (Reads what the reward's position reads: a bad main_body raises here.)
        self._position()
        self.single_observation_space = Box(
            low=-np.inf, high=np.inf, shape=(obs.shape[1],), dtype=np.float64
        )
        ctrl = self.model.ctrl_range
        self.single_action_space = Box(
            low=ctrl[:, 0].astype(np.float32), high=ctrl[:, 1].astype(np.float32), dtype=np.float32
        )
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._rngs = [np.random.default_rng() for _ in range(num_envs)]
        self._elapsed = np.zeros(num_envs, dtype=np.int64)
        self._needs_reset = np.zeros(num_envs, dtype=bool)
        # Gymnasium's order: reset() before the first step().
        self._was_reset = False

    def _reset_env(self, i: int) -> None:
        scale = self.params.get("reset_noise_scale", 0.0)
        rng = self._rngs[i]
        if self.task.reset is not None:
            qpos, qvel = self.task.reset(rng, self._qpos0, self._qvel0)
        else:
            qpos = self._qpos0 + rng.uniform(low=-scale, high=scale, size=self.model.nq)
            if self.task.velocity_noise == "normal":
                qvel = self._qvel0 + scale * rng.standard_normal(self.model.nv)
            else:
                qvel = self._qvel0 + rng.uniform(low=-scale, high=scale, size=self.model.nv)
        # (A quaternion with noise stays unnormalized in the state until the
        # first step, as in MuJoCo's qpos.)
        q, v = self.model.from_mujoco(qpos[None, :], qvel[None, :])
        self.batch.set_state(i, q[0], v[0])
        self._ctrl[i] = 0.0
        self._elapsed[i] = 0

    def body_positions(self, name: str) -> np.ndarray:
        """World positions (num_envs, 3) of the file's body ``name``'s origin
        (bodies welded into their parents included), as Gymnasium reads
        MuJoCo's ``data.xpos``: after a step, those of the configuration
        the last physics step started from (``mj_step`` computes the
        kinematics before it integrates); after a reset, the current ones."""
        return self.batch.frame_positions(name, self._kinematics_q)

    def centers_of_mass(self) -> np.ndarray:
        """The centre of mass (num_envs, 3) of each environment's bodies,
        at the configuration ``body_positions`` reads."""
        return self.batch.centers_of_mass(self._kinematics_q)

    def com_inertias(self) -> np.ndarray:
        """MuJoCo's ``cinert`` of the file's bodies but the world
        (num_envs, bodies, 10), at the configuration ``body_positions``
        reads."""
        return self.batch.com_inertias(self._kinematics_q)

    def com_velocities(self) -> np.ndarray:
        """MuJoCo's ``cvel`` of the file's bodies but the world (num_envs,
        bodies, 6), at the state the last physics step started from (the
        current one after a reset)."""
        return self.batch.com_velocities(self._kinematics_q, self._kinematics_v)

    def com_external_forces(self) -> np.ndarray:
        """MuJoCo's ``cfrc_ext`` of the file's bodies but the world
        (num_envs, bodies, 6): the last physics step's contact wrenches
        about the c-frames of the configuration it started from; zero for
        an environment just reset."""
        f = self.batch.com_external_forces(self._kinematics_q)
        f[self._fresh] = 0.0
        return f

    def actuator_forces(self) -> np.ndarray:
        """MuJoCo's ``qfrc_actuator`` (num_envs, nv) of the last step's
        controls (zero after a reset)."""
        return self.batch.actuator_forces(self._ctrl, self._kinematics_q, self._kinematics_v)

    def constraint_forces(self) -> np.ndarray:
        """Generalized constraint forces (num_envs, nv) of each environment's
        last physics step (MuJoCo's ``qfrc_constraint``); zero for an
        environment just reset."""
        f = self.batch.constraint_forces()
        f[self._fresh] = 0.0
        return f

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        """The environments' (qpos, qvel) in MuJoCo's conventions."""
        return self.model.to_mujoco(self.batch.q, self.batch.v)

    def _position(self) -> np.ndarray:
        if self.task.position is not None:
            return self.task.position(self)
        return self.batch.q[:, 0]

    def _observe(self) -> np.ndarray:
        return self.task.observation(self, *self._state())

    def render(self):
        """Every environment's image, a tuple of (height, width, 3) uint8
        arrays, with ``render_mode="rgb_array"`` (drawn offscreen on the
        GPU, lavapipe without one); else None, as Gymnasium's."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() without a render_mode: nothing is drawn (render_mode='rgb_array')")
            return None
        return tuple(self.batch.render(**self._camera))

    def reset(self, *, seed=None, options=None):
        """Resets every environment, or with ``options={"reset_mask": m}``
        (a boolean array of shape (num_envs,)) those where ``m`` is true,
        the others stepping on from their state (their observations are
        returned unchanged). A seed (an int: ``seed + i`` for environment
        ``i``; or one per environment) reseeds the environments reset."""
        mask = np.ones(self.num_envs, dtype=bool)
        if options is not None and "reset_mask" in options:
            m = np.asarray(options["reset_mask"])
            if m.dtype != np.bool_ or m.shape != (self.num_envs,):
                raise ValueError(
                    f"reset_mask must be a boolean array of shape ({self.num_envs},), "
                    f"got dtype {m.dtype} and shape {m.shape}"
                )
            mask = m.copy()
        if seed is not None:
            seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, int) else list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} environments")
            for i in np.flatnonzero(mask):
                self._rngs[i] = np.random.default_rng(seeds[i])
        reset = np.flatnonzero(mask)
        for i in reset:
            self._reset_env(i)
        self._needs_reset[mask] = False
        if mask.all() or self._kinematics_q is None:
            self._kinematics_q = self._kinematics_v = None
        else:
            # The kinematics of an environment just reset are its state's.
            self._kinematics_q[reset] = self.batch.q[reset]
            self._kinematics_v[reset] = self.batch.v[reset]
        self._fresh[mask] = True
        self._was_reset = True
        qpos, _ = self._state()
        info = _reset_info(self, qpos)
        for key in list(info):
            info["_" + key] = mask.copy()
        return self._observe(), info

    def step(self, actions):
        if not self._was_reset:
            raise gymnasium.error.ResetNeeded("call reset() before the first step()")
        actions = np.asarray(actions)
        if actions.shape != self.action_space.shape:
            raise ValueError(
                f"actions has shape {actions.shape}, expected {self.action_space.shape}"
            )
        if not np.issubdtype(actions.dtype, np.number) or not np.isfinite(actions).all():
            raise ValueError("actions must be finite numbers")
        ctrl = np.ascontiguousarray(actions, dtype=np.float64)
        resetting = self._needs_reset.copy()
        position_before = self._position()
        failed = np.zeros(self.num_envs, dtype=bool)
        # The frame skip in two calls (on the GPU, two readbacks): only the
        # last physics step's start state is read.
        skip = self.params["frame_skip"]
        for repeats, last in ((skip - 1, False), (1, True)):
            if repeats == 0:
                continue
            if last:
                self._kinematics_q, self._kinematics_v = self.batch.q, self.batch.v
            self.batch.step_controls(ctrl, repeats)
            for i, _why in self.batch.failures:
                failed[i] = True
        self._ctrl = ctrl.copy()
        self._fresh[:] = resetting
        for i in np.flatnonzero(resetting):
            self._reset_env(i)
            self._kinematics_q[i] = self.batch.q[i]
            self._kinematics_v[i] = self.batch.v[i]
        self._elapsed += 1
        qpos, qvel = self._state()
        obs = self.task.observation(self, qpos, qvel)
        # (The control costs on the actions as given, in their dtype, as
        # Gymnasium computes them.)
        reward, terminated, info = self.task.outcome(self, position_before, qpos, qvel, actions, self.dt)
        truncated = (
            self._elapsed >= self.max_episode_steps
            if self.max_episode_steps is not None
            else np.zeros(self.num_envs, dtype=bool)
        )
        # A world whose physics failed (a diverged solve) ends its episode
        # as truncated, flagged in info["failure"].
        if failed.any():
            truncated = truncated | failed
            info["failure"] = failed.copy()
        # The environments reset this step report their first observation.
        reward[resetting] = 0.0
        terminated[resetting] = False
        truncated[resetting] = False
        self._elapsed[resetting] = 0
        self._needs_reset = terminated | truncated
        # Gymnasium's vector info: each key's mask `_key` says which
        # environments it holds a value for. An environment reset in this
        # step had no outcome; it reports its reset's info instead.
        for key in [k for k in info if not k.startswith("_")]:
            info["_" + key] = ~resetting
        if resetting.any():
            for key, value in _reset_info(self, qpos).items():
                if key in info:
                    mask = resetting.reshape((-1,) + (1,) * (np.ndim(value) - 1))
                    info[key] = np.where(mask, value, info[key])
                    info["_" + key] = np.ones(self.num_envs, dtype=bool)
                else:
                    info[key] = value
                    info["_" + key] = resetting.copy()
        return obs, reward, terminated, truncated, info


def _camera(task_id: str, rendering: dict[str, Any], model: "moreau.Model") -> dict[str, Any]:
    """``BatchSim.render``'s keywords from Gymnasium's rendering options:
    the image size (Gymnasium's 480 × 480 by default), the file's camera
    of ``camera_id`` or ``camera_name`` (MuJoCo's ids), else the free
    camera of ``default_camera_config`` (MuJoCo's azimuth and elevation
    point the camera; moreau's place it: turned by 180° and negated). A
    ``trackbodyid`` above 0 is followed (MuJoCo's free camera stays where
    it was put; moreau's tracks the body, as the option names)."""
    out: dict[str, Any] = {"width": int(rendering.get("width", 480)), "height": int(rendering.get("height", 480))}
    if rendering.get("visual_options"):
        warnings.warn(f"{task_id}: visual_options (MuJoCo's scene flags) are not drawn by moreau, ignored")
    camera_id, camera_name = rendering.get("camera_id"), rendering.get("camera_name")
    if camera_id is not None and camera_name is not None:
        raise ValueError(f"{task_id}: camera_id and camera_name: give one")
    names = model.camera_names
    if camera_name is not None:
        if camera_name not in names:
            raise ValueError(f"{task_id}: camera_name {camera_name!r}: not one of the file's cameras {names}")
        out["camera"] = str(camera_name)
        return out
    if camera_id is not None and int(camera_id) != -1:  # -1: MuJoCo's free camera
        if not 0 <= int(camera_id) < len(names):
            raise ValueError(f"{task_id}: camera_id {camera_id}: the file has {len(names)} camera(s) {names}")
        out["camera"] = int(camera_id)
        return out
    config = rendering.get("default_camera_config") or {}
    if "distance" in config:
        out["distance"] = float(config["distance"])
    # MuJoCo's free camera's angles unless the configuration gives them.
    out["azimuth"] = float(config.get("azimuth", 90.0)) + 180.0
    out["elevation"] = -float(config.get("elevation", -45.0))
    track = int(config.get("trackbodyid", -1))
    if track > 0:
        names = model.body_frame_names
        if track > len(names):
            raise ValueError(f"{task_id}: trackbodyid {track} of a model with {len(names)} bodies")
        out["track"] = names[track - 1]
    elif "lookat" in config:
        out["target"] = [float(x) for x in config["lookat"]]
    return out


class MoreauEnv(gymnasium.Env):
    """One environment of a Gymnasium task on moreau (a :class:`MoreauVectorEnv`
    of one, without autoreset: call ``reset`` when an episode ends)."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, task_id: str, backend: str = "cpu1", render_mode: Optional[str] = None, **kwargs: Any):
        self._vec = MoreauVectorEnv(task_id, 1, backend, render_mode=render_mode, **kwargs)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": self._vec.metadata["render_fps"]}
        self.spec = self._vec.spec
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space
        self.dt = self._vec.dt

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is None:
            # Draw the episode's noise from this environment's generator.
            seed = int(self.np_random.integers(2**63 - 1))
        obs, info = self._vec.reset(seed=seed)
        return obs[0], {k: v[0] for k, v in info.items() if not k.startswith("_")}

    def step(self, action):
        action = np.asarray(action)
        if action.shape != self.action_space.shape:
            raise ValueError(f"action has shape {action.shape}, expected {self.action_space.shape}")
        self._vec._needs_reset[:] = False
        obs, reward, terminated, truncated, info = self._vec.step(action[None, :])
        info = {k: v[0] for k, v in info.items() if not k.startswith("_")}
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    def render(self):
        """The environment's image, (height, width, 3) uint8, with
        ``render_mode="rgb_array"`` (else None, as Gymnasium's)."""
        frames = self._vec.render()
        return None if frames is None else frames[0]


def make(task_id: str, backend: str = "cpu1", **kwargs: Any) -> MoreauEnv:
    """One environment of Gymnasium's task ``task_id`` on moreau (keywords:
    as :func:`make_vec`'s)."""
    return MoreauEnv(task_id, backend, **kwargs)


def make_vec(task_id: str, num_envs: int = 1, backend: str = "cpu", **kwargs: Any) -> MoreauVectorEnv:
    """A vector environment of ``num_envs`` copies of Gymnasium's task ``task_id``
    on moreau (``backend``: "cpu", "cpu1" or "gpu"). Keywords: the task's
    own, as Gymnasium's (``ctrl_cost_weight=0.2``, ``xml_file=…``,
    ``reset_noise_scale``, …, with Gymnasium's defaults), and the
    :class:`moreau.BatchSim`'s (``solver``, ``tolerance``, ``dt``)."""
    return MoreauVectorEnv(task_id, num_envs, backend, **kwargs)


# Registered with Gymnasium on import, as "moreau/<task>":
# gymnasium.make("moreau/Ant-v5") gives a MoreauEnv (its episode length
# is the task's own), gymnasium.make_vec("moreau/Ant-v5", num_envs=…)
# a MoreauVectorEnv (its vector entry point); keywords go to them.
for _task in TASKS:
    if f"moreau/{_task}" not in gymnasium.registry:
        gymnasium.register(
            id=f"moreau/{_task}",
            entry_point="moreau.gym:MoreauEnv",
            vector_entry_point="moreau.gym:MoreauVectorEnv",
            kwargs={"task_id": _task},
        )

__all__ = ["MoreauEnv", "MoreauVectorEnv", "TASKS", "Task", "make", "make_vec", "gymnasium_assets", "gymnasium_parameters"]
