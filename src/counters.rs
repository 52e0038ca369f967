//! Where time goes: one vocabulary of stages for every layer (a single
//! world's step, a batch's, the GPU solver's, the benchmarks'), one
//! container of per-stage values, [`Timings`], as wall time
//! ([`StageTimes`]) or seconds and shares in reports ([`StageSeconds`]),
//! and the timers that nest them: a batch step's ([`BatchTimes`]: its host
//! sections, its GPU path's stages, and its solves' [`DeviceTimes`]).

use std::time::{Duration, Instant};

/// A stage of a step, in pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// A controller computing the actions (benchmarks, environments).
    Actions,
    /// `v_f = v + dt·M⁻¹(τ − b)`: kinematics, bias forces, factorization.
    FreeDynamics,
    Collision,
    /// Contact Jacobian, Delassus assembly, free contact velocity, warm start.
    Delassus,
    /// Packing the problems into a GPU batch.
    Pack,
    Upload,
    /// The contact solve (on the GPU: from submission to the mapped readback).
    Solve,
    Download,
    /// `v⁺ = v_f + M⁻¹Jᵀλ`.
    VelocityUpdate,
    /// `q⁺ = q ⊕ v⁺·dt`.
    Integrate,
    /// What no stage accounts for (bookkeeping, buffer growth).
    Other,
}

impl Stage {
    pub const COUNT: usize = 11;
    pub const ALL: [Stage; Stage::COUNT] = [
        Stage::Actions,
        Stage::FreeDynamics,
        Stage::Collision,
        Stage::Delassus,
        Stage::Pack,
        Stage::Upload,
        Stage::Solve,
        Stage::Download,
        Stage::VelocityUpdate,
        Stage::Integrate,
        Stage::Other,
    ];

    /// The stages of one world's step ([`crate::sim::Simulator::step`]).
    pub const WORLD: [Stage; 6] = [
        Stage::FreeDynamics,
        Stage::Collision,
        Stage::Delassus,
        Stage::Solve,
        Stage::VelocityUpdate,
        Stage::Integrate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Actions => "actions",
            Stage::FreeDynamics => "free_dynamics",
            Stage::Collision => "collision",
            Stage::Delassus => "delassus",
            Stage::Pack => "pack",
            Stage::Upload => "upload",
            Stage::Solve => "solve",
            Stage::Download => "download",
            Stage::VelocityUpdate => "velocity_update",
            Stage::Integrate => "integrate",
            Stage::Other => "other",
        }
    }
}

/// One value per [`Stage`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings<T> {
    values: [T; Stage::COUNT],
}

/// Wall time per stage.
pub type StageTimes = Timings<Duration>;
/// Seconds (or shares) per stage, for reports.
pub type StageSeconds = Timings<f64>;

impl<T: Copy + Default + std::ops::AddAssign + std::iter::Sum<T>> Timings<T> {
    pub fn get(&self, stage: Stage) -> T {
        self.values[stage as usize]
    }

    pub fn set(&mut self, stage: Stage, value: T) {
        self.values[stage as usize] = value;
    }

    pub fn add(&mut self, stage: Stage, value: T) {
        self.values[stage as usize] += value;
    }

    /// Adds every stage of `other`.
    pub fn accumulate(&mut self, other: &Timings<T>) {
        for (a, &b) in self.values.iter_mut().zip(&other.values) {
            *a += b;
        }
    }

    pub fn total(&self) -> T {
        self.values.iter().copied().sum()
    }

    /// `(stage, value)` in pipeline order.
    pub fn iter(&self) -> impl Iterator<Item = (Stage, T)> + '_ {
        Stage::ALL.iter().map(|&s| (s, self.get(s)))
    }
}

impl StageTimes {
    /// Runs `f`, adding its wall time to `stage`.
    pub fn time<R>(&mut self, stage: Stage, f: impl FnOnce() -> R) -> R {
        let t = Instant::now();
        let r = f();
        self.add(stage, t.elapsed());
        r
    }

    /// In seconds.
    pub fn seconds(&self) -> StageSeconds {
        Timings {
            values: self.values.map(|d| d.as_secs_f64()),
        }
    }
}

impl StageSeconds {
    /// Each stage scaled by `k`.
    pub fn scaled(&self, k: f64) -> StageSeconds {
        Timings {
            values: self.values.map(|x| x * k),
        }
    }

    /// Each stage over the sum of all (shares summing to 1).
    pub fn shares(&self) -> StageSeconds {
        self.scaled(1.0 / self.total().max(1e-300))
    }
}

/// In reports: an object with one key per stage ([`Stage::name`]).
impl serde::Serialize for StageSeconds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(Stage::COUNT))?;
        for (stage, v) in self.iter() {
            m.serialize_entry(stage.name(), &v)?;
        }
        m.end()
    }
}

/// What the device's timestamp queries measured of one solve (all zero
/// where the adapter has no timestamp queries), and how many round trips it took.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct DeviceTimes {
    /// Whether the compute passes were timed on the device.
    pub measured: bool,
    /// Device time of the solve's compute passes.
    pub solve: std::time::Duration,
    /// Device time of the copies into the readback buffer (where the
    /// adapter times copies, `TIMESTAMP_QUERY_INSIDE_ENCODERS`).
    pub readback: std::time::Duration,
    /// Dispatches, submissions and buffer maps of the solve.
    pub dispatches: u64,
    pub submits: u32,
    pub maps: u32,
}

impl DeviceTimes {
    pub fn accumulate(&mut self, o: &DeviceTimes) {
        self.measured |= o.measured;
        self.solve += o.solve;
        self.readback += o.readback;
        self.dispatches += o.dispatches;
        self.submits += o.submits;
        self.maps += o.maps;
    }
}

/// The stages of a resident step (worlds living on the device), nested
/// under its wait for the device: the step kernel (actuators, dynamics,
/// the joint-limit rows, collision and the contact problem's assembly),
/// the contact solve, the finish (velocity update, integration).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ResidentStages {
    pub step: Duration,
    pub solve: Duration,
    pub finish: Duration,
}

impl ResidentStages {
    pub fn accumulate(&mut self, o: &ResidentStages) {
        self.step += o.step;
        self.solve += o.solve;
        self.finish += o.finish;
    }

    pub fn total(&self) -> Duration {
        self.step + self.solve + self.finish
    }
}

/// What the resident step's stage timing measured over `steps` steps
/// (`gpu::resident::ResidentBatch::set_stage_timing`; each stage submitted
/// alone and waited for).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ResidentStageTimes {
    pub steps: u64,
    /// Whether `device` was measured by the device's timestamp queries
    /// (else it is zero but for the rounds below: the adapter has none,
    /// and `host` is the measure).
    pub device_measured: bool,
    /// The passes' device time; on an adapter with a loop limit, the
    /// solve's later rounds are in `solve` by the host's clock.
    pub device: ResidentStages,
    /// The host's clock from each stage's submission to its completion.
    pub host: ResidentStages,
    /// The solve's rounds after its first dispatches (adapters with a loop
    /// limit).
    pub solve_rounds: u64,
}

/// Wall time of one batch step: the host's parallel sections, each of
/// which runs several stages of every world at once (the worlds' own stage
/// times are in [`crate::sim::Simulator::times`]), and the GPU solver's stages.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchTimes {
    /// Stages `FreeDynamics`, `Collision` and `Delassus` of all worlds
    /// (GPU backend; the CPU backends time whole steps in `cpu_step`).
    pub prepare: Duration,
    /// `VelocityUpdate` and `Integrate` of all worlds, and the CPU solves of
    /// problems the GPU flagged (GPU backend).
    pub finish: Duration,
    /// Whole steps of the CPU backends.
    pub cpu_step: Duration,
    /// The GPU path's own stages: `Pack`, `Upload`, `Solve`, `Download`.
    pub gpu: StageTimes,
    /// The GPU solves' device times (timestamp queries) and round trips.
    pub device: DeviceTimes,
    /// Resident worlds ([`crate::gpu::resident`]): the host's own time in
    /// the steps (inputs packed and uploaded, the dispatch submitted, the
    /// state unpacked), and the time it waited for the device.
    pub resident_host: Duration,
    pub resident_wait: Duration,
    pub total: Duration,
}

impl BatchTimes {
    pub fn accumulate(&mut self, o: &BatchTimes) {
        self.prepare += o.prepare;
        self.finish += o.finish;
        self.cpu_step += o.cpu_step;
        self.gpu.accumulate(&o.gpu);
        self.device.accumulate(&o.device);
        self.resident_host += o.resident_host;
        self.resident_wait += o.resident_wait;
        self.total += o.total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_index_their_own_slot_and_sum() {
        let mut t = StageTimes::default();
        for (k, s) in Stage::ALL.into_iter().enumerate() {
            assert_eq!(s as usize, k);
            t.add(s, Duration::from_millis(k as u64 + 1));
        }
        assert_eq!(t.get(Stage::Solve), Duration::from_millis(7));
        assert_eq!(t.total(), Duration::from_millis(66));
        let sh = t.seconds().shares();
        assert!((sh.total() - 1.0).abs() < 1e-12);
        assert!((sh.get(Stage::Other) - 11.0 / 66.0).abs() < 1e-12);
        let json = serde_json::to_value(sh).unwrap();
        assert_eq!(json.as_object().unwrap().len(), Stage::COUNT);
        assert!(json["velocity_update"].as_f64().unwrap() > 0.0);
    }
}
