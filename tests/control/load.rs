//! Load factor: EWMA smoothing, hysteresis around both thresholds, the override, and CPU
//! share from cgroup v2 and v1 quota files.

use ratewarden::control::{CgroupCpu, LoadController};
use ratewarden::engine::Band;
use ratewarden::engine::Thresholds;

/// A policy's defaults: high 0.8, low 0.3, factors 0.5 and 1.5.
fn thresholds() -> Thresholds {
    Thresholds::default()
}

#[test]
fn the_factor_follows_a_smoothed_load_curve_with_hysteresis() {
    let t = thresholds();
    let mut load = LoadController::default();
    // (sample, smoothed after it, factor) with weight 0.5.
    let curve = [
        (0.5, 0.5, 1.0),
        (1.0, 0.75, 1.0),
        (1.0, 0.875, 0.5),   // above high (0.8): shrink
        (0.7, 0.7875, 0.5),  // below high but above high - 0.05: still shrinking (hysteresis)
        (0.7, 0.74375, 1.0), // at or below 0.75: back to normal
        (0.0, 0.371875, 1.0),
        (0.0, 0.1859375, 1.5),  // below low (0.3): grow
        (0.5, 0.34296875, 1.5), // above low but below low + 0.05: still growing
        (0.5, 0.421484375, 1.0),
    ];
    for (i, (sample, smoothed, factor)) in curve.into_iter().enumerate() {
        let got = load.update(Some(sample), 0.5, &t);
        let got_smoothed = load.smoothed().expect("a sample was taken");
        assert!(
            (got_smoothed - smoothed).abs() < 1e-12,
            "step {i}: {got_smoothed}"
        );
        assert_eq!(got, factor, "step {i}");
    }
}

#[test]
fn a_load_hovering_at_the_threshold_does_not_flap() {
    let t = thresholds();
    let mut load = LoadController::default();
    load.update(Some(0.9), 1.0, &t);
    assert_eq!(load.band(), Band::High);
    let mut changes = 0;
    let mut last = load.factor(&t);
    for i in 0..100 {
        let sample = if i % 2 == 0 { 0.81 } else { 0.78 };
        let factor = load.update(Some(sample), 0.3, &t);
        changes += usize::from(factor != last);
        last = factor;
    }
    assert_eq!(
        changes, 0,
        "the factor stays at high_factor around the threshold"
    );
}

#[test]
fn a_missing_sample_keeps_the_factor() {
    let t = thresholds();
    let mut load = LoadController::default();
    assert_eq!(load.update(None, 0.3, &t), 1.0, "no sample yet: 1.0");
    load.update(Some(0.95), 1.0, &t);
    assert_eq!(load.update(None, 0.3, &t), 0.5);
    assert_eq!(load.smoothed(), Some(0.95));
}

#[test]
fn cgroup_v2_quota_share_is_measured_against_the_quota_not_the_host() {
    let root = tempfile::tempdir().unwrap();
    // 1.5 CPUs' quota.
    std::fs::write(root.path().join("cpu.max"), "150000 100000\n").unwrap();
    std::fs::write(
        root.path().join("cpu.stat"),
        "usage_usec 1000000\nuser_usec 1\n",
    )
    .unwrap();
    let mut cpu = CgroupCpu::detect(root.path()).expect("a quota is set");
    assert_eq!(cpu.cpus(), 1.5);
    assert_eq!(
        cpu.sample(10_000_000),
        None,
        "the first sample has no previous one"
    );
    // 0.75 CPU-seconds used in one second of wall time: half of 1.5 CPUs.
    std::fs::write(root.path().join("cpu.stat"), "usage_usec 1750000\n").unwrap();
    assert_eq!(cpu.sample(11_000_000), Some(0.5));
    // More than the quota (a burst in the period) is clamped to 1.
    std::fs::write(root.path().join("cpu.stat"), "usage_usec 5750000\n").unwrap();
    assert_eq!(cpu.sample(12_000_000), Some(1.0));
}

#[test]
fn cgroup_v2_without_a_limit_falls_back_to_the_host() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("cpu.max"), "max 100000\n").unwrap();
    assert!(CgroupCpu::detect(root.path()).is_none());
}

#[test]
fn cgroup_v1_cfs_quota_is_read_too() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("cpu")).unwrap();
    std::fs::create_dir_all(root.path().join("cpuacct")).unwrap();
    std::fs::write(root.path().join("cpu/cpu.cfs_quota_us"), "200000\n").unwrap();
    std::fs::write(root.path().join("cpu/cpu.cfs_period_us"), "100000\n").unwrap();
    std::fs::write(root.path().join("cpuacct/cpuacct.usage"), "0\n").unwrap();
    let mut cpu = CgroupCpu::detect(root.path()).expect("a quota is set");
    assert_eq!(cpu.cpus(), 2.0);
    cpu.sample(1_000_000);
    // 0.5 CPU-seconds (in ns) over one second of 2 CPUs: a quarter.
    std::fs::write(root.path().join("cpuacct/cpuacct.usage"), "500000000\n").unwrap();
    assert_eq!(cpu.sample(2_000_000), Some(0.25));
    std::fs::write(root.path().join("cpu/cpu.cfs_quota_us"), "-1\n").unwrap();
    assert!(CgroupCpu::detect(root.path()).is_none(), "-1: no limit");
}
