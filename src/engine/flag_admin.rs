//! The admin's security workflow on the engine: the subjects flagged now, clearing a flag,
//! and allowlisting a subject for a stated time. Each action leaves an `audit` log line.

use super::Engine;
use super::exemptions::Exemption;
use crate::clock::{Micros, micros};
use crate::features::SubjectFeatures;
use crate::limit::KeyHash;
use crate::store::Store;
use std::time::Duration;

/// A subject flagged now.
#[derive(Debug, Clone)]
pub struct FlaggedSubject {
    pub subject: KeyHash,
    pub abuse_score: f64,
    /// When its flag began (`None` when the control loop has not said yet).
    pub since: Option<Micros>,
    /// The end of its flag's `hold`; after it the flag ends at the first score below the
    /// threshold.
    pub held_until: Micros,
    /// Its features at the last control cycle.
    pub observed: Option<SubjectFeatures>,
}

impl<S: Store> Engine<S> {
    /// The subject hash a user id is known by.
    pub fn subject_of(&self, user: &str) -> KeyHash {
        self.hasher.user(user)
    }

    /// Every subject flagged now (allowlisted and cleared ones left out), highest score first.
    pub fn flagged_subjects(&self) -> Vec<FlaggedSubject> {
        let now = self.clock.now();
        let threshold = self.scale.thresholds().anomaly_threshold;
        let exemptions = self.scale.exemptions();
        let mut flagged: Vec<FlaggedSubject> = self
            .scale
            .standings()
            .iter()
            .filter(|(s, standing)| {
                standing.flagged(threshold, now) && !exemptions.is_exempt(**s, now)
            })
            .map(|(s, standing)| FlaggedSubject {
                subject: *s,
                abuse_score: standing.abuse_score,
                since: exemptions.flag_start(*s),
                held_until: standing.held_until,
                observed: self.scale.observed(*s),
            })
            .collect();
        flagged.sort_by(|a, b| {
            b.abuse_score
                .total_cmp(&a.abuse_score)
                .then(a.subject.0.cmp(&b.subject.0))
        });
        flagged
    }

    /// Clears `subject`'s flag and its hold now; the next control cycle judges it afresh (a
    /// score still at or over the threshold flags it again). Whether it was flagged.
    pub fn clear_flag(&self, subject: KeyHash) -> bool {
        let now = self.clock.now();
        let threshold = self.scale.thresholds().anomaly_threshold;
        let standing = self.scale.standing(subject);
        let was_flagged = standing.is_some_and(|s| s.flagged(threshold, now))
            && !self.scale.exemptions().is_exempt(subject, now);
        if was_flagged {
            self.scale.exemptions().set(subject, Exemption::Cleared);
        }
        tracing::info!(
            target: "audit",
            action = "clear_flag",
            %subject,
            was_flagged,
            abuse_score = standing.map(|s| s.abuse_score),
            "admin cleared the flag of subject {subject}{}",
            if was_flagged { "" } else { " (it was not flagged)" }
        );
        was_flagged
    }

    /// Allowlists `subject` for `ttl`: never flagged, so never scaled for anomaly, until then.
    /// The end, in engine time.
    pub fn allowlist(&self, subject: KeyHash, ttl: Duration) -> Micros {
        let until = self.clock.now().saturating_add(micros(ttl));
        self.scale
            .exemptions()
            .set(subject, Exemption::Until(until));
        tracing::info!(
            target: "audit",
            action = "allowlist",
            %subject,
            ttl_s = ttl.as_secs(),
            "admin allowlisted subject {subject} for {} s",
            ttl.as_secs()
        );
        until
    }

    /// Ends `subject`'s allowlisting; whether one was in force (a pending clear stays).
    pub fn remove_from_allowlist(&self, subject: KeyHash) -> bool {
        let had = self
            .scale
            .exemptions()
            .remove_allowlisting(subject, self.clock.now());
        tracing::info!(
            target: "audit",
            action = "remove_from_allowlist",
            %subject,
            was_allowlisted = had,
            "admin removed subject {subject} from the allowlist{}",
            if had { "" } else { " (it was not on it)" }
        );
        had
    }

    /// Until when `subject` is allowlisted, if it is now.
    pub fn allowlisted_until(&self, subject: KeyHash) -> Option<Micros> {
        match self.scale.exemptions().get(subject) {
            Some(Exemption::Until(until)) if until > self.clock.now() => Some(until),
            _ => None,
        }
    }
}
