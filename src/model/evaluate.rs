//! How well scores separate labelled traffic: precision and recall at a threshold, ROC AUC,
//! and calibration (does a score of 0.8 mean 80 % of such samples are abuse?).
//!
//! A sample is one subject's features at one control cycle, as the daemon scores them; a
//! subject counts as flagged when any of its samples reaches the threshold, as in the daemon.

use super::loao::Graded;
use serde::{Deserialize, Serialize};

/// Metrics of a model on labelled samples (stored in the model file, quoted by the card).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub threshold: f64,
    pub samples: u64,
    pub abuse_samples: u64,
    /// Of the samples at or over the threshold, the share that is abuse (0 when none is).
    pub precision: f64,
    /// Of the abuse samples, the share at or over the threshold.
    pub recall: f64,
    /// Of the normal samples, the share at or over the threshold.
    pub false_positive_rate: f64,
    pub roc_auc: f64,
    /// Mean squared difference between score and label.
    pub brier: f64,
    /// Sample-weighted mean |mean score − abuse share| over the calibration bins.
    pub expected_calibration_error: f64,
    pub calibration: Vec<CalibrationBin>,
    pub subjects: SubjectCounts,
    /// The same measures at other thresholds (0.5 to 0.95): what moving the dial trades.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdRow>,
    /// Per archetype, a model fitted without it (see [`super::loao`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leave_one_archetype_out: Vec<Graded>,
    /// Per archetype, on traffic of seeds never used for fitting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fresh: Vec<FreshResult>,
}

/// Precision and recall of samples, and subjects flagged, at one threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdRow {
    pub threshold: f64,
    pub precision: f64,
    pub recall: f64,
    pub false_positive_rate: f64,
    pub normal_flagged: u64,
    pub abuse_flagged: u64,
}

/// Graded results on one traffic file the model was not fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreshResult {
    pub data: String,
    pub archetypes: Vec<Graded>,
}

/// The thresholds of [`Evaluation::thresholds`].
pub const THRESHOLD_TABLE: [f64; 10] = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];

/// Samples whose score fell in `[from, to)` (the last bin includes 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationBin {
    pub from: f64,
    pub to: f64,
    pub samples: u64,
    pub mean_score: f64,
    pub abuse_share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubjectCounts {
    pub normal: u64,
    pub abuse: u64,
    /// Normal subjects with a sample at or over the threshold.
    pub normal_flagged: u64,
    /// Abusive subjects with a sample at or over the threshold.
    pub abuse_flagged: u64,
}

const BINS: usize = 10;

/// Evaluates `scores` against labels; `subjects[i]` names sample i's subject (any ids).
pub fn evaluate(scores: &[f64], abuse: &[bool], subjects: &[u32], threshold: f64) -> Evaluation {
    let n = scores.len();
    let (mut tp, mut fp, mut positives) = (0u64, 0u64, 0u64);
    let mut brier = 0.0;
    let mut bins = vec![(0u64, 0.0f64, 0u64); BINS];
    for i in 0..n {
        let (s, y) = (scores[i], abuse[i]);
        positives += u64::from(y);
        if s >= threshold {
            tp += u64::from(y);
            fp += u64::from(!y);
        }
        brier += (s - f64::from(u8::from(y))).powi(2);
        let bin = ((s * BINS as f64) as usize).min(BINS - 1);
        bins[bin].0 += 1;
        bins[bin].1 += s;
        bins[bin].2 += u64::from(y);
    }
    let negatives = n as u64 - positives;
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let calibration: Vec<CalibrationBin> = bins
        .iter()
        .enumerate()
        .map(|(b, &(count, sum, abusive))| CalibrationBin {
            from: b as f64 / BINS as f64,
            to: (b + 1) as f64 / BINS as f64,
            samples: count,
            mean_score: if count == 0 { 0.0 } else { sum / count as f64 },
            abuse_share: ratio(abusive, count),
        })
        .collect();
    let ece = calibration
        .iter()
        .map(|b| b.samples as f64 * (b.mean_score - b.abuse_share).abs())
        .sum::<f64>()
        / n.max(1) as f64;
    Evaluation {
        threshold,
        samples: n as u64,
        abuse_samples: positives,
        precision: ratio(tp, tp + fp),
        recall: ratio(tp, positives),
        false_positive_rate: ratio(fp, negatives),
        roc_auc: roc_auc(scores, abuse),
        brier: brier / n.max(1) as f64,
        expected_calibration_error: ece,
        calibration,
        subjects: subject_counts(scores, abuse, subjects, threshold),
        thresholds: THRESHOLD_TABLE
            .iter()
            .map(|&t| threshold_row(scores, abuse, subjects, t))
            .collect(),
        leave_one_archetype_out: Vec::new(),
        fresh: Vec::new(),
    }
}

fn threshold_row(scores: &[f64], abuse: &[bool], subjects: &[u32], threshold: f64) -> ThresholdRow {
    let (mut tp, mut fp) = (0u64, 0u64);
    for (s, y) in scores.iter().zip(abuse) {
        if *s >= threshold {
            tp += u64::from(*y);
            fp += u64::from(!*y);
        }
    }
    let positives = abuse.iter().filter(|y| **y).count() as u64;
    let negatives = abuse.len() as u64 - positives;
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let counts = subject_counts(scores, abuse, subjects, threshold);
    ThresholdRow {
        threshold,
        precision: ratio(tp, tp + fp),
        recall: ratio(tp, positives),
        false_positive_rate: ratio(fp, negatives),
        normal_flagged: counts.normal_flagged,
        abuse_flagged: counts.abuse_flagged,
    }
}

/// The probability that a random abuse sample scores above a random normal one (ties count
/// half): the Mann-Whitney statistic. 0.5 when one class is missing.
pub fn roc_auc(scores: &[f64], abuse: &[bool]) -> f64 {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let (mut rank_sum, mut positives) = (0.0, 0u64);
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean.
        let rank = (i + j + 2) as f64 / 2.0;
        for &k in &order[i..=j] {
            if abuse[k] {
                rank_sum += rank;
                positives += 1;
            }
        }
        i = j + 1;
    }
    let negatives = scores.len() as u64 - positives;
    if positives == 0 || negatives == 0 {
        return 0.5;
    }
    let p = positives as f64;
    (rank_sum - p * (p + 1.0) / 2.0) / (p * negatives as f64)
}

fn subject_counts(
    scores: &[f64],
    abuse: &[bool],
    subjects: &[u32],
    threshold: f64,
) -> SubjectCounts {
    // subject -> (abusive, flagged)
    let mut seen: hashbrown::HashMap<u32, (bool, bool)> = hashbrown::HashMap::new();
    for i in 0..scores.len() {
        let entry = seen.entry(subjects[i]).or_insert((abuse[i], false));
        entry.1 |= scores[i] >= threshold;
    }
    let mut counts = SubjectCounts {
        normal: 0,
        abuse: 0,
        normal_flagged: 0,
        abuse_flagged: 0,
    };
    for (abusive, flagged) in seen.values() {
        if *abusive {
            counts.abuse += 1;
            counts.abuse_flagged += u64::from(*flagged);
        } else {
            counts.normal += 1;
            counts.normal_flagged += u64::from(*flagged);
        }
    }
    counts
}
