//! What `ratewarden train` prints: the data, the held-out metrics with the threshold table
//! and reliability bins, and the per-archetype results (held out, left out, fresh seeds).

use super::evaluate::Evaluation;
use super::loao::{GRADES, Graded};
use super::samples::{SampleOptions, Samples};
use super::train::TrainReport;

/// What the replay gave: requests, denials and subjects, then the samples.
pub fn print_data(samples: &Samples, options: &SampleOptions) {
    say!(
        "data: {} requests ({:.1} % denied by the policy) from {} subjects; {} undecidable",
        samples.requests,
        100.0 * samples.denied as f64 / samples.requests.max(1) as f64,
        samples.subjects.len(),
        samples.undecidable,
    );
    say!(
        "samples: {} ({})",
        samples.samples.len(),
        options.describe()
    );
}

pub fn print_report(report: &TrainReport) {
    let [fit, calibrate, held_out] = report.split;
    say!(
        "split by subject (seed {}): {fit} fit, {calibrate} calibrate, {held_out} held out",
        report.model.training().map_or(0, |t| t.seed)
    );
    let e = &report.held_out;
    say!(
        "held out: {} samples ({} abuse) from {} subjects",
        e.samples,
        e.abuse_samples,
        e.subjects.normal + e.subjects.abuse
    );
    say!(
        "  threshold {:.2}: precision {}  recall {:.4}  false positive rate {:.5}",
        e.threshold,
        precision(e.precision, e.recall, e.false_positive_rate),
        e.recall,
        e.false_positive_rate
    );
    say!("  ROC AUC {:.4}", e.roc_auc);
    say!(
        "  subjects flagged: {}/{} abusive, {}/{} normal",
        e.subjects.abuse_flagged,
        e.subjects.abuse,
        e.subjects.normal_flagged,
        e.subjects.normal
    );
    match &report.uncalibrated {
        Some(before) => say!(
            "  calibration (Platt): expected calibration error {:.4} (before {:.4}), Brier {:.4}",
            e.expected_calibration_error,
            before.expected_calibration_error,
            e.brier
        ),
        None => say!(
            "  score = share of training traffic more typical; expected calibration error \
             (as a probability, not its meaning) {:.4}",
            e.expected_calibration_error
        ),
    }
    print_thresholds(e);
    print_bins(e);
    if !report.archetypes.is_empty() {
        say!("held out, by archetype (at {:.2}):", e.threshold);
        say!("  archetype                  label   subjects flagged   samples flagged");
        for a in &report.archetypes {
            say!(
                "  {:<26} {:<7} {:>8} {:>7} {:>9} {:>7}",
                a.archetype,
                if a.abuse { "abuse" } else { "normal" },
                a.subjects,
                a.flagged,
                a.samples,
                a.samples_flagged
            );
        }
    }
    if !e.leave_one_archetype_out.is_empty() {
        print_graded(
            "leave one archetype out (a model fitted without each archetype, scored on all of its subjects):",
            &e.leave_one_archetype_out,
        );
    }
}

fn print_bins(e: &Evaluation) {
    say!("  score bin    samples  mean score  abuse share");
    for b in e.calibration.iter().filter(|b| b.samples > 0) {
        say!(
            "  {:.1}-{:.1} {:>11}  {:>10.3}  {:>11.3}",
            b.from,
            b.to,
            b.samples,
            b.mean_score,
            b.abuse_share
        );
    }
}

/// Precision to four places, or `n/a` where nothing was flagged (it has no value there).
fn precision(precision: f64, recall: f64, false_positive_rate: f64) -> String {
    if recall == 0.0 && false_positive_rate == 0.0 {
        "n/a".to_owned()
    } else {
        format!("{precision:.4}")
    }
}

fn print_thresholds(e: &Evaluation) {
    say!("  threshold  precision  recall  false positive rate  subjects flagged (abusive, normal)");
    for row in &e.thresholds {
        say!(
            "  {:>9.2}  {:>9}  {:>6.4}  {:>19.5}  {:>8} {:>7}",
            row.threshold,
            precision(row.precision, row.recall, row.false_positive_rate),
            row.recall,
            row.false_positive_rate,
            row.abuse_flagged,
            row.normal_flagged
        );
    }
}

/// One table of graded results: per archetype, subjects whose score reached each grade, and
/// those the daemon would flag (the novelty rule applied).
pub fn print_graded(title: &str, rows: &[Graded]) {
    say!("{title}");
    say!(
        "  archetype                  label   subjects  score over {:.2} / {:.2} / {:.2}  flagged (novelty rule)  median max score",
        GRADES[0],
        GRADES[1],
        GRADES[2]
    );
    for g in rows {
        say!(
            "  {:<26} {:<7} {:>8}  {:>8} / {:>4} / {:>4}  {:>8} / {:>4} / {:>4}  {:>16.3}",
            g.archetype,
            if g.abuse { "abuse" } else { "normal" },
            g.subjects,
            g.flagged[0],
            g.flagged[1],
            g.flagged[2],
            g.enforced[0],
            g.enforced[1],
            g.enforced[2],
            g.median_max_score
        );
    }
    let (normal, abuse): (Vec<&Graded>, Vec<&Graded>) = rows.iter().partition(|g| !g.abuse);
    let archetypes = abuse.len().max(1) as f64;
    let over: u64 = normal.iter().map(|g| g.flagged[1]).sum();
    let flagged: u64 = normal.iter().map(|g| g.enforced[1]).sum();
    let recall_over = abuse.iter().map(|g| g.share(1)).sum::<f64>() / archetypes;
    let recall = abuse.iter().map(|g| g.enforced_share(1)).sum::<f64>() / archetypes;
    if abuse.is_empty() {
        // An empty sum of floats is -0.0: "abuse recall -0.000" over nothing says nothing.
        say!(
            "  at {:.2}: {flagged} normal subjects flagged ({over} scored over it); no abusive archetype to measure recall on",
            GRADES[1]
        );
        return;
    }
    say!(
        "  at {:.2}: {flagged} normal subjects flagged ({over} scored over it); abuse recall {recall:.3} ({recall_over:.3} by score alone) averaged over {} abusive archetypes",
        GRADES[1],
        abuse.len()
    );
}
