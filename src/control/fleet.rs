//! The control loop's fleet mode, over state the daemons share ([`FleetState`]): every daemon
//! appends its interval's activity to it as one value; the holder of a lease merges what every
//! daemon appended into its own copy of the window ([`FleetWindow`]), scores, judges and
//! publishes the standings (with the features behind them) as one value; the others adopt it.
//! So a cycle is a few store calls whatever the number of subjects, and idle subjects cost none.

use super::flags::{Flag, FlagTracker};
use super::fleet_codec::{decode_standings, encode_activity, encode_standings};
use super::fleet_state::{Bucket, FleetState};
use super::fleet_window::FleetWindow;
use super::{CycleOutcome, on_blocking_thread};
use crate::clock::{Micros, micros};
use crate::engine::{StoreOutage, SubjectStanding};
use crate::features::{NewActivity, ObservedSubjects, SubjectFeatures};
use crate::limit::KeyHash;
use crate::policy::Policy;
use crate::store::StoreError;
use hashbrown::HashMap;
use prometheus::IntCounter;
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
    /// Counts failed cycles: decisions may all succeed while the loop's own calls fail (an ACL
    /// without one of its commands), and nothing else would show it.
    errors: IntCounter,
    /// The fleet's window as this daemon last read it; `None` unless it leads.
    window: Option<FleetWindow>,
    /// The last activity upload failed while the store answered the lease (an ACL without
    /// `RPUSH`, not an outage of the whole store), and none has been made since (an idle cycle
    /// makes none): until one works, a cycle without failures does not end the outage.
    upload_failing: bool,
    /// The store answered this cycle's lease call.
    lease_answered: bool,
}

/// What a failed activity upload is called in the outage's log line.
const UPLOAD: &str = "the control loop's activity upload";

impl FleetControl {
    pub fn new(fleet: Box<dyn FleetState>, outage: Arc<StoreOutage>, errors: IntCounter) -> Self {
        Self {
            fleet,
            outage,
            errors,
            id: format!("{:016x}", rand_id()),
            leader: false,
            generation: 0,
            window: None,
            upload_failing: false,
            lease_answered: false,
        }
    }

    pub fn is_leader(&self) -> bool {
        self.leader
    }

    /// Stops scoring for the fleet without a word to the store (no model: nothing to score);
    /// the lease expires by itself, and a later cycle takes the standings over again.
    pub fn step_down(&mut self) {
        self.leader = false;
        self.window = None;
        // The loop makes no store call now: a failure it met must not hold an outage open.
        self.upload_failing = false;
        self.outage.control_stopped();
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
                self.errors.inc();
                self.upload_failing |= during == UPLOAD && self.lease_answered;
                let on_error = policy.store.on_error;
                self.outage.failed(now, during, &error, on_error, None);
            }
            None => {
                // An idle cycle uploads nothing: it cannot tell that a failing upload works.
                self.upload_failing &= pending.is_empty();
                self.outage.control_answered(now, !self.upload_failing);
            }
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
        let len = FleetWindow::bucket_len(anomaly.window);
        let keep = anomaly.window + Duration::from_micros(len * 2);
        if let Err(error) = self.flush(now, len, keep, pending).await {
            failure.get_or_insert((UPLOAD, error));
        }
        let lease = (interval * 3).max(Duration::from_secs(1));
        let hold = micros(anomaly.hold);
        let lead = self.fleet.try_lead(&self.id, lease).await;
        self.lease_answered = lead.is_ok();
        self.leader = match lead {
            Ok(held) => held,
            Err(error) => {
                failure.get_or_insert(("the control loop's lease", error));
                return None;
            }
        };
        if !self.leader {
            self.window = None;
            return self
                .adopt(judge, hold, failure)
                .await
                .map(|(verdict, _)| verdict);
        }
        if self.window.is_none() {
            // Take over the flags (and their hold) of the previous leader, then read the whole
            // window once.
            let took_over = self.adopt(judge, hold, failure).await.is_some();
            let flags = judge.flags().len();
            if took_over {
                tracing::info!(
                    flags,
                    "control loop: this daemon now scores for the fleet, from the last standings"
                );
            } else {
                // Standings live lease + hold: after a longer gap without a leader, flags this
                // daemon never adopted lapsed with them, and no line tells their end.
                tracing::info!(
                    flags,
                    "control loop: this daemon now scores for the fleet; no standings to take \
                     over (none yet, or expired after a gap without a leader)"
                );
            }
        }
        if self
            .window
            .as_ref()
            .is_some_and(|w| w.length() != anomaly.window)
        {
            // A reload changed the window: start afresh on lists of the new bucket length.
            self.window = None;
        }
        let window = self
            .window
            .get_or_insert_with(|| FleetWindow::new(anomaly.window));
        let asked = window.buckets_to_read(now);
        let tails = match self.fleet.activity_since(&asked).await {
            Ok(tails) => tails,
            Err(error) => {
                failure.get_or_insert(("the control loop's activity read", error));
                return None;
            }
        };
        let observed = on_blocking_thread(|| {
            let refused = window.merge(&asked, tails);
            if refused > 0 {
                tracing::warn!("control loop: {refused} activity values not understood");
            }
            window.observed(now)
        });
        let mut verdict = decide(judge, observed);
        let lost_lease = self
            .publish(&verdict, judge, lease + anomaly.hold, now, failure)
            .await;
        if lost_lease {
            // The next leader judges these subjects from the standings it adopts, and tells
            // of their flags' starts and ends itself: told here too, they would be told twice.
            verdict.begun.clear();
            verdict.ended.clear();
        }
        Some(verdict)
    }

    /// Appends this interval's activity (only subjects with any) as one value; nothing when
    /// there is none.
    async fn flush(
        &self,
        now: Micros,
        len: Micros,
        keep: Duration,
        pending: &[(KeyHash, NewActivity)],
    ) -> Result<(), StoreError> {
        if pending.is_empty() {
            return Ok(());
        }
        let value = encode_activity(pending).map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let bucket = Bucket {
            len,
            index: now / len,
        };
        self.fleet.append_activity(bucket, &value, keep).await
    }

    /// Publishes the verdict as the next generation of standings, kept for `ttl`. Whether the
    /// lease was lost meanwhile (the standings were not published).
    async fn publish(
        &mut self,
        verdict: &CycleOutcome,
        judge: &FlagTracker,
        ttl: Duration,
        now: Micros,
        failure: &mut Failure,
    ) -> bool {
        self.generation = self.generation.saturating_add(1).max(now);
        let value = match encode_standings(verdict, judge) {
            Ok(value) => value,
            Err(error) => {
                let error = StoreError::Unavailable(error.to_string());
                failure.get_or_insert(("the control loop's standings upload", error));
                return false;
            }
        };
        match self
            .fleet
            .publish_standings(&self.id, self.generation, &value, ttl)
            .await
        {
            Ok(true) => false,
            Ok(false) => {
                tracing::info!(
                    "control loop: lost the lease while scoring; standings not published"
                );
                self.leader = false;
                self.window = None;
                true
            }
            Err(error) => {
                failure.get_or_insert(("the control loop's standings upload", error));
                false
            }
        }
    }

    /// Reads the leader's latest standings into a verdict, and its flags into `judge`.
    async fn adopt(
        &mut self,
        judge: &mut FlagTracker,
        hold: Micros,
        failure: &mut Failure,
    ) -> Option<(CycleOutcome, u64)> {
        let (generation, value) = match self.fleet.read_standings().await {
            Ok(Some(found)) => found,
            Ok(None) => return None,
            Err(error) => {
                failure.get_or_insert(("the control loop's standings read", error));
                return None;
            }
        };
        let entries = match decode_standings(&value) {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(%error, "control loop: standings not adopted");
                return None;
            }
        };
        let mut verdict = CycleOutcome {
            standings: HashMap::new(),
            scores: Vec::new(),
            observed: ObservedSubjects::default(),
            novel: Vec::new(),
            begun: Vec::new(),
            ended: Vec::new(),
        };
        let mut flags = Vec::new();
        let mut observed = Vec::with_capacity(entries.len());
        for (subject, parsed) in entries {
            observed.push((subject, parsed.observed));
            if let Some(score) = parsed.score {
                verdict.standings.insert(
                    subject,
                    SubjectStanding {
                        abuse_score: score,
                        held_until: parsed
                            .flagged_since
                            .map_or(0, |since| since.saturating_add(hold)),
                        novel: parsed.novel,
                    },
                );
            }
            if let (Some(since), Some(score)) = (parsed.flagged_since, parsed.score) {
                flags.push((subject, Flag { since, score }));
            }
        }
        judge.adopt(flags);
        verdict.observed = ObservedSubjects::new(observed);
        self.generation = self.generation.max(generation.saturating_add(1));
        Some((verdict, generation))
    }
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
