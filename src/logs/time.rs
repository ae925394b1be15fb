//! Log timestamps to microseconds since the epoch: the combined log's `10/Oct/2000:13:55:36
//! -0700` (optionally with fractional seconds) and RFC 3339 (`2026-11-22T08:00:00.250Z`).

use crate::clock::Micros;
use chrono::DateTime;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("{0}")]
    Format(String),
    #[error("before 1970 or after 2255")]
    OutOfRange,
}

/// `dd/Mon/yyyy:HH:MM:SS[.fff] ±hhmm`.
pub fn parse_clf_time(text: &str) -> Result<Micros, TimeError> {
    let parsed = DateTime::parse_from_str(text, "%d/%b/%Y:%H:%M:%S%.f %z").map_err(|e| {
        TimeError::Format(format!("{e} (expected like 10/Oct/2000:13:55:36 -0700)"))
    })?;
    to_micros(parsed.timestamp_micros())
}

/// RFC 3339, with a UTC offset or `Z`.
pub fn parse_rfc3339(text: &str) -> Result<Micros, TimeError> {
    if !text.is_empty() && text.trim().parse::<f64>().is_ok() {
        return Err(TimeError::Format(format!(
            "{text:?} is a number in a string: seconds since the epoch are a JSON number, \
             a string is an RFC 3339 time"
        )));
    }
    let parsed = DateTime::parse_from_rfc3339(text)
        .map_err(|e| TimeError::Format(format!("{e} (expected RFC 3339)")))?;
    to_micros(parsed.timestamp_micros())
}

/// Seconds since the epoch (a JSON number).
pub fn from_seconds(seconds: f64) -> Result<Micros, TimeError> {
    if !seconds.is_finite() {
        return Err(TimeError::Format("not a finite number".into()));
    }
    let micros = (seconds * 1e6).round();
    if !(0.0..=MAX_MICROS as f64).contains(&micros) {
        return Err(TimeError::OutOfRange);
    }
    Ok(micros as Micros)
}

/// Below 2^53 (the year 2255): exact in Redis's Lua doubles, like every time in ratewarden.
const MAX_MICROS: Micros = (1 << 53) - 1;

fn to_micros(micros: i64) -> Result<Micros, TimeError> {
    Micros::try_from(micros)
        .ok()
        .filter(|m| *m <= MAX_MICROS)
        .ok_or(TimeError::OutOfRange)
}

/// RFC 3339 in UTC with milliseconds, for reports.
pub fn format_rfc3339(at: Micros) -> String {
    i64::try_from(at)
        .ok()
        .and_then(DateTime::from_timestamp_micros)
        .map_or_else(
            || at.to_string(),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_and_rfc3339_agree() {
        let clf = parse_clf_time("22/Nov/2026:09:00:00 +0100").unwrap();
        let rfc = parse_rfc3339("2026-11-22T08:00:00Z").unwrap();
        assert_eq!(clf, rfc);
        assert_eq!(
            parse_clf_time("22/Nov/2026:08:00:00.250 +0000").unwrap(),
            rfc + 250_000
        );
        assert_eq!(format_rfc3339(rfc + 250_000), "2026-11-22T08:00:00.250Z");
        assert!(parse_clf_time("22/Nov/2026:08:00:00").is_err());
        assert!(parse_clf_time("31/Feb/2026:08:00:00 +0000").is_err());
        assert!(from_seconds(-1.0).is_err());
    }
}
