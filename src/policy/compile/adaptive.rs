//! Compiling the `adaptive` section: the control interval, load shedding and anomaly scaling.
//!
//! Every value here has a default, so an absent section or field compiles to the documented
//! behaviour; only values out of range are errors.

use super::MAX_COUNT;
use super::load_source::{RawSource, load_source};
use crate::policy::raw::{RawAdaptive, RawAnomaly, RawLoad};
use crate::policy::{Adaptive, AnomalySettings, LoadSettings};
use crate::yaml::Leaf;
use crate::yaml::fields::Errors;
use std::num::NonZeroU64;
use std::path::Path;
use std::time::Duration;

/// The shortest control-loop period: CPU load measured over less is noise (sysinfo needs
/// about 200 ms between samples), a cycle over many subjects takes tens of milliseconds, and
/// a Prometheus query gets at most half the period.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

pub(super) fn adaptive(e: &mut Errors, base_dir: &Path, raw: RawAdaptive) -> Adaptive {
    e.unknown_keys("adaptive", &raw.unknown, &["interval", "load", "anomaly"]);
    let mut interval = e.duration(
        "adaptive.interval",
        &raw.interval,
        Duration::from_secs(1),
        false,
    );
    if interval < MIN_INTERVAL {
        e.push(
            "adaptive.interval",
            format!("must be at least {}ms", MIN_INTERVAL.as_millis()),
        );
        interval = MIN_INTERVAL;
    }
    Adaptive {
        interval,
        load: load(e, raw.load.unwrap_or_default(), interval),
        anomaly: anomaly(e, base_dir, raw.anomaly.unwrap_or_default()),
    }
}

/// Either load factor is in (0, 10], as the policy format states. One on the wrong side of 1 is
/// accepted and warned about ([`LoadSettings::inverted_factors`]).
fn factor(x: f64) -> Option<&'static str> {
    (!(x > 0.0 && x <= 10.0)).then_some("must be greater than 0 and at most 10")
}

fn unit_interval(x: f64) -> Option<&'static str> {
    (!(0.0..=1.0).contains(&x)).then_some("must be between 0 and 1")
}

fn load(e: &mut Errors, raw: RawLoad, interval: Duration) -> LoadSettings {
    e.unknown_keys(
        "adaptive.load",
        &raw.unknown,
        &[
            "high",
            "low",
            "high_factor",
            "low_factor",
            "smoothing",
            "factor_override",
            "source",
            "upstream",
            "prometheus",
        ],
    );
    let source = load_source(
        e,
        RawSource {
            path: "adaptive.load",
            source: &raw.source,
            upstream: raw.upstream.as_ref(),
            prometheus: raw.prometheus.as_ref(),
        },
        interval,
    );
    let before = e.len();
    let high = e.number("adaptive.load.high", &raw.high, 0.8, unit_interval);
    let low = e.number("adaptive.load.low", &raw.low, 0.3, unit_interval);
    // Compared only when both were accepted: a refused one stands in as its default.
    if e.len() == before && low >= high {
        // Name the default of the one the file leaves out: it is the key it did not write.
        let absent = |leaf: &Leaf| matches!(leaf, None | Some(serde_yaml_ng::Value::Null));
        let message = match (absent(&raw.low), absent(&raw.high)) {
            (true, _) => format!(
                "is 0.3 when not given, which is not below adaptive.load.high ({high}): set a lower \
                 adaptive.load.low"
            ),
            (false, true) => format!(
                "must be below adaptive.load.high, which is 0.8 when not given ({low} is not)"
            ),
            (false, false) => format!("must be below adaptive.load.high ({high})"),
        };
        e.push("adaptive.load.low", message);
    }
    LoadSettings {
        source,
        high,
        low,
        high_factor: e.number("adaptive.load.high_factor", &raw.high_factor, 0.5, factor),
        low_factor: e.number("adaptive.load.low_factor", &raw.low_factor, 1.5, factor),
        smoothing: e.number("adaptive.load.smoothing", &raw.smoothing, 0.3, |x| {
            (!(x > 0.0 && x <= 1.0)).then_some("must be greater than 0 and at most 1")
        }),
        factor_override: match raw.factor_override {
            None | Some(serde_yaml_ng::Value::Null) => None,
            ref leaf => Some(e.number("adaptive.load.factor_override", leaf, 1.0, |x| {
                (!(0.0..=10.0).contains(&x)).then_some("must be between 0 and 10")
            })),
        },
    }
}

fn anomaly(e: &mut Errors, base_dir: &Path, raw: RawAnomaly) -> AnomalySettings {
    e.unknown_keys(
        "adaptive.anomaly",
        &raw.unknown,
        &[
            "model",
            "threshold",
            "factor",
            "window",
            "min_requests",
            "hold",
            "shadow",
        ],
    );
    let model = raw
        .model
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.string("adaptive.anomaly.model", v))
        .map(|m| base_dir.join(m));
    let min_requests = raw
        .min_requests
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(|v| e.count("adaptive.anomaly.min_requests", v, 1, MAX_COUNT))
        .unwrap_or(20);
    AnomalySettings {
        model,
        threshold: e.number(
            "adaptive.anomaly.threshold",
            &raw.threshold,
            0.8,
            unit_interval,
        ),
        factor: e.number("adaptive.anomaly.factor", &raw.factor, 0.1, unit_interval),
        window: e.duration(
            "adaptive.anomaly.window",
            &raw.window,
            Duration::from_secs(1800),
            false,
        ),
        min_requests: NonZeroU64::new(min_requests).unwrap_or(NonZeroU64::MIN),
        hold: e.duration(
            "adaptive.anomaly.hold",
            &raw.hold,
            Duration::from_secs(300),
            true,
        ),
        shadow: e.boolean("adaptive.anomaly.shadow", &raw.shadow, false),
    }
}
