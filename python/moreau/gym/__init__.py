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

Each task's observation, reward, termination and info are the library's
(``moreau._moreau.Gym``: Rust, every environment in one call on the batch's
threads after the frame skip); this module keeps Gymnasium's interface,
its reset draws (numpy's generators, seed for seed; or, with
``reset_rng="philox"``, the library's counter-based streams) and the
autoreset.
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
    """How ``moreau.gym`` resets one of Gymnasium's MuJoCo tasks (its
    observation, reward and termination are the library's: ``Gym``). Its
    parameters (``xml_file``, ``frame_skip``, the reward weights, the
    healthy ranges, the observation's switches, ``reset_noise_scale``) are
    Gymnasium's keyword arguments, with Gymnasium's defaults read from its
    task class: the environment's ``params``."""

    # The velocity's reset noise: "uniform" in [-scale, scale], or "normal" (scale · N(0, 1)).
    velocity_noise: str = "uniform"
    # (rng, qpos0, qvel0) -> (qpos, qvel): a task's own reset (drawing as its source does).
    reset: Optional[Callable[..., tuple[np.ndarray, np.ndarray]]] = None
    # Whether its control cost reads the actions in float64 (Humanoid's
    # reads data.ctrl) rather than in their own dtype.
    ctrl_in_float64: bool = False


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


TASKS: dict[str, Task] = {
    "Ant-v5": Task(velocity_noise="normal"),
    "Humanoid-v5": Task(ctrl_in_float64=True),
    "InvertedDoublePendulum-v5": Task(velocity_noise="normal"),
    "Reacher-v5": Task(reset=_reacher_reset),
    "InvertedPendulum-v5": Task(),
    "Swimmer-v5": Task(),
    "HalfCheetah-v5": Task(velocity_noise="normal"),
    "Hopper-v5": Task(),
    "Walker2d-v5": Task(),
}


def _main_body(task_id: str, body: Any, model: "moreau.Model") -> str:
    """Ant's ``main_body`` as a body's name (given as a name, or as an id
    in MuJoCo's body order)."""
    if isinstance(body, str):
        return body
    names = model.body_frame_names
    if not 1 <= int(body) <= len(names):
        raise ValueError(f"{task_id}: main_body {body!r}: body ids are 1 to {len(names)} (the world, 0, does not move)")
    return names[int(body) - 1]


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
        reset_rng: str = "numpy",
        **kwargs: Any,
    ):
        """``reset_rng``: where the reset noise comes from: ``"numpy"``
        (each environment's numpy generator, seeded ``seed + i`` and drawn
        as Gymnasium's task draws: Gymnasium's numbers for its seeds) or
        ``"philox"`` (Philox4x32-10 keyed by the seed, the environment's
        index and its episode, drawn in the library with no Python per
        environment: the same distributions, other numbers, the same on
        every backend). ``kwargs``: the task's own keyword arguments, as Gymnasium's
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
        if reset_rng not in ("numpy", "philox"):
            raise ValueError(f"reset_rng must be 'numpy' or 'philox', got {reset_rng!r}")
        self.reset_rng = reset_rng
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
        # Each environment's controls in its last step (0 after a reset, as
        # MuJoCo's data.ctrl).
        self._ctrl = np.zeros((num_envs, self.model.nu))
        # The task in the library: observations, rewards, terminations and
        # infos of every environment in one call.
        gym_params = dict(self.params)
        if "main_body" in gym_params:
            gym_params["main_body"] = _main_body(task_id, gym_params["main_body"], self.model)
        self._gym = moreau._moreau.Gym(
            self.batch, task_id, gym_params, self._qpos0, self._qvel0, int(frame_skip)
        )
        self._info_columns = self._gym.info_columns
        obs, *_ = self._gym.observe(self.batch, np.ones(num_envs, dtype=bool))
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
        if reset_rng == "philox":
            # Unseeded: a key from the operating system's entropy.
            key = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
            self._gym.seed(np.ones(num_envs, dtype=bool), [key] * num_envs)
        self._elapsed = np.zeros(num_envs, dtype=np.int64)
        self._needs_reset = np.zeros(num_envs, dtype=bool)
        # Gymnasium's order: reset() before the first step().
        self._was_reset = False

    def _reset_envs(self, envs: np.ndarray) -> None:
        """Resets the environments ``envs`` (indices), each drawing its noise
        from its own generator as Gymnasium's task does; their states set
        in one call."""
        if len(envs) == 0:
            return
        self._ctrl[envs] = 0.0
        self._elapsed[envs] = 0
        if self.reset_rng == "philox":
            which = np.zeros(self.num_envs, dtype=bool)
            which[envs] = True
            self._gym.reset_worlds(self.batch, which)
            return
        scale = self.params.get("reset_noise_scale", 0.0)
        nq, nv = self.model.nq, self.model.nv
        qpos, qvel = np.empty((len(envs), nq)), np.empty((len(envs), nv))
        for k, i in enumerate(envs):
            rng = self._rngs[i]
            if self.task.reset is not None:
                qpos[k], qvel[k] = self.task.reset(rng, self._qpos0, self._qvel0)
            else:
                qpos[k] = self._qpos0 + rng.uniform(low=-scale, high=scale, size=nq)
                if self.task.velocity_noise == "normal":
                    qvel[k] = self._qvel0 + scale * rng.standard_normal(nv)
                else:
                    qvel[k] = self._qvel0 + rng.uniform(low=-scale, high=scale, size=nv)
        # (A quaternion with noise stays unnormalized in the state until the
        # first step, as in MuJoCo's qpos.)
        q, v = self.model.from_mujoco(qpos, qvel)
        self.batch.set_states(q, v, worlds=[int(i) for i in envs])

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

    @property
    def _kinematics_q(self) -> np.ndarray:
        """The configurations (num_envs, nq) the last physics steps started
        from (the state of an environment reset since)."""
        return self._gym.kinematic_states()[0]

    @property
    def _kinematics_v(self) -> np.ndarray:
        return self._gym.kinematic_states()[1]

    @property
    def _fresh(self) -> np.ndarray:
        """Environments reset since their last step."""
        return self._gym.fresh

    def _infos(self, rows: np.ndarray, stepped: np.ndarray) -> dict[str, np.ndarray]:
        """Gymnasium's vector info from the library's info ``rows``: each
        term's mask ``_key`` says which environments it holds a value for
        (those ``stepped``; those reset too for the terms their reset
        reports)."""
        info, at = {}, 0
        for name, width, on_reset in self._info_columns:
            value = rows[:, at] if width == 1 else rows[:, at : at + width]
            at += width
            mask = np.ones_like(stepped) if on_reset else stepped
            if mask.any():
                info[name] = value.copy()
                info["_" + name] = mask.copy()
        return info

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
        ``i``; or one per environment) reseeds the environments reset (with
        ``reset_rng="philox"``: an int keys every environment's stream, the
        environment's index and episode telling them apart)."""
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
            if self.reset_rng == "philox":
                # One key for all (the environment's index keys its stream),
                # or each environment's own.
                keys = [seed] * self.num_envs if isinstance(seed, int) else [int(k) for k in seeds]
                self._gym.seed(mask, [k % 2**64 for k in keys])
            else:
                for i in np.flatnonzero(mask):
                    self._rngs[i] = np.random.default_rng(seeds[i])
        self._reset_envs(np.flatnonzero(mask))
        self._needs_reset[mask] = False
        self._was_reset = True
        obs, _, _, rows = self._gym.observe(self.batch, mask)
        # The reset info of the environments reset.
        info = {}
        for key, value in self._infos(rows, np.zeros(self.num_envs, dtype=bool)).items():
            info[key] = mask.copy() if key.startswith("_") else value
        return obs, info

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
        # NEXT_STEP autoreset: the environments whose episode ended in the
        # last step are reset now, not stepped, and report their first
        # observation.
        resetting = self._needs_reset.copy()
        self._reset_envs(np.flatnonzero(resetting))
        # (The control costs on the actions as given, in their dtype, as
        # Gymnasium computes them; Humanoid's on data.ctrl, float64.)
        a = ctrl if self.task.ctrl_in_float64 else actions
        action_sq = np.sum(np.square(a), axis=1).astype(np.float64)
        obs, reward, terminated, rows = self._gym.step(self.batch, ctrl, action_sq, resetting)
        failed = np.zeros(self.num_envs, dtype=bool)
        for i, _why in self.batch.failures:
            failed[i] = True
        self._ctrl = np.where(resetting[:, None], 0.0, ctrl)
        self._elapsed += 1
        self._elapsed[resetting] = 0
        truncated = (
            self._elapsed >= self.max_episode_steps
            if self.max_episode_steps is not None
            else np.zeros(self.num_envs, dtype=bool)
        )
        truncated[resetting] = False
        info = self._infos(rows, ~resetting)
        # A world whose physics failed (a diverged solve) ends its episode
        # as truncated, flagged in info["failure"].
        if failed.any():
            truncated = truncated | failed
            info["failure"] = failed.copy()
        self._needs_reset = terminated | truncated
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


def episode_returns(envs, policy: Callable[[np.ndarray], np.ndarray], seed: int) -> np.ndarray:
    """The undiscounted return of one fresh episode in each of ``envs``'
    environments (reset with ``seed``), actions ``policy(observations)``
    clipped to the action space: how the examples judge a policy."""
    obs, _ = envs.reset(seed=seed)
    returns = np.zeros(envs.num_envs)
    running = np.ones(envs.num_envs, dtype=bool)
    low, high = envs.single_action_space.low, envs.single_action_space.high
    while running.any():
        obs, reward, terminated, truncated, _ = envs.step(np.clip(policy(obs), low, high).astype(np.float32))
        returns += np.where(running, reward, 0.0)
        running &= ~(terminated | truncated)
    return returns


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

__all__ = [
    "MoreauEnv",
    "MoreauVectorEnv",
    "TASKS",
    "Task",
    "episode_returns",
    "make",
    "make_vec",
    "gymnasium_assets",
    "gymnasium_parameters",
]
