//! CPU use as a share of the container's CPU quota (cgroup v2 `cpu.max`, or v1 CFS quota), so
//! a container limited to one CPU on a 64-CPU host is "busy" when it uses one CPU, not 1/64.

use crate::clock::Micros;
use std::fs;
use std::path::{Path, PathBuf};

/// The cgroup CPU accounting of this process, read from a cgroup filesystem root.
#[derive(Debug)]
pub struct CgroupCpu {
    usage: UsageFile,
    /// CPUs' worth of time the quota grants per second of wall time (2.0 = two CPUs).
    cpus: f64,
    previous: Option<(Micros, Micros)>,
}

#[derive(Debug)]
enum UsageFile {
    /// cgroup v2 `cpu.stat`: `usage_usec N`.
    V2(PathBuf),
    /// cgroup v1 `cpuacct.usage`: nanoseconds.
    V1(PathBuf),
}

impl CgroupCpu {
    /// The quota'd cgroup under `root` (normally `/sys/fs/cgroup`), or `None` when there is no
    /// CPU limit (then the host's CPU share is the right measure).
    pub fn detect(root: &Path) -> Option<Self> {
        if let Ok(max) = fs::read_to_string(root.join("cpu.max")) {
            let mut parts = max.split_whitespace();
            let quota: f64 = parts.next()?.parse().ok()?; // "max" does not parse: no limit
            let period: f64 = parts.next().unwrap_or("100000").parse().ok()?;
            return (quota > 0.0 && period > 0.0).then(|| Self {
                usage: UsageFile::V2(root.join("cpu.stat")),
                cpus: quota / period,
                previous: None,
            });
        }
        let read = |name: &str| -> Option<f64> {
            fs::read_to_string(root.join("cpu").join(name))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let quota = read("cpu.cfs_quota_us")?; // -1: no limit
        let period = read("cpu.cfs_period_us")?;
        (quota > 0.0 && period > 0.0).then(|| Self {
            usage: UsageFile::V1(root.join("cpuacct").join("cpuacct.usage")),
            cpus: quota / period,
            previous: None,
        })
    }

    /// The CPUs the quota grants.
    pub fn cpus(&self) -> f64 {
        self.cpus
    }

    fn usage_micros(&self) -> Option<Micros> {
        match &self.usage {
            UsageFile::V2(path) => fs::read_to_string(path).ok()?.lines().find_map(|line| {
                line.strip_prefix("usage_usec ")
                    .and_then(|v| v.trim().parse().ok())
            }),
            UsageFile::V1(path) => fs::read_to_string(path)
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()
                .map(|ns| ns / 1_000),
        }
    }

    /// The share of the quota used since the previous call (`None` on the first call or when
    /// the files cannot be read), clamped to [0, 1].
    pub fn sample(&mut self, now: Micros) -> Option<f64> {
        let usage = self.usage_micros()?;
        let previous = self.previous.replace((now, usage));
        let (then, used_then) = previous?;
        let wall = now.checked_sub(then).filter(|&w| w > 0)? as f64;
        let used = usage.saturating_sub(used_then) as f64;
        Some((used / (wall * self.cpus)).clamp(0.0, 1.0))
    }
}
