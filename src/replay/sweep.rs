//! `--sweep threshold=FROM:TO:STEP`: the threshold values to replay, and one row per value.

use super::summary::Summary;
use serde::Serialize;
use std::str::FromStr;

/// Values in a sweep at most (each is a whole replay).
pub const MAX_VALUES: usize = 200;

#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub values: Vec<f64>,
}

impl FromStr for Sweep {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let Some(range) = text.strip_prefix("threshold=") else {
            return Err(format!(
                "{text:?}: only threshold can be swept: threshold=FROM:TO:STEP (threshold=0.5:0.95:0.05)"
            ));
        };
        let parts: Vec<&str> = range.split(':').collect();
        let [from, to, step] = parts[..] else {
            return Err(format!("{text:?}: expected threshold=FROM:TO:STEP"));
        };
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("{text:?}: {what} {s:?} is not a number"))
        };
        let (from, to, step) = (
            number(from, "FROM")?,
            number(to, "TO")?,
            number(step, "STEP")?,
        );
        if !(0.0..=1.0).contains(&from) || !(0.0..=1.0).contains(&to) || from > to {
            return Err(format!("{text:?}: need 0 <= FROM <= TO <= 1"));
        }
        if step <= 0.0 {
            return Err(format!("{text:?}: STEP must be above 0"));
        }
        // Counted in floats: a step of 1e-20 makes more values than a usize holds.
        let count = ((to - from) / step + 1e-9).floor() + 1.0;
        if count > MAX_VALUES as f64 {
            return Err(format!("{text:?}: {count} values; at most {MAX_VALUES}"));
        }
        let count = count as usize;
        let values = (0..count)
            .map(|i| ((from + step * i as f64) * 1e9).round() / 1e9)
            .collect();
        Ok(Sweep { values })
    }
}

/// One sweep value's outcome (flagged subjects, anomaly denials, and with labels the
/// shares of abuse and normal requests denied and the normal subjects flagged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    pub threshold: f64,
    pub subjects_flagged: u64,
    pub anomaly_denied: u64,
    /// Share of abuse requests denied, for any reason (`None` without labels).
    pub abuse_denied_share: Option<f64>,
    pub normal_denied_share: Option<f64>,
    pub abuse_denied_anomaly_share: Option<f64>,
    pub normal_denied_anomaly_share: Option<f64>,
    pub normal_subjects_flagged: Option<u64>,
    pub abuse_subjects_flagged: Option<u64>,
}

impl SweepRow {
    pub fn of(summary: &Summary) -> Self {
        let labels = summary.labels.as_ref();
        SweepRow {
            threshold: summary.threshold,
            subjects_flagged: summary.subjects_flagged,
            anomaly_denied: summary.denied_by_reason.anomaly,
            abuse_denied_share: labels.map(|l| l.abuse_denied_share()),
            normal_denied_share: labels.map(|l| l.normal_denied_share()),
            abuse_denied_anomaly_share: labels
                .map(|l| super::summary::share(l.abuse_denied_anomaly, l.abuse_requests)),
            normal_denied_anomaly_share: labels
                .map(|l| super::summary::share(l.normal_denied_anomaly, l.normal_requests)),
            normal_subjects_flagged: labels.map(|l| l.normal_subjects_flagged),
            abuse_subjects_flagged: labels.map(|l| l.abuse_subjects_flagged),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let sweep: Sweep = "threshold=0.5:0.95:0.05".parse().unwrap();
        assert_eq!(sweep.values.len(), 10);
        assert_eq!(sweep.values[3], 0.65);
        assert_eq!(sweep.values[9], 0.95);
        assert!("limit=1:2:1".parse::<Sweep>().is_err());
        assert!("threshold=0.9:0.5:0.1".parse::<Sweep>().is_err());
        assert!("threshold=0:1:0".parse::<Sweep>().is_err());
        assert_eq!(
            "threshold=0:1:1e-20".parse::<Sweep>(),
            Err("\"threshold=0:1:1e-20\": 100000000000000000000 values; at most 200".into())
        );
    }
}
