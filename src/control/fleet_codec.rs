//! The fleet's values in the shared store, each one compact CBOR array whatever the number of
//! subjects: a daemon's activity of one interval, and the leader's standings.
//!
//! Entries are CBOR arrays (tuple structs), not maps, so no field name is repeated per subject:
//! an activity entry takes about 40 bytes plus 9 per endpoint or address hash, a standing about
//! 130. Subjects, endpoints and addresses are keyed hashes already: no raw id is written.

use super::CycleOutcome;
use super::flags::FlagTracker;
use crate::clock::Micros;
use crate::features::{Counters, Features, NewActivity, SubjectFeatures};
use crate::limit::KeyHash;
use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("could not encode a fleet value: {0}")]
    Encode(String),
    #[error("a fleet value in the store is not one this version reads: {0}")]
    Decode(String),
}

/// A subject's keyed hash as two CBOR integers.
fn split(subject: KeyHash) -> (u64, u64) {
    ((subject.0 >> 64) as u64, subject.0 as u64)
}

fn join(high: u64, low: u64) -> KeyHash {
    KeyHash((u128::from(high) << 64) | u128::from(low))
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    let mut bytes = Vec::new();
    ciborium::into_writer(value, &mut bytes).map_err(|e| CodecError::Encode(e.to_string()))?;
    Ok(bytes)
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, CodecError> {
    ciborium::from_reader(bytes).map_err(|e| CodecError::Decode(e.to_string()))
}

/// [`Counters`] in field order. `overflow_sum` and then `longest_gap` came last and read 0
/// from a daemon of an earlier build, so its activity still counts during a rolling upgrade.
#[derive(Serialize, Deserialize)]
struct CountersWire(
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    f64,
    u64,
    u64,
    u64,
    f64,
    f64,
    #[serde(default)] f64,
    #[serde(default)] f64,
);

impl From<&Counters> for CountersWire {
    fn from(c: &Counters) -> Self {
        Self(
            c.requests,
            c.denied,
            c.reports,
            c.client_errors,
            c.auth_failures,
            c.not_found,
            f64::from(c.usage_sum),
            c.first,
            c.last,
            c.gaps,
            c.gap_sum,
            c.gap_sum_sq,
            f64::from(c.overflow_sum),
            c.longest_gap,
        )
    }
}

impl From<CountersWire> for Counters {
    fn from(w: CountersWire) -> Self {
        Self {
            requests: w.0,
            denied: w.1,
            reports: w.2,
            client_errors: w.3,
            auth_failures: w.4,
            not_found: w.5,
            usage_sum: w.6 as f32,
            first: w.7,
            last: w.8,
            gaps: w.9,
            gap_sum: w.10,
            gap_sum_sq: w.11,
            overflow_sum: w.12 as f32,
            longest_gap: w.13,
        }
    }
}

#[derive(Serialize)]
struct ActivityOut<'a>(u64, u64, CountersWire, &'a [u64], &'a [u64]);

#[derive(Deserialize)]
struct ActivityIn(u64, u64, CountersWire, Vec<u64>, Vec<u64>);

/// One daemon's interval: every subject with new activity, its counts and the hashes of the
/// endpoints and addresses it used.
pub fn encode_activity(items: &[(KeyHash, NewActivity)]) -> Result<Vec<u8>, CodecError> {
    let wire: Vec<ActivityOut<'_>> = items
        .iter()
        .map(|(subject, activity)| {
            let (high, low) = split(*subject);
            ActivityOut(
                high,
                low,
                CountersWire::from(&activity.counters),
                &activity.endpoints,
                &activity.ips,
            )
        })
        .collect();
    encode(&wire)
}

pub fn decode_activity(bytes: &[u8]) -> Result<Vec<(KeyHash, NewActivity)>, CodecError> {
    let wire: Vec<ActivityIn> = decode(bytes)?;
    Ok(wire
        .into_iter()
        .map(|ActivityIn(high, low, counters, endpoints, ips)| {
            let activity = NewActivity {
                counters: counters.into(),
                endpoints: endpoints.into_iter().collect(),
                ips: ips.into_iter().collect(),
            };
            (join(high, low), activity)
        })
        .collect())
}

/// One subject's published standing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    pub score: Option<f64>,
    pub flagged_since: Option<Micros>,
    /// A novel subject, whose score alone flags nothing.
    pub novel: bool,
    pub observed: SubjectFeatures,
}

/// Subject, score, flagged since (0: not flagged), novel, requests, features. The features
/// are a list of any length: a leader of a build with other features (a rolling upgrade)
/// still hands over its scores and flags.
#[derive(Serialize, Deserialize)]
struct StandingWire(u64, u64, Option<f64>, Micros, bool, u64, Vec<f64>);

/// The leader's verdict: every observed subject, and every subject with a standing (a held
/// flag outlives the subject's activity).
pub fn encode_standings(
    verdict: &CycleOutcome,
    judge: &FlagTracker,
) -> Result<Vec<u8>, CodecError> {
    let wire_of = |subject: KeyHash, observed: &SubjectFeatures| {
        let standing = verdict.standings.get(&subject);
        let since = match (standing, judge.flag(subject)) {
            (Some(s), Some(flag)) if s.held_until > 0 => flag.since,
            _ => 0,
        };
        let (high, low) = split(subject);
        StandingWire(
            high,
            low,
            standing.map(|s| s.abuse_score),
            since,
            standing.is_some_and(|s| s.novel),
            observed.requests,
            observed.features.to_array().to_vec(),
        )
    };
    let unobserved = SubjectFeatures::default();
    let wire: Vec<StandingWire> = verdict
        .observed
        .iter()
        .map(|(subject, observed)| wire_of(*subject, observed))
        .chain(
            // Only a held flag has a standing without features (every scored subject was
            // observed), so only held ones are searched for.
            verdict
                .standings
                .iter()
                .filter(|(subject, standing)| {
                    standing.held_until > 0 && !verdict.observed.contains_key(subject)
                })
                .map(|(subject, _)| wire_of(*subject, &unobserved)),
        )
        .collect();
    encode(&wire)
}

pub fn decode_standings(bytes: &[u8]) -> Result<Vec<(KeyHash, Entry)>, CodecError> {
    let wire: Vec<StandingWire> = decode(bytes)?;
    Ok(wire
        .into_iter()
        .map(
            |StandingWire(high, low, score, since, novel, requests, values)| {
                // Features of another build are not this build's: shown as none, verdict kept.
                let features = Features::from_slice(&values).unwrap_or_default();
                let entry = Entry {
                    score,
                    flagged_since: (since > 0).then_some(since),
                    novel,
                    observed: SubjectFeatures { features, requests },
                };
                (join(high, low), entry)
            },
        )
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::LimitOutcome;

    #[test]
    fn activity_comes_back_as_it_was_flushed() {
        let mut activity = NewActivity::default();
        activity.counters.record_request(
            1_000,
            Some(500),
            LimitOutcome {
                denied: true,
                usage: 0.25,
                overflow: 0.01,
            },
        );
        activity.counters.record_status(404);
        activity.endpoints.extend([1, u64::MAX]);
        activity.ips.push(7);
        let idle_reporter = NewActivity::default();
        let items = vec![
            (KeyHash(u128::MAX - 5), activity),
            (KeyHash(3), idle_reporter),
        ];
        let bytes = encode_activity(&items).unwrap();
        assert_eq!(decode_activity(&bytes).unwrap(), items);
    }

    #[test]
    fn activity_of_a_build_without_overflow_or_longest_gap_counts_with_none() {
        type OlderCounters = (u64, u64, u64, u64, u64, u64, f64, u64, u64, u64, f64, f64);
        type OlderActivity = (u64, u64, OlderCounters, Vec<u64>, Vec<u64>);
        let older: Vec<OlderActivity> = vec![(
            0,
            9,
            (4, 2, 0, 0, 0, 0, 3.5, 10, 20, 3, 1.0, 0.5),
            vec![1],
            vec![],
        )];
        let bytes = encode(&older).unwrap();
        let decoded = decode_activity(&bytes).unwrap();
        let counters = decoded[0].1.counters;
        assert_eq!(
            (counters.requests, counters.denied, counters.usage_sum),
            (4, 2, 3.5)
        );
        assert_eq!(counters.overflow_sum, 0.0);
        // Nor the longest gap: nothing is left out of that daemon's gaps.
        assert_eq!(counters.longest_gap, 0.0);
    }

    #[test]
    fn a_value_of_another_format_is_refused_not_misread() {
        let error = decode_activity(b"1,2,3").unwrap_err();
        assert!(matches!(error, CodecError::Decode(_)), "{error}");
        assert!(decode_standings(&[0x83, 1, 2, 3]).is_err());
    }

    #[test]
    fn a_leader_of_another_feature_set_still_hands_over_its_scores_and_flags() {
        // A standing as a build with eight features wrote it.
        let older = vec![StandingWire(
            1,
            2,
            Some(0.97),
            5_000,
            false,
            40,
            vec![0.5; 8],
        )];
        let entries = decode_standings(&encode(&older).unwrap()).unwrap();
        let (subject, entry) = entries[0];
        assert_eq!(subject, join(1, 2));
        assert_eq!(
            (entry.score, entry.flagged_since, entry.observed.requests),
            (Some(0.97), Some(5_000), 40)
        );
        assert_eq!(entry.observed.features, Features::default());
    }
}
