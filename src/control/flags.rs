//! From scores to standings: who is flagged, with the `hold` rule (a flag lasts at least
//! `hold`, then ends at the first cycle whose score is below the threshold), and the novelty
//! rule (a subject outside the model's training range is flagged by its score only when a
//! second signal agrees; see [`super::scoring`]).

use crate::clock::{Micros, micros};
use crate::engine::SubjectStanding;
use crate::limit::KeyHash;
use hashbrown::{HashMap, HashSet};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flag {
    pub since: Micros,
    pub score: f64,
}

/// One subject's score in a cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub subject: KeyHash,
    pub score: f64,
    /// Outside the training range with no second signal: the score alone flags nothing.
    pub novel: bool,
}

/// A flag that ended in a cycle: its score fell below the threshold after its hold, its score
/// over the threshold stopped counting after its hold (the subject became novel with no second
/// signal), or the subject went quiet and its hold ran out. Not one an admin cleared or
/// allowlisted (those actions are logged where they are taken).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EndedFlag {
    pub subject: KeyHash,
    pub since: Micros,
    /// The score that ended it; `None`: the subject was not scored (it went quiet).
    pub score: Option<f64>,
    /// The score is at or over the threshold but no longer counts: outside the model's
    /// training range with no second signal.
    pub novel: bool,
}

#[derive(Debug, Default)]
pub struct FlagTracker {
    flags: HashMap<KeyHash, Flag>,
    /// Subjects whose flag began in the last cycle judged.
    begun: Vec<KeyHash>,
    /// Flags that ended in the last cycle judged.
    ended: Vec<EndedFlag>,
}

impl FlagTracker {
    /// One cycle's verdict: a standing for every subject scored now, and for every subject
    /// still held flagged though not scored this time (it went quiet). An `exempt` subject
    /// (allowlisted) is scored but holds no flag: when its allowlisting ends it is judged on its
    /// score alone, on this daemon and on any that adopts these standings.
    pub fn judge(
        &mut self,
        now: Micros,
        scored: &[Scored],
        threshold: f64,
        hold: Duration,
        exempt: &HashSet<KeyHash>,
    ) -> HashMap<KeyHash, SubjectStanding> {
        let hold = micros(hold);
        let mut standings = HashMap::with_capacity(scored.len() + self.flags.len());
        self.begun.clear();
        self.ended.clear();
        for &Scored {
            subject,
            score,
            novel,
        } in scored
        {
            if !exempt.is_empty() && exempt.contains(&subject) {
                self.flags.remove(&subject);
                let standing = SubjectStanding {
                    abuse_score: score,
                    held_until: 0,
                    novel,
                };
                standings.insert(subject, standing);
                continue;
            }
            let held = self
                .flags
                .get(&subject)
                .is_some_and(|f| now < f.since.saturating_add(hold));
            let held_until = if (score >= threshold && !novel) || held {
                let begun = &mut self.begun;
                let flag = self.flags.entry(subject).or_insert_with(|| {
                    begun.push(subject);
                    Flag { since: now, score }
                });
                flag.score = score;
                flag.since.saturating_add(hold)
            } else {
                if let Some(flag) = self.flags.remove(&subject) {
                    self.ended.push(EndedFlag {
                        subject,
                        since: flag.since,
                        score: Some(score),
                        novel: novel && score >= threshold,
                    });
                }
                0
            };
            standings.insert(
                subject,
                SubjectStanding {
                    abuse_score: score,
                    held_until,
                    novel,
                },
            );
        }
        let ended = &mut self.ended;
        self.flags.retain(|subject, flag| {
            if standings.contains_key(subject) {
                return true;
            }
            if exempt.contains(subject) {
                return false;
            }
            let held_until = flag.since.saturating_add(hold);
            let held = now < held_until;
            if held {
                standings.insert(
                    *subject,
                    SubjectStanding {
                        abuse_score: flag.score,
                        held_until,
                        novel: false,
                    },
                );
            } else {
                ended.push(EndedFlag {
                    subject: *subject,
                    since: flag.since,
                    score: None,
                    novel: false,
                });
            }
            held
        });
        standings
    }

    /// The subjects whose flag began in the last cycle judged.
    pub fn begun(&self) -> &[KeyHash] {
        &self.begun
    }

    /// The flags that ended in the last cycle judged.
    pub fn ended(&self) -> &[EndedFlag] {
        &self.ended
    }

    /// Drops `subject`'s flag and its hold (the admin API cleared or allowlisted it).
    pub fn remove(&mut self, subject: KeyHash) {
        self.flags.remove(&subject);
    }

    pub fn flag(&self, subject: KeyHash) -> Option<Flag> {
        self.flags.get(&subject).copied()
    }

    /// Forgets every flag (no model: nobody is scored, nobody stays flagged).
    pub fn clear(&mut self) {
        self.flags.clear();
    }

    /// Installs flags decided elsewhere (another daemon led the last cycles).
    pub fn adopt(&mut self, flags: impl IntoIterator<Item = (KeyHash, Flag)>) {
        self.flags = flags.into_iter().collect();
    }

    pub fn flags(&self) -> &HashMap<KeyHash, Flag> {
        &self.flags
    }
}
