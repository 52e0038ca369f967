//! Loading MJCF (MuJoCo XML) models into a [`Model`](super::Model).
