//! Policy durations: a whole number and one unit, `500ms`, `30s`, `5m`, `1h`, `1d`.

use std::time::Duration;

/// Parses a policy duration, explaining what is wrong otherwise.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let explain = || {
        format!(
            "invalid duration \"{text}\": expected a whole number followed by ms, s, m, h or d (e.g. 30s)"
        )
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(explain)?;
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| explain())?;
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(explain()),
    };
    n.checked_mul(unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("duration \"{text}\" is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
    }

    #[test]
    fn refuses_what_is_not_a_duration() {
        for bad in ["", "5", "m", "5x", "1.5h", "-1s", "5 m", "1h30m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
