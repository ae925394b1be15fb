//! Honest evaluation: how a model does on behaviour it was never fitted on.
//!
//! Scoring well on held-out subjects of the archetypes it was trained on says little about
//! real traffic, which always has clients no simulation has. So, per archetype, a model is
//! fitted on every *other* archetype's fitting subjects and scored on all of this one's
//! (leave-one-archetype-out): for a legitimate archetype, how many of its subjects the model
//! flags; for an abusive one, how many it catches. Seeds never used for fitting are scored the
//! same way ([`graded`]).

use super::Model;
use super::samples::{Sample, Samples};
use super::train::{TrainError, TrainOptions, fit_parts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The thresholds at which graded results count flagged subjects, besides the model's own.
pub const GRADES: [f64; 3] = [0.5, 0.8, 0.95];

/// How one archetype's subjects scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Graded {
    pub archetype: String,
    pub abuse: bool,
    /// Subjects with at least one sample (scored at least once).
    pub subjects: u64,
    /// Subjects with a sample at or over each of [`GRADES`].
    pub flagged: [u64; 3],
    /// Subjects the daemon would flag at each of [`GRADES`]: a sample at or over it whose
    /// score counts under the novelty rule ([`Assessment::flags_at`]). Absent from files
    /// written before it was kept (read as 0).
    #[serde(default)]
    pub enforced: [u64; 3],
    /// The median over subjects of each subject's highest score.
    pub median_max_score: f64,
}

impl Graded {
    /// The share of subjects flagged at `GRADES[grade]`.
    pub fn share(&self, grade: usize) -> f64 {
        self.flagged[grade] as f64 / self.subjects.max(1) as f64
    }

    /// The share of subjects the daemon would flag at `GRADES[grade]`.
    pub fn enforced_share(&self, grade: usize) -> f64 {
        self.enforced[grade] as f64 / self.subjects.max(1) as f64
    }
}

/// One subject's highest score, and its highest score that counts under the novelty rule.
#[derive(Default)]
struct Highest {
    score: f64,
    counted: f64,
}

/// Graded results per archetype of `rows` (samples of `samples`) as `model` assesses them.
pub fn graded(samples: &Samples, rows: &[&Sample], model: &Model) -> Vec<Graded> {
    // archetype -> subject -> highest scores
    let mut highest: BTreeMap<(bool, &str), hashbrown::HashMap<u32, Highest>> = BTreeMap::new();
    for sample in rows {
        let subject = &samples.subjects[sample.subject as usize];
        let Some(name) = subject.archetype.as_deref() else {
            continue;
        };
        let assessment = model.assess(&sample.observed());
        let best = highest
            .entry((subject.abuse, name))
            .or_default()
            .entry(sample.subject)
            .or_default();
        best.score = best.score.max(assessment.score);
        if assessment.score_counts() {
            best.counted = best.counted.max(assessment.score);
        }
    }
    highest
        .into_iter()
        .map(|((abuse, name), subjects)| {
            let subjects: Vec<Highest> = subjects.into_values().collect();
            let count = |t: f64, of: fn(&Highest) -> f64| {
                subjects.iter().filter(|h| of(h) >= t).count() as u64
            };
            let mut maxima: Vec<f64> = subjects.iter().map(|h| h.score).collect();
            maxima.sort_by(f64::total_cmp);
            Graded {
                archetype: name.to_owned(),
                abuse,
                subjects: maxima.len() as u64,
                flagged: GRADES.map(|t| count(t, |h| h.score)),
                enforced: GRADES.map(|t| count(t, |h| h.counted)),
                median_max_score: maxima.get(maxima.len() / 2).copied().unwrap_or(0.0),
            }
        })
        .collect()
}

/// For each archetype in the data: a model fitted without it (on the other archetypes'
/// subjects of the fitting and calibration parts `part`), scored on all of its subjects.
pub fn leave_one_archetype_out(
    samples: &Samples,
    part: &[u8],
    options: &TrainOptions,
    mut progress: impl FnMut(&str),
) -> Result<Vec<Graded>, TrainError> {
    let mut names: Vec<&str> = samples
        .subjects
        .iter()
        .filter_map(|s| s.archetype.as_deref())
        .collect();
    names.sort_unstable();
    names.dedup();
    let archetype_of = |s: &Sample| samples.subjects[s.subject as usize].archetype.as_deref();
    let mut results = Vec::with_capacity(names.len());
    for name in names {
        progress(name);
        let (left_out, kept): (Vec<&Sample>, Vec<&Sample>) = samples
            .samples
            .iter()
            .partition(|s| archetype_of(s) == Some(name));
        let in_part = |p: u8| -> Vec<&Sample> {
            kept.iter()
                .copied()
                .filter(|s| part[s.subject as usize] == p)
                .collect()
        };
        let subjects = samples.subjects.len();
        let fitted = fit_parts(
            samples.labelled,
            &in_part(0),
            &in_part(1),
            options,
            subjects,
        )?;
        results.extend(graded(samples, &left_out, &fitted.model));
    }
    Ok(results)
}
