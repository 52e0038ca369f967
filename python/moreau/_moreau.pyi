"""Type stubs of the compiled module (python/src/lib.rs)."""

from typing import Any, Optional, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
ArrayIn = npt.ArrayLike
"""An array argument: float64 arrays as they are; float32 and integer
arrays, lists, torch CPU tensors and anything with ``__array__`` converted
to float64, in any memory order or strides. Complex, boolean, string and
object values raise TypeError."""

DEFAULT_SOLVER: str
"""The solver used where none is named (the library's `SolverKind::DEFAULT`)."""
DEFAULT_TOLERANCE: float
"""The default tolerance on eps_abs of one world's solve (`Simulator`, `solve`)."""
BATCH_DEFAULT_TOLERANCE: float
"""The default tolerance of a `BatchSim`: the smallest the GPU's f32 kernels accept."""
DEFAULT_MAX_ITERATIONS: int
"""The default iteration cap of a solve."""

class Model:
    """A model with where it starts (configuration, velocity, time step)."""

    @property
    def name(self) -> str: ...
    @property
    def nq(self) -> int: ...
    @property
    def nv(self) -> int: ...
    @property
    def nu(self) -> int: ...
    @property
    def na(self) -> int:
        """Activation states (actuators with MJCF dyntype): the width of act."""
    @property
    def dt(self) -> float: ...
    @property
    def body_names(self) -> list[str]: ...
    @property
    def joint_names(self) -> list[str]:
        """One per body, the world's (``""``) first, aligned with ``body_names``."""
    @property
    def joint_types(self) -> list[str]:
        """"free", "ball", "hinge", "slide" or "fixed", aligned with ``joint_names``."""
    @property
    def geom_names(self) -> list[str]:
        """The collision geometries: the indices of ``BatchSim.contacts``'s ``geoms``."""
    @property
    def tendon_names(self) -> list[str]:
        """The tendons (fixed and spatial): the columns of ``BatchSim.tendon_states``."""
    @property
    def sensor_names(self) -> list[str]:
        """The sensors (MJCF's ``<sensor>``, file order; unnamed ones ``sensor{k}``)."""
    @property
    def sensor_types(self) -> list[str]:
        """Each sensor's MuJoCo type (``"touch"``, ``"accelerometer"``, ...)."""
    @property
    def sensor_address(self) -> list[int]:
        """Each sensor's first column of ``BatchSim.sensors`` (MuJoCo's ``sensor_adr``)."""
    @property
    def sensor_dims(self) -> list[int]:
        """Each sensor's number of values (MuJoCo's ``sensor_dim``)."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickling: the model as the library's bytes, every number bit for bit."""
    @property
    def joint_qpos_address(self) -> list[int]:
        """Where each joint's coordinates start in ``q`` (MuJoCo's ``jnt_qposadr``); -1 without."""
    @property
    def joint_dof_address(self) -> list[int]:
        """Where each joint's velocities start in ``v`` (MuJoCo's ``jnt_dofadr``); -1 without."""
    @property
    def actuator_names(self) -> list[str]: ...
    @property
    def ctrl_range(self) -> FloatArray: ...
    @property
    def body_mass(self) -> FloatArray:
        """Each body's mass (nbodies,), the world's first."""
    @property
    def body_com(self) -> FloatArray:
        """Each body's centre of mass in its frame (nbodies, 3)."""
    @property
    def body_inertia(self) -> FloatArray:
        """Each body's rotational inertia about its centre of mass (nbodies, 3, 3)."""
    @property
    def gravity(self) -> FloatArray: ...
    @property
    def dof_damping(self) -> FloatArray: ...
    @property
    def dof_armature(self) -> FloatArray: ...
    @property
    def actuator_gear(self) -> FloatArray: ...
    def with_parameters(
        self,
        *,
        body_mass: Optional[ArrayIn] = None,
        body_com: Optional[ArrayIn] = None,
        body_inertia: Optional[ArrayIn] = None,
        gravity: Optional[ArrayIn] = None,
        dof_damping: Optional[ArrayIn] = None,
        dof_armature: Optional[ArrayIn] = None,
        actuator_gear: Optional[ArrayIn] = None,
    ) -> Model:
        """A copy with these arrays in place of its own (domain
        randomization, for ``BatchSim.set_world_model``); each changed body's
        inertia checked as a file's is; ValueError names a bad value."""
    @property
    def q0(self) -> FloatArray:
        """The initial configuration (nq,); quaternions (x, y, z, w)."""
    @property
    def v0(self) -> FloatArray: ...
    @property
    def body_frame_names(self) -> list[str]:
        """The file's bodies (MuJoCo's, world excluded): the rows of the com-based quantities."""
    @property
    def mocap_names(self) -> list[str]:
        """The mocap bodies (``mocap="true"``), in file order."""
    def to_mujoco(self, q: ArrayIn, v: ArrayIn) -> tuple[FloatArray, FloatArray]:
        """MuJoCo's (qpos, qvel), each (n, ·), of states (q, v): quaternions (w, x, y, z),
        a free joint's linear velocity in the world frame."""
    def configuration_charts(self, q: ArrayIn) -> tuple[FloatArray, FloatArray]:
        """c (n, nq, nv) = d(q + delta)/d delta and d (n, nv, nq) = d(q' - q)/dq' at q (n, nq)."""
    def from_mujoco(self, qpos: ArrayIn, qvel: ArrayIn) -> tuple[FloatArray, FloatArray]:
        """The states (q, v) of MuJoCo's (qpos, qvel): the inverse of to_mujoco."""

def load(
    path: str,
    floating_base: Optional[bool] = None,
    package_dirs: Sequence[str] = (),
    sliding_friction_only: bool = False,
) -> Model:
    """Loads a URDF or MJCF file."""

def scene(name: str) -> Model:
    """A built-in scene by name."""

def scene_names() -> list[str]:
    """The built-in scenes' names."""

def set_num_threads(threads: int) -> None:
    """Sets the number of threads batches step their worlds on, for the rest of the
    process (one per core unless set, here or by ``RAYON_NUM_THREADS``). The pool starts
    once per process: call it before the first batch steps; asking for another count
    afterwards raises ``RuntimeError`` (the same count is no error)."""

def num_threads() -> int:
    """The number of threads batches step their worlds on."""

def solve(
    g_matrix: ArrayIn,
    g: ArrayIn,
    mu: ArrayIn,
    solver: str = ...,  # DEFAULT_SOLVER
    tolerance: float = ...,  # DEFAULT_TOLERANCE
    max_iterations: int = ...,  # DEFAULT_MAX_ITERATIONS
    device: str = "cpu",
) -> dict[str, Any]:
    """Solves one contact problem (G (m, m), g (m,), mu (nc,)) or a batch of B of one size
    (G (B, m, m), g (B, m), mu (B, nc)) on the CPU (f64, in parallel) or the GPU (f32, one
    kernel): lambda, c, iterations, newton_steps (ncp-admm's finisher), fallback_sweeps
    (ncp-admm on the CPU: ncp-pgs sweeps after ADMM's cap), converged, eps_abs (per problem
    for a batch)."""

class Simulator:
    """One world."""

    def __init__(
        self,
        model: Model,
        dt: Optional[float] = None,
        solver: str = ...,  # DEFAULT_SOLVER
        tolerance: float = ...,  # DEFAULT_TOLERANCE
    ) -> None: ...
    def mocap_poses(self) -> tuple[FloatArray, FloatArray]:
        """The mocap bodies' poses: positions (nmocap, 3), quaternions (nmocap, 4), (w, x, y, z)."""
    def set_mocap(self, pos: ArrayIn, quat: Optional[ArrayIn] = None) -> None:
        """The mocap bodies' poses from the next step on (ValueError, nothing changed, on a bad value)."""
    def step(
        self, tau: Optional[ArrayIn] = None, ctrl: Optional[ArrayIn] = None
    ) -> dict[str, Any]:
        """One step under torques (nv,) or controls (nu,)."""
    @property
    def q(self) -> FloatArray:
        """The configuration (nq,), a copy; quaternions (x, y, z, w)."""
    @q.setter
    def q(self, q: ArrayIn) -> None: ...
    @property
    def v(self) -> FloatArray: ...
    @v.setter
    def v(self, v: ArrayIn) -> None: ...
    @property
    def act(self) -> FloatArray:
        """The actuators' activations (na,), MuJoCo's act."""
    @act.setter
    def act(self, act: ArrayIn) -> None: ...
    @property
    def t(self) -> float: ...
    @property
    def stage_times(self) -> dict[str, float]:
        """Wall time (s) per stage of a step, summed since the last reset_timers()."""
    def reset_timers(self) -> None: ...
    def sensors(self) -> FloatArray:
        """The sensor values (see ``BatchSim.sensors``), (nsensordata,)."""
    def render(
        self,
        width: int = 480,
        height: int = 480,
        azimuth: Optional[float] = None,
        elevation: Optional[float] = None,
        distance: Optional[float] = None,
        target: Optional[Sequence[float]] = None,
        depth: bool = False,
    ) -> Any:
        """An image of the world, (height, width, 3) uint8 (and (height, width)
        float32 depths with ``depth=True``): see ``BatchSim.render``."""
    def contacts(self) -> list[dict[str, Any]]:
        """The last step's contacts."""
    def snapshot(self) -> bytes:
        """The full state: q, v, act, time and the warm starts."""
    def restore(self, snapshot: bytes) -> None:
        """Sets the full state from ``snapshot()``: the world continues bit
        for bit; a snapshot that does not fit raises ValueError."""
    def step_with_jacobians(self, tau: ArrayIn) -> dict[str, Any]:
        """One step with its Jacobians (dv_dq, dv_dv, dv_dtau, dq_*, dv_dmu,
        wrt_q, q_residual) and ``q_side`` (nv,) int8: which perturbations
        of each q column the derivative is for (0 both signs, +1 from above,
        -1 from below, 2 neither: a kink)."""
    def step_with_vjp(
        self, tau: ArrayIn, w_v: ArrayIn, w_q: ArrayIn
    ) -> dict[str, Any]:
        """One step with the vector-Jacobian product of (w_v, w_q)."""

class Tape:
    """The record of one BatchSim.step_for_vjp (opaque)."""

    @property
    def nworlds(self) -> int: ...

class BatchSim:
    """Many worlds of one model, stepped together."""

    def __init__(
        self,
        model: Model,
        nworlds: int,
        backend: str = "cpu",
        dt: Optional[float] = None,
        solver: str = ...,  # DEFAULT_SOLVER
        tolerance: float = ...,  # BATCH_DEFAULT_TOLERANCE
        decomposition: str = "invocation",
        layout: str = "packed",
        pipeline: int = 1,
    ) -> None:
        """`backend`: "gpu" (the worlds on the device where the model allows:
        contact-free trees of free, ball, hinge, slide and fixed joints; else as
        "gpu-solve", see `notice`), "gpu-solve" (host stages, batched GPU
        contact solve), "cpu" (all cores) or "cpu1". Host-prepared GPU path:
        `decomposition` (invocation, workgroup or lane: one
        invocation per problem, one workgroup per problem, one lane per
        contact for the PGS solvers), `layout` of the batch (packed or
        interleaved by size class) and `pipeline` chunks of worlds per step."""
    @property
    def nworlds(self) -> int: ...
    def step(self, tau: ArrayIn, repeats: int = 1) -> int:
        """One step (or `repeats`) of every world under torques (nworlds, nv)."""
    def step_controls(self, ctrl: ArrayIn, repeats: int = 1) -> int:
        """One step (or `repeats`, a frame skip: on "gpu" one readback) of
        every world under controls (nworlds, nu)."""
    @property
    def failures(self) -> list[tuple[int, str]]:
        """The worlds whose last step failed, and why (they kept their state)."""
    @property
    def resident(self) -> bool:
        """Whether the worlds live on the GPU (backend "gpu", whole step on the device)."""
    @property
    def notice(self) -> Optional[str]:
        """Why backend "gpu" runs the host-prepared path ("gpu-solve"), if it does."""
    @property
    def q(self) -> FloatArray:
        """The worlds' configurations (nworlds, nq), a copy; quaternions (x, y, z, w)."""
    @property
    def v(self) -> FloatArray: ...
    @property
    def q_view(self) -> FloatArray:
        """The worlds' configurations (nworlds, nq) as a live, read-only view: the
        same memory at every access, updated in place by every step and every set
        state (no copy per access; ``torch.from_numpy`` shares it)."""
    @property
    def v_view(self) -> FloatArray:
        """The velocities (nworlds, nv), live and read-only (see ``q_view``)."""
    @property
    def act_view(self) -> FloatArray:
        """The activations (nworlds, na), live and read-only (see ``q_view``)."""
    @property
    def t_view(self) -> FloatArray:
        """The times (nworlds,), live and read-only (see ``q_view``)."""
    def body_positions(self, body: int) -> FloatArray:
        """World positions (nworlds, 3) of a body's origin."""
    def frame_positions(self, name: str, q: Optional[ArrayIn] = None) -> FloatArray:
        """World positions (nworlds, 3) of a named frame (a file's body)."""
    def constraint_forces(self) -> FloatArray:
        """Each world's generalized constraint forces (nworlds, nv) in its last step."""
    def centers_of_mass(self, q: Optional[ArrayIn] = None) -> FloatArray:
        """Each world's centre of mass (nworlds, 3)."""
    def com_inertias(self, q: Optional[ArrayIn] = None) -> FloatArray:
        """MuJoCo's cinert of the file's bodies (nworlds, bodies, 10)."""
    def com_velocities(self, q: Optional[ArrayIn] = None, v: Optional[ArrayIn] = None) -> FloatArray:
        """MuJoCo's cvel of the file's bodies (nworlds, bodies, 6)."""
    def com_external_forces(self, q: Optional[ArrayIn] = None) -> FloatArray:
        """MuJoCo's cfrc_ext of the file's bodies from the last step's contacts (nworlds, bodies, 6)."""
    def actuator_forces(
        self, ctrl: ArrayIn, q: Optional[ArrayIn] = None, v: Optional[ArrayIn] = None
    ) -> FloatArray:
        """MuJoCo's qfrc_actuator (nworlds, nv) under controls ctrl (nworlds, nu)."""
    def set_state(
        self, world: int, q: ArrayIn, v: ArrayIn, act: Optional[ArrayIn] = None
    ) -> None:
        """World ``world``'s state; ``act`` (na,) the activations (zero when not given)."""
    @property
    def act(self) -> FloatArray:
        """The worlds' activations (nworlds, na), a copy (MuJoCo's act)."""
    def set_world_model(self, world: int, model: Model) -> None:
        """World ``world``'s own model (``Model.with_parameters``), from its
        next step on, on every backend; "gpu" stays resident unless the
        model's joints differ (``notice`` says why)."""
    def set_world_params(
        self,
        world: int,
        *,
        dt: Optional[float] = None,
        limit_margin: Optional[float] = None,
        baumgarte: Optional[float] = None,
        compliance: Optional[float] = None,
        friction_scale: Optional[float] = None,
        max_recovery_speed: Optional[float] = None,
        max_equality_recovery_speed: Optional[float] = None,
        mocap_compliance: Optional[float] = None,
        penetration_compliance: Optional[float] = None,
        screen_contacts: Optional[bool] = None,
    ) -> None:
        """World ``world``'s step parameters from its next step on
        (``max_recovery_speed``: the most speed the recovery of a
        penetration or a joint past its stop may ask for, ``math.inf``
        unbounded; ``max_equality_recovery_speed``: an equality's, 5 by
        default; ``mocap_compliance``: the compliance of an equality to a
        mocap body, 0.01 by default, 0 rigid; ``penetration_compliance``:
        the compliance of a penetrating contact's normal row, 0 (rigid) by
        default, 1 for files that start overlapping; ``screen_contacts``: False keeps every contact within the
        margin in the problem); a bad value raises ValueError and nothing
        changes."""
    def mocap_poses(self) -> tuple[FloatArray, FloatArray]:
        """Every world's mocap poses: positions (nworlds, nmocap, 3) and
        quaternions (nworlds, nmocap, 4), (w, x, y, z) with w >= 0 (MuJoCo's
        ``mocap_pos``, ``mocap_quat``)."""
    def set_mocap(
        self, pos: ArrayIn, quat: Optional[ArrayIn] = None, worlds: Optional[Sequence[int]] = None
    ) -> None:
        """The mocap bodies' poses from the next step on, (k, nmocap, 3) and
        (k, nmocap, 4) for every world or the listed ``worlds``; the
        ``connect``s and ``weld``s naming them follow. ValueError, nothing
        changed, on a bad value."""
    def set_states(
        self, q: ArrayIn, v: ArrayIn, act: Optional[ArrayIn] = None, worlds: Optional[Sequence[int]] = None
    ) -> None:
        """Every world's state from (nworlds, nq), (nworlds, nv) and (nworlds, na;
        zero when not given) arrays, or with ``worlds`` (distinct indices)
        those worlds' states, one row per listed world (all checked first)."""
    def snapshot(self) -> bytes:
        """Every world's full state: q, v, act, time and the warm starts
        (refused, ValueError, for worlds living on the device)."""
    def restore(self, snapshot: bytes) -> None:
        """Every world's full state from ``snapshot()`` of a batch of the same
        model and size: the worlds continue bit for bit (``set_states``
        leaves the next solves cold); one that does not fit raises
        ValueError and no world changes."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickling: model, arguments, each world's parameters and own
        model, and ``snapshot()``."""
    def render(
        self,
        worlds: Optional[Sequence[int]] = None,
        width: int = 480,
        height: int = 480,
        azimuth: Optional[float] = None,
        elevation: Optional[float] = None,
        distance: Optional[float] = None,
        target: Optional[Sequence[float]] = None,
        depth: bool = False,
    ) -> Any:
        """Images of the worlds (default all), drawn offscreen on the GPU:
        (n, height, width, 3) uint8, and (n, height, width) float32 depths along
        the camera's axis (0: nothing) with ``depth=True``. The camera looks at
        each world's centre of mass (or ``target``) from ``azimuth``,
        ``elevation`` (degrees) at ``distance`` (m)."""
    def sensors(self) -> FloatArray:
        """Every world's sensor values (nworlds, nsensordata): position and velocity
        sensors at the state; touch, accelerometer, force and torque of the last step
        at the state it started from (dm_control's convention; 0 after a set state).
        ``framequat`` is (w, x, y, z), w >= 0. ValueError for worlds on the device."""
    def contacts(self) -> dict[str, Any]:
        """Every world's last-step contacts, one row each: world (k,), geoms and
        bodies (k, 2), point, normal (k, 3), distance (k,), impulse (k, 3) on
        geoms[:, 0] (force × dt), world frame."""
    def tendon_states(
        self, q: Optional[ArrayIn] = None, v: Optional[ArrayIn] = None
    ) -> tuple[FloatArray, FloatArray]:
        """MuJoCo's ten_length and ten_velocity (nworlds, ntendon) each."""
    @property
    def model(self) -> Model: ...
    def step_with_jacobians(self, tau: ArrayIn) -> dict[str, Any]:
        """One step under torques (nworlds, nv) with each world's step Jacobians (nworlds, nv, nv)."""
    def step_for_vjp(self, tau: ArrayIn) -> Tape:
        """One step under torques (nworlds, nv), recording each world's step for `vjp`."""
    def vjp(self, tape: Tape, w_v: ArrayIn, w_q: ArrayIn) -> dict[str, Any]:
        """The recorded step's vector-Jacobian products (q, v, tau, mu, wrt_q, q_residual, gpu_fallbacks)."""

class Gym:
    """Gymnasium's v5 task ``task_id`` over the worlds of ``batch``, in the
    library: every world's observation, reward, termination and info in
    one call after the frame skip (``moreau.gym`` builds on it).
    ``params``: Gymnasium's keyword arguments (missing ones: Gymnasium
    1.2's defaults); ``qpos0``: MuJoCo's initial qpos of the file."""

    def __init__(
        self, batch: BatchSim, task_id: str, params: dict[str, Any], qpos0: ArrayIn, qvel0: ArrayIn, frame_skip: int
    ) -> None: ...
    @staticmethod
    def registration(task_id: str) -> tuple[str, int, int]:
        """Gymnasium's (xml_file, frame_skip, max_episode_steps) of the task."""
    def seed(self, which: npt.NDArray[np.bool_], seeds: Sequence[int]) -> None:
        """Keys the reset streams of the worlds ``which`` (episodes from 0)."""
    def reset_worlds(self, batch: BatchSim, which: npt.NDArray[np.bool_]) -> None:
        """Resets the worlds ``which`` to states drawn from their Philox streams."""
    @property
    def obs_dim(self) -> int: ...
    @property
    def info_columns(self) -> list[tuple[str, int, bool]]:
        """The info's terms ``(name, width, in_reset_info)`` in a row's order."""
    @property
    def fresh(self) -> npt.NDArray[np.bool_]:
        """Whether each world was reset since its last step."""
    def observe(
        self, batch: BatchSim, reset: npt.NDArray[np.bool_]
    ) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_], FloatArray]:
        """Takes the worlds where ``reset`` is true as just reset and
        evaluates them; returns every world's (obs, reward, terminated, info)."""
    def step(
        self, batch: BatchSim, ctrl: ArrayIn, action_sq: ArrayIn, reset: npt.NDArray[np.bool_]
    ) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_], FloatArray]:
        """The frame skip of every world not just reset (``reset``), then
        every world's (obs, reward, terminated, info); failures in
        ``batch.failures``."""
    def kinematic_states(self) -> tuple[FloatArray, FloatArray]:
        """The states the worlds' last physics steps started from."""
    def times(self) -> dict[str, float]:
        """Seconds in the physics, in the task, and the number of steps."""
    def reset_times(self) -> None: ...

class Task:
    """One of the library's RL tasks (``Task.names()``: its model, reset,
    observation, torques, reward and termination, as ``moreau::envs``
    defines them), evaluated for many worlds at once, with the written
    derivatives of its observation, torques and reward (``*_vjp``; what
    ``moreau.autograd.observe``/``torques``/``reward`` differentiate). Rows
    are worlds; ``q`` is in moreau's coordinates (quaternions ``x, y, z,
    w``), and derivatives are with respect to them as they are."""

    def __init__(self, name: str, **parameters: float) -> None:
        """The task ``name`` with parameters set by keyword (``dt``,
        ``substeps``, ``episode_steps`` and the task's own: ``parameters``);
        an unknown name or parameter, or a value out of range, raises
        ValueError."""
    @staticmethod
    def names() -> list[str]: ...
    @property
    def name(self) -> str: ...
    @property
    def model(self) -> Model:
        """The model (``q0``, ``v0``: world 0's reset of seed 0; ``dt``: the task's physics step)."""
    @property
    def parameters(self) -> dict[str, float]: ...
    @property
    def obs_dim(self) -> int: ...
    @property
    def action_dim(self) -> int: ...
    @property
    def episode_dim(self) -> int: ...
    @property
    def substeps(self) -> int: ...
    @property
    def dt(self) -> float:
        """Physics time step (s)."""
    @property
    def control_dt(self) -> float:
        """Duration of an environment step (s): ``substeps · dt``."""
    @property
    def max_episode_steps(self) -> int: ...
    @property
    def observation_space(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def reset(self, n: int, seed: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Initial ``(q, v, episode)`` of ``n`` worlds for reset seed ``seed``."""
    def observe(
        self, q: ArrayIn, v: ArrayIn, t: Optional[ArrayIn] = None, episode: Optional[ArrayIn] = None
    ) -> npt.NDArray[np.float32]:
        """Observations (n, obs_dim) at times ``t`` (n,; default 0)."""
    def observe_vjp(
        self, q: ArrayIn, v: ArrayIn, g: ArrayIn, t: Optional[ArrayIn] = None, episode: Optional[ArrayIn] = None
    ) -> tuple[FloatArray, FloatArray]:
        """``(g_q, g_v)`` for the observations' adjoint ``g`` (n, obs_dim)."""
    def torques(self, q: ArrayIn, v: ArrayIn, action: ArrayIn, episode: Optional[ArrayIn] = None) -> FloatArray:
        """Joint torques (n, nv) of actions (n, action_dim), used as given."""
    def torques_vjp(
        self, q: ArrayIn, v: ArrayIn, action: ArrayIn, g: ArrayIn, episode: Optional[ArrayIn] = None
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(g_q, g_v, g_action)`` for the torques' adjoint ``g`` (n, nv)."""
    def reward(
        self,
        q_prev: ArrayIn,
        v_prev: ArrayIn,
        q: ArrayIn,
        v: ArrayIn,
        action: ArrayIn,
        energy: ArrayIn,
        episode: Optional[ArrayIn] = None,
    ) -> FloatArray:
        """Rewards (n,) of one environment step; ``energy`` (n,): its ``Σ |τ v| dt`` (J)."""
    def reward_vjp(
        self,
        q_prev: ArrayIn,
        v_prev: ArrayIn,
        q: ArrayIn,
        v: ArrayIn,
        action: ArrayIn,
        energy: ArrayIn,
        g: ArrayIn,
        episode: Optional[ArrayIn] = None,
    ) -> dict[str, FloatArray]:
        """Adjoints of ``q_prev``, ``v_prev``, ``q``, ``v``, ``action``, ``energy`` for the rewards' adjoint ``g`` (n,)."""
    def terminated(
        self, q: ArrayIn, v: ArrayIn, t: Optional[ArrayIn] = None, episode: Optional[ArrayIn] = None
    ) -> npt.npt.NDArray[np.bool_]: ...
