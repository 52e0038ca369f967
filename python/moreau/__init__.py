"""moreau: rigid robots in frictional contact, many worlds at once.

The Python bindings of the Rust crate: load a URDF or MJCF file
(:func:`load`) or a built-in scene (:func:`scene`), step one world
(:class:`Simulator`) or many (:class:`BatchSim`), with numpy arrays in and
out; the library's RL tasks with their derivatives (:class:`Task`). Bad input raises ``ValueError`` (or ``FileNotFoundError``) naming the
culprit and leaves the object as it was.
"""

from ._moreau import (
    BATCH_DEFAULT_TOLERANCE,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_SOLVER,
    DEFAULT_TOLERANCE,
    BatchSim,
    Model,
    Simulator,
    Tape,
    Task,
    load,
    num_threads,
    scene,
    scene_names,
    set_num_threads,
    solve,
)

__all__ = [
    "BATCH_DEFAULT_TOLERANCE",
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_SOLVER",
    "DEFAULT_TOLERANCE",
    "BatchSim",
    "Model",
    "Simulator",
    "Tape",
    "Task",
    "load",
    "num_threads",
    "scene",
    "scene_names",
    "set_num_threads",
    "solve",
]
