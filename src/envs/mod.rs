//! Vectorized reinforcement-learning environments on top of [`crate::batch::BatchSim`].
