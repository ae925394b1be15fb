//! Admin overrides of the anomaly standings, and when each flag in force began.
//!
//! A cleared flag is not in force until the control loop has judged the subject again (it
//! drops the flag and its hold, then scores afresh); an allowlisted subject is never flagged
//! until its time is up. The request path reads both per decision, so an admin action applies
//! at once; the control loop reads them each cycle to drop the flags themselves. Both live in
//! this daemon's memory (in fleet mode, send the action to every daemon).

use crate::clock::Micros;
use crate::limit::KeyHash;
use arc_swap::ArcSwap;
use hashbrown::HashMap;
use std::sync::Arc;

/// Why a subject's standing is set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exemption {
    /// Its flag was cleared; the next control cycle judges it again.
    Cleared,
    /// Allowlisted until this time.
    Until(Micros),
}

#[derive(Debug, Default)]
pub struct Exemptions {
    exempt: ArcSwap<HashMap<KeyHash, Exemption>>,
    /// Each flag in force and when it began, as the last control cycle left them.
    flag_starts: ArcSwap<HashMap<KeyHash, Micros>>,
}

impl Exemptions {
    /// The subjects allowlisted at `now` (not merely cleared: a cleared subject is judged
    /// again), read once for a whole cycle.
    pub fn allowlisted(&self, now: Micros) -> hashbrown::HashSet<KeyHash> {
        let exempt = self.exempt.load();
        exempt
            .iter()
            .filter(|(_, e)| matches!(e, Exemption::Until(until) if now < *until))
            .map(|(subject, _)| *subject)
            .collect()
    }

    /// Whether `subject`'s standing is set aside at `now`.
    pub fn is_exempt(&self, subject: KeyHash, now: Micros) -> bool {
        let exempt = self.exempt.load();
        if exempt.is_empty() {
            return false;
        }
        match exempt.get(&subject) {
            Some(Exemption::Cleared) => true,
            Some(Exemption::Until(until)) => now < *until,
            None => false,
        }
    }

    pub fn get(&self, subject: KeyHash) -> Option<Exemption> {
        self.exempt.load().get(&subject).copied()
    }

    /// Sets `subject`'s exemption; an allowlisting is not shortened to a clear.
    pub fn set(&self, subject: KeyHash, exemption: Exemption) {
        self.exempt.rcu(|old| {
            let mut next = HashMap::clone(old);
            let keep = matches!(
                (next.get(&subject), exemption),
                (Some(Exemption::Until(_)), Exemption::Cleared)
            );
            if !keep {
                next.insert(subject, exemption);
            }
            next
        });
    }

    /// Ends `subject`'s allowlisting; whether one was in force at `now`. A pending clear stays:
    /// ending an allowlisting that was never there must not bring back a flag just cleared.
    pub fn remove_allowlisting(&self, subject: KeyHash, now: Micros) -> bool {
        let mut had = false;
        self.exempt.rcu(|old| {
            let mut next = HashMap::clone(old);
            had = false;
            if let Some(Exemption::Until(until)) = next.get(&subject).copied() {
                had = now < until;
                next.remove(&subject);
            }
            next
        });
        had
    }

    /// The subjects whose flags a control cycle at `now` drops: every one exempt now (expired
    /// allowlistings are forgotten).
    pub fn for_cycle(&self, now: Micros) -> Vec<KeyHash> {
        if self.exempt.load().is_empty() {
            return Vec::new();
        }
        self.exempt.rcu(|old| {
            let mut next = HashMap::clone(old);
            next.retain(|_, e| !matches!(e, Exemption::Until(until) if *until <= now));
            next
        });
        self.exempt.load().keys().copied().collect()
    }

    /// The cycle that dropped the `dropped` flags has published its standings: the cleared ones
    /// among them stand as judged again.
    pub fn cycle_published(&self, dropped: &[KeyHash]) {
        if dropped.is_empty() {
            return;
        }
        self.exempt.rcu(|old| {
            let mut next = HashMap::clone(old);
            for subject in dropped {
                if next.get(subject) == Some(&Exemption::Cleared) {
                    next.remove(subject);
                }
            }
            next
        });
    }

    pub fn publish_flag_starts(&self, starts: HashMap<KeyHash, Micros>) {
        self.flag_starts.store(Arc::new(starts));
    }

    /// When `subject`'s flag in force began.
    pub fn flag_start(&self, subject: KeyHash) -> Option<Micros> {
        self.flag_starts.load().get(&subject).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::{Exemption, Exemptions};
    use crate::limit::KeyHash;

    #[test]
    fn a_clear_lasts_one_cycle_and_an_allowlisting_its_time() {
        let e = Exemptions::default();
        let (a, b) = (KeyHash(1), KeyHash(2));
        e.set(a, Exemption::Cleared);
        e.set(b, Exemption::Until(100));
        e.set(b, Exemption::Cleared);
        assert!(e.is_exempt(a, 50) && e.is_exempt(b, 99) && !e.is_exempt(b, 100));
        let mut dropped = e.for_cycle(50);
        dropped.sort_by_key(|k| k.0);
        assert_eq!(dropped, [a, b]);
        e.cycle_published(&dropped);
        assert!(!e.is_exempt(a, 50) && e.is_exempt(b, 50));
        assert!(e.for_cycle(100).is_empty(), "the allowlisting expired");
    }

    /// Removing an allowlisting once also removed a pending clear, and the flag came back.
    #[test]
    fn removing_an_allowlisting_leaves_a_pending_clear() {
        let e = Exemptions::default();
        let (cleared, listed) = (KeyHash(1), KeyHash(2));
        e.set(cleared, Exemption::Cleared);
        e.set(listed, Exemption::Until(100));
        assert!(!e.remove_allowlisting(cleared, 50));
        assert!(e.is_exempt(cleared, 50), "the clear stands");
        assert!(e.remove_allowlisting(listed, 50));
        assert!(!e.is_exempt(listed, 50));
        e.set(listed, Exemption::Until(100));
        assert!(
            !e.remove_allowlisting(listed, 100),
            "expired: none was in force"
        );
    }
}
