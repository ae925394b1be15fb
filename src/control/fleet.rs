//! The control loop's fleet mode, over state the daemons share ([`FleetState`]): every daemon
//! adds its activity to it; the holder of a lease sums each subject's window, scores, judges
//! and publishes the standings (with the features behind them); the others adopt what it
//! published.

use super::flags::{Flag, FlagTracker};
use super::fleet_state::FleetState;
use super::{CycleOutcome, observe_totals};
use crate::clock::{Micros, micros};
use crate::engine::{StoreOutage, SubjectStanding};
use crate::features::window::{bucket_len, oldest_bucket};
use crate::features::{Features, NewActivity, SubjectFeatures};
use crate::limit::KeyHash;
use crate::policy::Policy;
use crate::store::StoreError;
use hashbrown::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The first store call of a cycle that failed: which one, and why.
type Failure = Option<(&'static str, StoreError)>;

pub struct FleetControl {
    fleet: Box<dyn FleetState>,
    /// This daemon's name in the lease: random per process.
    id: String,
    leader: bool,
    generation: u64,
    /// The engine's outage tracker: a failed cycle is part of the outage the request path sees.
    outage: Arc<StoreOutage>,
}

impl FleetControl {
    pub fn new(fleet: Box<dyn FleetState>, outage: Arc<StoreOutage>) -> Self {
        Self {
            fleet,
            outage,
            id: format!("{:016x}", rand_id()),
            leader: false,
            generation: 0,
        }
    }

    pub fn is_leader(&self) -> bool {
        self.leader
    }

    /// Stops scoring for the fleet without a word to the store (no model: nothing to score);
    /// the lease expires by itself, and a later cycle takes the standings over again.
    pub fn step_down(&mut self) {
        self.leader = false;
    }

    /// One cycle's shared part; `None` when the store failed (the last standings stay). A
    /// failed store call is reported to the outage tracker, a cycle without one ends an outage.
    pub async fn cycle(
        &mut self,
        policy: &Policy,
        now: Micros,
        pending: &[(KeyHash, NewActivity)],
        judge: &mut FlagTracker,
        decide: impl FnOnce(&mut FlagTracker, Vec<(KeyHash, SubjectFeatures)>) -> CycleOutcome,
    ) -> Option<CycleOutcome> {
        let mut failure = None;
        let outcome = self
            .shared_cycle(policy, now, pending, judge, decide, &mut failure)
            .await;
        match failure {
            Some((during, error)) => {
                tracing::debug!(%error, "control loop: {during} failed");
                let on_error = policy.store.on_error;
                self.outage.failed(now, during, &error, on_error, None);
            }
            None => self.outage.answered(|| now),
        }
        outcome
    }

    async fn shared_cycle(
        &mut self,
        policy: &Policy,
        now: Micros,
        pending: &[(KeyHash, NewActivity)],
        judge: &mut FlagTracker,
        decide: impl FnOnce(&mut FlagTracker, Vec<(KeyHash, SubjectFeatures)>) -> CycleOutcome,
        failure: &mut Failure,
    ) -> Option<CycleOutcome> {
        let anomaly = &policy.adaptive.anomaly;
        let interval = policy.adaptive.interval;
        let len = bucket_len(anomaly.window);
        let keep = anomaly.window + Duration::from_micros(len * 2);
        if let Err(error) = self.fleet.flush_activity(now, len, keep, pending).await {
            failure.get_or_insert(("the control loop's activity upload", error));
        }
        let lease = (interval * 3).max(Duration::from_secs(1));
        let hold = micros(anomaly.hold);
        let was_leader = self.leader;
        self.leader = match self.fleet.try_lead(&self.id, lease).await {
            Ok(held) => held,
            Err(error) => {
                failure.get_or_insert(("the control loop's lease", error));
                return None;
            }
        };
        if !self.leader {
            return self
                .adopt(judge, hold, failure)
                .await
                .map(|(verdict, _)| verdict);
        }
        if !was_leader {
            // Take over the flags (and their hold) of the previous leader.
            let _ = self.adopt(judge, hold, failure).await;
            tracing::info!("control loop: this daemon now scores for the fleet");
        }
        let since = now.saturating_sub(micros(anomaly.window) + len);
        let subjects = match self.fleet.active_subjects(since).await {
            Ok(subjects) => subjects,
            Err(error) => {
                failure.get_or_insert(("the control loop's subject list", error));
                return None;
            }
        };
        let totals = match self
            .fleet
            .window_totals(&subjects, oldest_bucket(now, len), now / len)
            .await
        {
            Ok(totals) => totals,
            Err(error) => {
                failure.get_or_insert(("the control loop's activity read", error));
                return None;
            }
        };
        let observed: Vec<(KeyHash, SubjectFeatures)> = subjects
            .into_iter()
            .zip(totals)
            .filter(|(_, t)| t.counts.requests > 0)
            .map(|(subject, t)| (subject, observe_totals(&t)))
            .collect();
        let verdict = decide(judge, observed);
        let ttl = lease + anomaly.hold;
        self.generation = (self.generation + 1).max(now);
        let entries = encode(&verdict, judge);
        match self
            .fleet
            .publish_standings(&self.id, self.generation, &entries, ttl, lease)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(
                    "control loop: lost the lease while scoring; standings not published"
                );
                self.leader = false;
            }
            Err(error) => {
                failure.get_or_insert(("the control loop's standings upload", error));
            }
        }
        Some(verdict)
    }

    /// Reads the leader's latest standings into a verdict, and its flags into `judge`.
    async fn adopt(
        &mut self,
        judge: &mut FlagTracker,
        hold: Micros,
        failure: &mut Failure,
    ) -> Option<(CycleOutcome, u64)> {
        let (generation, entries) = match self.fleet.read_standings().await {
            Ok(Some(found)) => found,
            Ok(None) => return None,
            Err(error) => {
                failure.get_or_insert(("the control loop's standings read", error));
                return None;
            }
        };
        let mut verdict = CycleOutcome {
            standings: HashMap::new(),
            scores: Vec::new(),
            observed: HashMap::with_capacity(entries.len()),
            novel: Vec::new(),
            begun: Vec::new(),
        };
        let mut flags = Vec::new();
        for (subject, entry) in entries {
            let Some(parsed) = decode(&entry) else {
                continue;
            };
            verdict.observed.insert(subject, parsed.observed);
            if let Some(score) = parsed.score {
                verdict.standings.insert(
                    subject,
                    SubjectStanding {
                        abuse_score: score,
                        held_until: parsed.flagged_since.map_or(0, |since| since + hold),
                        novel: parsed.novel,
                    },
                );
            }
            if let (Some(since), Some(score)) = (parsed.flagged_since, parsed.score) {
                flags.push((subject, Flag { since, score }));
            }
        }
        judge.adopt(flags);
        self.generation = self.generation.max(generation + 1);
        Some((verdict, generation))
    }
}

struct Entry {
    score: Option<f64>,
    flagged_since: Option<Micros>,
    novel: bool,
    observed: SubjectFeatures,
}

/// `score,flagged_since,novel,requests,feature...` (`-` for no score, 0 for not flagged,
/// `novel` 1 for a novel subject whose score alone flags nothing).
fn encode(verdict: &CycleOutcome, judge: &FlagTracker) -> Vec<(KeyHash, String)> {
    let mut entries = Vec::with_capacity(verdict.observed.len() + verdict.standings.len());
    let mut write = |subject: KeyHash, observed: SubjectFeatures| {
        let standing = verdict.standings.get(&subject);
        let score = standing.map_or_else(|| "-".to_owned(), |s| s.abuse_score.to_string());
        let since = match (standing, judge.flag(subject)) {
            (Some(s), Some(flag)) if s.held_until > 0 => flag.since,
            _ => 0,
        };
        let novel = u8::from(standing.is_some_and(|s| s.novel));
        let mut text = format!("{score},{since},{novel},{}", observed.requests);
        for value in observed.features.to_array() {
            text.push(',');
            text.push_str(&value.to_string());
        }
        entries.push((subject, text));
    };
    for (subject, observed) in &verdict.observed {
        write(*subject, *observed);
    }
    for subject in verdict.standings.keys() {
        if !verdict.observed.contains_key(subject) {
            write(*subject, SubjectFeatures::default());
        }
    }
    entries
}

fn decode(entry: &str) -> Option<Entry> {
    let mut parts = entry.split(',');
    let score = match parts.next()? {
        "-" => None,
        s => Some(s.parse::<f64>().ok()?),
    };
    let since: Micros = parts.next()?.parse().ok()?;
    let novel = parts.next()? == "1";
    let requests: u64 = parts.next()?.parse().ok()?;
    let values: Vec<f64> = parts.map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let features = Features::from_slice(&values)?;
    Some(Entry {
        score,
        flagged_since: (since > 0).then_some(since),
        novel,
        observed: SubjectFeatures { features, requests },
    })
}

fn rand_id() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return u64::from(std::process::id())
            ^ (std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64));
    }
    u64::from_le_bytes(bytes)
}
