//! The start-up line: what this daemon runs with, in one place, so that an operator can tell
//! from the log why limits are what they are (a busy host's load factor, a model not loaded).

use super::ServeArgs;
use crate::control::ModelSlot;
use crate::policy::{LoadSource, Policy};

/// Where the load factor comes from, in the order that decides it; `cpu` is what the CPU
/// sampler reads (the cgroup's quota or the host).
pub(super) fn load_source(args: &ServeArgs, policy: &Policy, cpu: &str) -> (String, f64) {
    // The override (the policy's, or later the admin API's) wins over the flag: the engine
    // applies it over whatever factor the control loop sets.
    match (policy.adaptive.load.factor_override, args.pin_load_factor) {
        (Some(pinned), None) => ("pinned by adaptive.load.factor_override".to_owned(), pinned),
        (Some(pinned), Some(flag)) => (
            format!("pinned by adaptive.load.factor_override (over --pin-load-factor {flag})"),
            pinned,
        ),
        (None, Some(pinned)) => ("pinned by --pin-load-factor".to_owned(), pinned),
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

/// Logs the start-up line, after a warning for each load factor on the wrong side of 1: store
/// (scheme and hosts, never credentials), `on_error`, the model and its version, the load source
/// and factor, and whether the admin API is on.
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
    for warning in policy.warnings() {
        tracing::warn!("{warning}");
    }
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

#[cfg(test)]
mod tests {
    use super::{ServeArgs, load_source};
    use crate::policy::Policy;
    use clap::Parser;
    use std::path::Path;

    /// `serve`'s flags alone (the daemon does not import the CLI above it).
    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn serve_args(flags: &[&str]) -> ServeArgs {
        let argv = ["serve"].iter().chain(flags);
        Serve::try_parse_from(argv)
            .expect("serve's flags parse")
            .args
    }

    #[test]
    fn the_policy_override_is_named_over_the_pin_flag() {
        let yaml = "default_tier: free\n\
                    tiers: { free: { limits: [ { name: h, algorithm: fixed_window, requests: 5, window: 1m } ] } }\n\
                    adaptive: { load: { factor_override: 0.5 } }\n";
        let policy = Policy::from_yaml(yaml, Path::new(".")).expect("valid");
        let pinned = serve_args(&["--pin-load-factor", "1"]);
        assert_eq!(
            load_source(&pinned, &policy, "cpu"),
            (
                "pinned by adaptive.load.factor_override (over --pin-load-factor 1)".to_owned(),
                0.5
            )
        );
        assert_eq!(
            load_source(&serve_args(&[]), &policy, "cpu").0,
            "pinned by adaptive.load.factor_override"
        );
    }

    #[test]
    fn an_empty_hash_key_is_refused_not_read_as_unset() {
        let refused = Serve::try_parse_from(["serve", "--hash-key", ""])
            .err()
            .expect("an empty hash key is refused");
        assert!(
            refused.to_string().contains(
                "the hash key (--hash-key, RATEWARDEN_HASH_KEY) is empty: set a secret, or leave it unset"
            ),
            "{refused}"
        );
        assert_eq!(
            serve_args(&["--hash-key", " "]).hash_key.as_deref(),
            Some(" ")
        );
    }
}
