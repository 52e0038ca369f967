//! How much host memory a batch needs, estimated before it is built, and
//! how much the host has: [`crate::batch::BatchSim::new`] refuses a batch
//! whose estimate is over what is available ([`BatchError::HostMemory`])
//! before it allocates anything per world, instead of aborting the process
//! on a failed allocation.
//!
//! The estimate ([`HostEstimate`]) is a formula in the model's sizes, fitted
//! to the live heap bytes of stepped worlds (a counting allocator over 300
//! steps, `tests/capacity.rs`: the built-in scenes and robots from
//! example-robot-data and Gymnasium, with every CPU solver). It is
//! deliberately generous: about 1.5× the measured bytes of a built world
//! (`Simulator`, `Data`, collision and solver workspaces), plus the
//! workspaces of a contact problem of `m = 3·nc + nl` rows (`5m² + 8m·nv +
//! 64m` f64: the dense Delassus matrix and the solvers' factors), with `nc`
//! the contacts of the initial state or [`BatchOptions::initial_contacts_per_world`]
//! (8), whichever is more (fewer when the model has too few geometries to
//! make them), and `nl` one row per limited joint. It is an estimate for
//! the batch as it starts: worlds that later make many more contacts need
//! more. The GPU backend adds its host-side batch (packed problems and
//! their readback, twice over for the vectors' growth) and, on an adapter
//! that shares the host's memory (a CPU adapter such as lavapipe, an
//! integrated GPU), the device buffers.
//!
//! The memory available is, on Linux, `MemAvailable` of `/proc/meminfo`,
//! lowered to the headroom of the process's cgroup (v1 or v2) where it has
//! a memory limit; elsewhere nothing is checked but that the total fits the
//! address space (`isize::MAX` bytes). All products are taken in `u128` or
//! saturating `u64`, so absurd world counts are refused, never overflowed.

use super::{BatchError, BatchOptions};
use crate::collision::Contact;
use crate::gpu::BatchCapacity;
use crate::model::Model;
use crate::sim::{Simulator, State};
use std::fmt;
use std::sync::Arc;

/// Bytes a world of the batch is estimated to need on the host before it
/// is built (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostEstimate {
    /// The CPU world: simulator, state, workspaces, its contact problem.
    pub world_bytes: u64,
    /// GPU backend: the world's share of the host-side batch (packed
    /// problem and readback); 0 on the CPU backends.
    pub gpu_host_bytes: u64,
    /// GPU backend: the world's share of the device buffers, counted only
    /// on an adapter that shares the host's memory
    /// ([`Self::with_shared_device_memory`]).
    pub device_bytes: u64,
    /// Contacts per world the estimate assumes.
    pub contacts: usize,
    /// Joint-limit rows per world the estimate assumes.
    pub limit_rows: usize,
}

impl HostEstimate {
    /// The estimate for a batch of `model` at `initial` on `options`'
    /// backend: one simulator is built and prepared at `initial` to count
    /// its contacts. Its errors are the batch's: world 0's
    /// ([`BatchError::Sim`]), or a bad initial state ([`BatchError::InitialState`]).
    pub fn for_batch(
        model: &Arc<Model>,
        initial: &State,
        options: &BatchOptions,
    ) -> Result<Self, BatchError> {
        let mut probe = Simulator::new(model.clone(), options.params)
            .map_err(|error| BatchError::Sim { world: 0, error })?;
        probe.energy(initial).map_err(BatchError::InitialState)?;
        let contacts = probe.prepare(initial, &vec![0.0; model.nv]).unwrap_or(0);
        Ok(Self::new(model, options, contacts))
    }

    /// The estimate for one world of `model` on `options`' backend whose
    /// initial state has `initial_contacts` contacts.
    pub fn new(model: &Model, options: &BatchOptions, initial_contacts: usize) -> Self {
        let nv = model.nv as u64;
        let nq = model.nq as u64;
        let ng = model.geometries.len();
        // Contacts: the initial state's, or the GPU's first room (8 by
        // default) where the model has geometries enough to make them
        // (about 4 per geometry beside the ground).
        let floor = options
            .initial_contacts_per_world
            .min(ng.saturating_sub(1).saturating_mul(4));
        let contacts = initial_contacts.max(floor);
        let limit_rows = model.limited_joints().count();
        let m = (3 * contacts as u64).saturating_add(limit_rows as u64);
        let f64s = |n: u64| n.saturating_mul(8);
        let built = (std::mem::size_of::<super::World>() as u64)
            .saturating_add(10 * 1024)
            .saturating_add((model.nbodies as u64).saturating_mul(1536))
            .saturating_add((ng as u64).saturating_mul(384))
            .saturating_add(f64s(nv.saturating_mul(nv).saturating_mul(3)))
            .saturating_add(nq.saturating_add(nv).saturating_mul(128))
            // The step's contact lists (detected, set aside, the warm
            // starts' map) and the problem's buffers grown twice in a step
            // whose contacts set aside are taken back (`sim::screen`):
            // Solo-12's world held 170 kB before, 182 kB after.
            .saturating_add(
                (contacts as u64).saturating_mul(8 * std::mem::size_of::<Contact>() as u64),
            );
        let problem = if m == 0 {
            0
        } else {
            let rows = m
                .saturating_mul(m)
                .saturating_mul(5)
                .saturating_add(m.saturating_mul(nv).saturating_mul(8))
                .saturating_add(m.saturating_mul(64));
            f64s(rows).saturating_add(4096)
        };
        let mut gpu_host_bytes = 0;
        if options.backend.uses_gpu() {
            let cap = one_problem(contacts, limit_rows);
            let packed: u64 = cap.buffer_bytes(0).iter().map(|(_, b)| b).sum();
            gpu_host_bytes = packed
                .saturating_add(cap.readback_bytes())
                .saturating_mul(2);
        }
        HostEstimate {
            world_bytes: built.saturating_add(problem),
            gpu_host_bytes,
            device_bytes: 0,
            contacts,
            limit_rows,
        }
    }

    /// This estimate with the device buffers of `options`' GPU solver
    /// counted as host memory (an adapter that shares it).
    pub fn with_shared_device_memory(mut self, options: &BatchOptions) -> Self {
        if let Some((kernel, _)) = options.params.solver.spec().gpu {
            self.device_bytes = one_problem(self.contacts, self.limit_rows).device_bytes(kernel);
        }
        self
    }

    /// Bytes per world, all parts together.
    pub fn bytes_per_world(&self) -> u64 {
        self.world_bytes
            .saturating_add(self.gpu_host_bytes)
            .saturating_add(self.device_bytes)
    }

    /// Refuses `nworlds` worlds of this estimate that do not fit in
    /// `available` bytes (or, without it, in the address space).
    pub fn check(&self, nworlds: usize, available: Option<Available>) -> Result<(), BatchError> {
        check_host_memory(nworlds, self.bytes_per_world(), available)
    }
}

/// Room for one problem of `contacts` contacts and `limit_rows` unilateral rows.
fn one_problem(contacts: usize, limit_rows: usize) -> BatchCapacity {
    BatchCapacity::uniform_with_rows(1, contacts, limit_rows)
}

/// Refuses `nworlds` worlds of `bytes_per_world` each when their total is
/// over `available` (or over `isize::MAX` bytes, the most one allocation
/// may hold, whatever is available).
pub fn check_host_memory(
    nworlds: usize,
    bytes_per_world: u64,
    available: Option<Available>,
) -> Result<(), BatchError> {
    let total = nworlds as u128 * bytes_per_world as u128;
    let address_space = Available {
        bytes: isize::MAX as u64,
        source: "the address space",
    };
    let limit = match available {
        Some(a) if a.bytes < address_space.bytes => a,
        _ => address_space,
    };
    if total > limit.bytes as u128 {
        return Err(BatchError::HostMemory {
            nworlds,
            bytes_per_world,
            total,
            available: limit,
        });
    }
    Ok(())
}

/// Memory the host has for a new batch, and where the figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Available {
    pub bytes: u64,
    /// `MemAvailable in /proc/meminfo`, `the cgroup's memory limit`, ...
    pub source: &'static str,
}

/// The memory available to this process (see the module doc), or `None`
/// where it cannot be read (not Linux).
pub fn available_memory() -> Option<Available> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let mut best = Available {
        bytes: kib.saturating_mul(1024),
        source: "MemAvailable in /proc/meminfo",
    };
    if let Some(headroom) = cgroup_headroom()
        && headroom < best.bytes
    {
        best = Available {
            bytes: headroom,
            source: "the headroom under this process's cgroup memory limit",
        };
    }
    Some(best)
}

/// The least `limit − usage` over this process's memory cgroup and its
/// ancestors (cgroup v2, or v1's memory controller), where one has a limit.
fn cgroup_headroom() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<u64> = None;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (root, limit, usage) = if controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                "/sys/fs/cgroup/memory",
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        // From the process's cgroup up to the root of the mount (inside a
        // container the mount's root is the container's cgroup).
        let mut dir = std::path::PathBuf::from(root);
        dir.push(path.trim_start_matches('/'));
        loop {
            let read = |name: &str| -> Option<u64> {
                std::fs::read_to_string(dir.join(name))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            // "max" (v2) does not parse; v1's "no limit" is near 2^63.
            if let (Some(l), Some(u)) = (read(limit), read(usage))
                && l < 1 << 60
            {
                let h = l.saturating_sub(u);
                best = Some(best.map_or(h, |b| b.min(h)));
            }
            if dir.as_os_str() == root || !dir.pop() {
                break;
            }
        }
    }
    best
}

/// Bytes, written as `5.23 TiB (5 750 000 000 000 bytes)`.
pub struct Bytes(pub u128);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
        let mut value = b as f64;
        let mut unit = None;
        for u in units {
            if value < 1024.0 {
                break;
            }
            value /= 1024.0;
            unit = Some(u);
        }
        let digits = b.to_string();
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(' ');
            }
            grouped.push(c);
        }
        match unit {
            Some(u) => write!(f, "{value:.2} {u} ({grouped} bytes)"),
            None => write!(f, "{grouped} bytes"),
        }
    }
}
