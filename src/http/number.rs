//! A JSON number judged by the field that reads it.
//!
//! serde's own words for an integer past `i64` or a fraction ("invalid type: floating point
//! `1e+23`, expected an integer") name a type the client did send, a number, and not the
//! range the field takes; a field read as a [`serde_json::Number`] can say "must be between 1
//! and 1000000 (it is 1e23)" instead.

use serde_json::Number;
use std::ops::RangeInclusive;

/// Why a number is not one a field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotInRange {
    /// A whole number outside the range (however large: past `u64` too).
    OutOfRange,
    /// A fraction (`2.5`); a whole number written as a decimal (`1000.0`, `1e3`) is whole.
    NotWhole,
}

/// `number` as a whole number within `range`.
pub fn whole_in(number: &Number, range: RangeInclusive<u64>) -> Result<u64, NotInRange> {
    if let Some(n) = number.as_u64() {
        return range
            .contains(&n)
            .then_some(n)
            .ok_or(NotInRange::OutOfRange);
    }
    if number.is_i64() {
        return Err(NotInRange::OutOfRange); // negative
    }
    let value = number.as_f64().unwrap_or(f64::NAN);
    if value.fract() != 0.0 {
        return Err(NotInRange::NotWhole);
    }
    // A whole f64 within the range is exact (the ranges here are far below 2^53).
    let (low, high) = (*range.start() as f64, *range.end() as f64);
    if (low..=high).contains(&value) {
        Ok(value as u64)
    } else {
        Err(NotInRange::OutOfRange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(json: &str) -> Result<u64, NotInRange> {
        whole_in(
            &serde_json::from_str(json).expect("a JSON number"),
            1..=1_000_000,
        )
    }

    #[test]
    fn whole_numbers_in_range_pass_however_written() {
        assert_eq!(judge("1"), Ok(1));
        assert_eq!(judge("1000000"), Ok(1_000_000));
        assert_eq!(judge("1e3"), Ok(1000));
        assert_eq!(judge("7.0"), Ok(7));
    }

    #[test]
    fn the_edges_and_beyond_every_integer_type_are_out_of_range() {
        for json in [
            "0",
            "-1",
            "1000001",
            "9223372036854775808",
            "18446744073709551616",
            "-9223372036854775809",
            "1e23",
            "-0.0",
        ] {
            assert_eq!(judge(json), Err(NotInRange::OutOfRange), "{json}");
        }
    }

    #[test]
    fn fractions_are_not_whole() {
        for json in ["2.5", "0.5", "1e-3", "-2.5", "1e6"] {
            let expected = if json == "1e6" {
                Ok(1_000_000)
            } else {
                Err(NotInRange::NotWhole)
            };
            assert_eq!(judge(json), expected, "{json}");
        }
    }
}
