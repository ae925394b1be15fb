//! Every subject's features from one control cycle, sorted by subject.
//!
//! A cycle computes them in subject order (the activity window keeps its rows so), the request
//! path's admin views read one subject at a time, and the next cycle replaces them all. A
//! sorted slice serves all three with one allocation: no hash table of 100,000 entries to build,
//! and nothing to sort again when the cycle publishes it.

use super::SubjectFeatures;
use crate::limit::KeyHash;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservedSubjects(Box<[(KeyHash, SubjectFeatures)]>);

impl ObservedSubjects {
    /// Takes the subjects in any order (sorted only when they are not already); of two entries
    /// for one subject the first is kept.
    pub fn new(mut subjects: Vec<(KeyHash, SubjectFeatures)>) -> Self {
        if !subjects.is_sorted_by_key(|(s, _)| *s) {
            subjects.sort_by_key(|(s, _)| *s);
        }
        subjects.dedup_by_key(|(s, _)| *s);
        ObservedSubjects(subjects.into_boxed_slice())
    }

    pub fn get(&self, subject: &KeyHash) -> Option<&SubjectFeatures> {
        let at = self.0.binary_search_by_key(subject, |(s, _)| *s).ok()?;
        Some(&self.0[at].1)
    }

    pub fn contains_key(&self, subject: &KeyHash) -> bool {
        self.get(subject).is_some()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In subject order.
    pub fn iter(&self) -> impl Iterator<Item = (&KeyHash, &SubjectFeatures)> {
        self.0.iter().map(|(s, o)| (s, o))
    }
}

impl FromIterator<(KeyHash, SubjectFeatures)> for ObservedSubjects {
    fn from_iter<I: IntoIterator<Item = (KeyHash, SubjectFeatures)>>(subjects: I) -> Self {
        ObservedSubjects::new(subjects.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(requests: u64) -> SubjectFeatures {
        SubjectFeatures {
            requests,
            ..SubjectFeatures::default()
        }
    }

    #[test]
    fn any_order_in_subject_order_out_first_entry_kept() {
        let observed = ObservedSubjects::new(vec![
            (KeyHash(9), seen(1)),
            (KeyHash(2), seen(2)),
            (KeyHash(9), seen(3)),
            (KeyHash(5), seen(4)),
        ]);
        let order: Vec<(u128, u64)> = observed.iter().map(|(s, o)| (s.0, o.requests)).collect();
        assert_eq!(order, [(2, 2), (5, 4), (9, 1)]);
        assert_eq!(observed.get(&KeyHash(5)), Some(&seen(4)));
        assert!(!observed.contains_key(&KeyHash(3)));
        assert_eq!(observed.len(), 3);
    }
}
