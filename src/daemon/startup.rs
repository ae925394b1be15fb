//! The start-up line: what this daemon runs with, in one place, so that an operator can tell
//! from the log why limits are what they are (a busy host's load factor, a model not loaded).

use super::ServeArgs;
use crate::control::ModelSlot;
use crate::policy::{LoadSource, Policy};

/// Where the load factor comes from, in the order that decides it; `cpu` is what the CPU
/// sampler reads (the cgroup's quota or the host).
pub(super) fn load_source(args: &ServeArgs, policy: &Policy, cpu: &str) -> (String, f64) {
    match (args.pin_load_factor, policy.adaptive.load.factor_override) {
        (Some(pinned), _) => ("pinned by --pin-load-factor".to_owned(), pinned),
        (None, Some(pinned)) => ("pinned by adaptive.load.factor_override".to_owned(), pinned),
        (None, None) => (measured_by(&policy.adaptive.load.source, cpu), 1.0),
    }
}

fn measured_by(source: &LoadSource, cpu: &str) -> String {
    match source {
        LoadSource::Cpu => cpu.to_owned(),
        LoadSource::Upstream(t) => format!(
            "upstream reports (p{} latency target {:?}, 5xx share target {})",
            t.percentile * 100.0,
            t.latency_target,
            t.error_target
        ),
        // The URL names host and path only (a policy holds no credentials in it: no `@`).
        LoadSource::Prometheus(q) => format!("the Prometheus query at {}", q.url),
    }
}

/// Logs the one start-up line: store (scheme and hosts, never credentials), `on_error`, the
/// model and its version, the load source and factor, and whether the admin API is on.
pub(super) fn log(policy: &Policy, model: &ModelSlot, load: (String, f64), admin_api: bool) {
    let path = model.path();
    let model_path = path
        .as_deref()
        .map_or("none".to_owned(), |p| p.display().to_string());
    let model_version = match (model.get(), &path) {
        (Some(model), _) => model.version().to_owned(),
        (None, Some(_)) => "none (not loaded; see the error above)".to_owned(),
        (None, None) => "none".to_owned(),
    };
    let (load_source, load_factor) = load;
    let load = &policy.adaptive.load;
    tracing::info!(
        store = %policy.store.url.location(),
        on_error = %policy.store.on_error.label(),
        model = %model_path,
        model_version = %model_version,
        load_source = %load_source,
        load_factor = %load_factor,
        load_high = load.high,
        load_high_factor = load.high_factor,
        load_low = load.low,
        load_low_factor = load.low_factor,
        admin_api = %if admin_api { "on" } else { "off" },
        "starting"
    );
}
