//! The subjects a pass never flagged that a reader asks about, each with why: those labelled
//! abuse (the misses), and the most active of those never scored.

use super::Tally;
use crate::replay::summary::{TOP, UnflaggedRow};
use crate::simulate::Label;

impl Tally {
    /// Why `s` was never flagged.
    fn why_unflagged(&self, s: u32) -> String {
        let scoring = &self.scoring;
        match self.scores[s as usize] {
            _ if !scoring.model => "no model: nobody is scored".to_owned(),
            Some(best) if self.novel_scores[s as usize].is_some_and(|n| n >= self.threshold) => {
                format!(
                    "highest score {best:.3}, reached while novel (outside the model's training \
                     range) with no second signal: its score alone flags nothing"
                )
            }
            Some(best) => format!(
                "highest score {best:.3}, below the threshold {}",
                self.threshold
            ),
            None => format!(
                "never scored: fewer than {} requests (adaptive.anomaly.min_requests) in any {} \
                 window",
                scoring.min_requests, scoring.window
            ),
        }
    }

    fn unflagged_row(
        &self,
        s: u32,
        name: &impl Fn(u32) -> String,
        label: Option<Label>,
    ) -> UnflaggedRow {
        UnflaggedRow {
            subject: name(s),
            requests: self.per_subject[s as usize].0,
            max_score: self.scores[s as usize],
            label,
            why: self.why_unflagged(s),
        }
    }

    /// Every subject labelled abuse that was never flagged, with why, the most requests first.
    pub(super) fn abuse_unflagged(
        &self,
        name: &impl Fn(u32) -> String,
        labels: &[Option<Label>],
    ) -> Vec<UnflaggedRow> {
        let mut missed: Vec<u32> = (0..labels.len() as u32)
            .filter(|&s| labels[s as usize] == Some(Label::Abuse) && !self.flags.contains_key(&s))
            .collect();
        missed.sort_by_key(|&s| (std::cmp::Reverse(self.per_subject[s as usize].0), s));
        missed
            .into_iter()
            .map(|s| self.unflagged_row(s, name, labels[s as usize]))
            .collect()
    }

    /// How many subjects with requests were never scored, and the [`TOP`] of them with the
    /// most requests.
    pub(super) fn never_scored(
        &self,
        name: &impl Fn(u32) -> String,
        labels: &[Option<Label>],
    ) -> (u64, Vec<UnflaggedRow>) {
        let mut unscored: Vec<u32> = (0..self.per_subject.len() as u32)
            .filter(|&s| self.per_subject[s as usize].0 > 0 && self.scores[s as usize].is_none())
            .collect();
        let count = unscored.len() as u64;
        unscored.sort_by_key(|&s| (std::cmp::Reverse(self.per_subject[s as usize].0), s));
        unscored.truncate(TOP);
        let rows = unscored
            .into_iter()
            .map(|s| self.unflagged_row(s, name, labels[s as usize]))
            .collect();
        (count, rows)
    }
}
