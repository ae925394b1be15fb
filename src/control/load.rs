//! The load factor: CPU use sampled each interval, smoothed (EWMA), and turned into a factor
//! with hysteresis so that it does not flap while the load hovers around a threshold.
//!
//! The rule: the factor becomes `high_factor` once the smoothed load is above `high`, and
//! returns to 1.0 only when it falls to `high - margin` or below; it becomes `low_factor` once
//! the load is below `low`, and returns to 1.0 only at `low + margin` or above. The margin is
//! 0.05, or a quarter of `high - low` when that is narrower, so the bands never overlap.

use super::cgroup::CgroupCpu;
use crate::clock::Micros;
use crate::engine::{Band, LiveLoad, Thresholds};
use std::path::Path;

/// A source of CPU use, 0 to 1, since its previous sample. Tests script one.
pub trait LoadSampler: Send {
    /// `None` when no sample could be taken this time (the factor then stays as it was).
    fn sample(&mut self, now: Micros) -> Option<f64>;
}

/// No CPU to sample: a replay, or a test of another load source.
pub struct NoLoad;

impl LoadSampler for NoLoad {
    fn sample(&mut self, _now: Micros) -> Option<f64> {
        None
    }
}

/// The host's CPU share from sysinfo, or the cgroup quota's share inside a limited container.
pub struct SystemLoad {
    cgroup: Option<CgroupCpu>,
    system: Option<sysinfo::System>,
}

impl SystemLoad {
    pub fn new() -> Self {
        Self::with_cgroup_root(Path::new("/sys/fs/cgroup"))
    }

    pub fn with_cgroup_root(root: &Path) -> Self {
        let cgroup = CgroupCpu::detect(root);
        let system = match &cgroup {
            Some(c) => {
                tracing::info!(cpus = c.cpus(), "load: CPU share of the cgroup's quota");
                None
            }
            None => match sysinfo::System::new() {
                Ok(mut system) => {
                    system.refresh_cpu_usage();
                    Some(system)
                }
                Err(error) => {
                    tracing::warn!(%error, "load: cannot read CPU use; the load factor stays 1.0");
                    None
                }
            },
        };
        Self { cgroup, system }
    }
}

impl SystemLoad {
    /// Where the load comes from, for the start-up line.
    pub fn source(&self) -> String {
        match (&self.cgroup, &self.system) {
            (Some(c), _) => format!("the cgroup's CPU quota ({} CPUs)", c.cpus()),
            (None, Some(_)) => "the host's CPU".to_owned(),
            (None, None) => "none (CPU use unreadable)".to_owned(),
        }
    }
}

impl Default for SystemLoad {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadSampler for SystemLoad {
    fn sample(&mut self, now: Micros) -> Option<f64> {
        if let Some(cgroup) = &mut self.cgroup {
            return cgroup.sample(now);
        }
        let system = self.system.as_mut()?;
        system.refresh_cpu_usage();
        Some((f64::from(system.global_cpu_usage()) / 100.0).clamp(0.0, 1.0))
    }
}

/// EWMA smoothing and the hysteresis band the factor is in.
#[derive(Debug, Clone)]
pub struct LoadController {
    smoothed: Option<f64>,
    band: Band,
}

impl Default for LoadController {
    fn default() -> Self {
        Self {
            smoothed: None,
            band: Band::Normal,
        }
    }
}

impl LoadController {
    pub fn smoothed(&self) -> Option<f64> {
        self.smoothed
    }

    pub fn band(&self) -> Band {
        self.band
    }

    /// Takes one sample (`weight` is the EWMA weight of the newest) and returns the factor.
    pub fn update(&mut self, sample: Option<f64>, weight: f64, t: &Thresholds) -> f64 {
        if let Some(x) = sample.filter(|x| x.is_finite()) {
            let x = x.clamp(0.0, 1.0);
            self.smoothed = Some(match self.smoothed {
                Some(s) => weight * x + (1.0 - weight) * s,
                None => x,
            });
        }
        if let Some(s) = self.smoothed {
            self.band = self.band.next(s, t);
        }
        self.factor(t)
    }

    pub fn factor(&self, t: &Thresholds) -> f64 {
        self.band.factor(t)
    }

    /// The band and smoothed value, for decisions to read against the live thresholds.
    pub fn live(&self) -> LiveLoad {
        LiveLoad::Banded {
            band: self.band,
            smoothed: self.smoothed,
        }
    }
}
