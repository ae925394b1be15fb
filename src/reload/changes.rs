//! What a reload changes that an operator must hear about, in plain words with old and new
//! values: store settings that wait for a restart (`store.on_error` does not: decisions read it
//! from the policy in force), and values set through the admin API that the file's replace.

use crate::engine::Thresholds;
use crate::store::StoreSettings;

/// Logs each store setting that changed: a warning for those the store was opened with (they
/// wait for a restart), an info line for `on_error` (in force at once).
pub(super) fn log_store_changes(old: &StoreSettings, new: &StoreSettings) {
    if old.on_error != new.on_error {
        tracing::info!(
            "store.on_error changed from {} to {}; in force now",
            old.on_error.label(),
            new.on_error.label()
        );
    }
    let waiting = [
        ("store.url", old.url.location(), new.url.location()),
        (
            "store.timeout",
            format!("{:?}", old.timeout),
            format!("{:?}", new.timeout),
        ),
        (
            "store.key_prefix",
            old.key_prefix.clone(),
            new.key_prefix.clone(),
        ),
        (
            "store.max_keys",
            old.max_keys.to_string(),
            new.max_keys.to_string(),
        ),
    ];
    for (key, was, now) in waiting {
        if was != now {
            tracing::warn!(
                "{key} changed from {was} to {now}; it takes effect at the next restart (the store in use stays)"
            );
        }
    }
    // The URL's credentials or database may change while its location does not: say so, as
    // "from X to X" reads as no change (the credentials are never logged).
    if old.url != new.url && old.url.location() == new.url.location() {
        tracing::warn!(
            "store.url changed its credentials or database for {}; it takes effect at the next restart (the store in use stays)",
            new.url.location()
        );
    }
}

/// The values set through the admin API (`live` differs from the file in force, `old_file`)
/// that the new file's values replace: (policy key, live value, new value).
pub(super) fn discarded_admin_changes(
    live: &Thresholds,
    old_file: &Thresholds,
    new_file: &Thresholds,
) -> Vec<(&'static str, String, String)> {
    let number = |x: f64| x.to_string();
    let override_factor = |x: Option<f64>| x.map_or("none".to_owned(), number);
    let fields = [
        (
            "adaptive.anomaly.threshold",
            number(live.anomaly_threshold),
            number(old_file.anomaly_threshold),
            number(new_file.anomaly_threshold),
        ),
        (
            "adaptive.anomaly.factor",
            number(live.anomaly_factor),
            number(old_file.anomaly_factor),
            number(new_file.anomaly_factor),
        ),
        (
            "adaptive.anomaly.shadow",
            live.anomaly_shadow.to_string(),
            old_file.anomaly_shadow.to_string(),
            new_file.anomaly_shadow.to_string(),
        ),
        (
            "adaptive.load.high",
            number(live.load_high),
            number(old_file.load_high),
            number(new_file.load_high),
        ),
        (
            "adaptive.load.low",
            number(live.load_low),
            number(old_file.load_low),
            number(new_file.load_low),
        ),
        (
            "adaptive.load.high_factor",
            number(live.load_high_factor),
            number(old_file.load_high_factor),
            number(new_file.load_high_factor),
        ),
        (
            "adaptive.load.low_factor",
            number(live.load_low_factor),
            number(old_file.load_low_factor),
            number(new_file.load_low_factor),
        ),
        (
            "adaptive.load.factor_override",
            override_factor(live.load_factor_override),
            override_factor(old_file.load_factor_override),
            override_factor(new_file.load_factor_override),
        ),
    ];
    fields
        .into_iter()
        .filter(|(_, live, old, new)| live != old && live != new)
        .map(|(key, live, _, new)| (key, live, new))
        .collect()
}

/// Warns once per value set through the admin API that a reload replaced.
pub(super) fn log_discarded_admin_changes(live: &Thresholds, old: &Thresholds, new: &Thresholds) {
    for (key, was, now) in discarded_admin_changes(live, old, new) {
        tracing::warn!(
            "the reload replaced a value set through the admin API: {key} was {was}, now {now} from the policy file"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::discarded_admin_changes;
    use crate::engine::Thresholds;

    fn file() -> Thresholds {
        Thresholds::default()
    }

    #[test]
    fn only_values_the_admin_api_set_and_the_file_replaces_are_named() {
        let live = Thresholds {
            anomaly_threshold: 0.6,
            load_factor_override: Some(0.5),
            anomaly_factor: 0.2,
            ..file()
        };
        // The new file takes the admin's anomaly factor over: nothing is lost there.
        let new = Thresholds {
            anomaly_factor: 0.2,
            ..file()
        };
        assert_eq!(
            discarded_admin_changes(&live, &file(), &new),
            [
                ("adaptive.anomaly.threshold", "0.6".into(), "0.8".into()),
                ("adaptive.load.factor_override", "0.5".into(), "none".into()),
            ]
        );
        assert!(discarded_admin_changes(&file(), &file(), &new).is_empty());
    }
}
