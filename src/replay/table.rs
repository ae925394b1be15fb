//! The report as text for a terminal: inputs and skipped lines, decisions by reason, rule and
//! tier, flagged subjects, the subjects denied most, and the sweep.

use super::report::Report;
use super::summary::{LabelStats, RuleRow, SubjectRow, Summary, TierRow, UnflaggedRow, share};
use super::sweep::SweepRow;
use crate::simulate::Label;
use std::fmt::Write;

/// Flagged subjects listed (all of them are in `--report`).
const FLAGGED_SHOWN: usize = 20;

fn pct(part: u64, whole: u64) -> String {
    format!("{:.2} %", 100.0 * share(part, whole))
}

fn label(label: Option<Label>) -> &'static str {
    match label {
        Some(Label::Abuse) => "abuse",
        Some(Label::Normal) => "normal",
        None => "-",
    }
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_report(&mut out, report);
    out
}

fn write_report(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "ratewarden replay: {}", report.policy.display())?;
    write_inputs(out, report)?;
    write_model(out, report)?;
    writeln!(out)?;
    write_summary(out, &report.summary)?;
    if let Some(rows) = &report.sweep {
        writeln!(out)?;
        write_sweep(out, rows)?;
    }
    Ok(())
}

/// The files read, the lines skipped, the span of time and whom requests counted against.
fn write_inputs(out: &mut String, report: &Report) -> std::fmt::Result {
    for input in &report.inputs {
        writeln!(
            out,
            "  input   {} ({}{}): {} lines, {} parsed, {} skipped",
            input.path.display(),
            input.format.unwrap_or("empty"),
            if input.gzip { ", gzip" } else { "" },
            input.lines,
            input.parsed,
            input.skipped
        )?;
    }
    for problem in &report.skipped_examples {
        write!(
            out,
            "  skipped {}:{}: {}",
            problem.file.display(),
            problem.line,
            problem.problem
        )?;
        match &problem.excerpt {
            Some(text) => writeln!(out, ": {text:?}")?,
            None => writeln!(out)?,
        }
    }
    if report.lines_skipped > report.skipped_examples.len() as u64 {
        writeln!(out, "  skipped ... {} lines in all", report.lines_skipped)?;
    }
    writeln!(
        out,
        "  span    {} to {} ({:.0} s); subject: {}{}",
        report.start,
        report.end,
        report.span_seconds,
        report.subject,
        if report.subject_fallbacks > 0 {
            format!(
                " ({} line{} without it used the fallback)",
                report.subject_fallbacks,
                if report.subject_fallbacks == 1 {
                    ""
                } else {
                    "s"
                }
            )
        } else {
            String::new()
        }
    )
}

/// Where the replay's load factor came from: a log has no CPU, so only the policy pins one,
/// or the `upstream` source follows the log's outcomes.
fn load_factor(report: &Report) -> String {
    if let Some(load) = &report.summary.load {
        return format!(
            "from upstream reports: {:.2} to {:.2}, below 1 for {:.0} s, above 1 for {:.0} s \
             ({} of {} allowed requests with a latency)",
            load.lowest_factor,
            load.highest_factor,
            load.seconds_below_one,
            load.seconds_above_one,
            load.latencies,
            load.reported
        );
    }
    if report.load_factor == 1.0 {
        "1 (a log has no CPU; pin adaptive.load.factor_override for load denials)".into()
    } else {
        format!("{} (adaptive.load.factor_override)", report.load_factor)
    }
}

/// The model in force, or why there is none.
fn write_model(out: &mut String, report: &Report) -> std::fmt::Result {
    match &report.model {
        Some(m) => writeln!(
            out,
            "  model   {} ({} {}), threshold {}; load factor {}",
            m.path.display(),
            m.kind,
            m.version,
            report.summary.threshold,
            load_factor(report)
        ),
        None => writeln!(
            out,
            "  model   none in the policy; no anomaly scaling; load factor {}",
            load_factor(report)
        ),
    }
}

fn write_sweep(out: &mut String, rows: &[SweepRow]) -> std::fmt::Result {
    writeln!(
        out,
        "sweep        flagged  anomaly-denied  abuse-denied  (by anomaly)  normal-denied  normal-flagged"
    )?;
    for row in rows {
        let opt_pct = |x: Option<f64>| x.map_or("-".into(), |x| format!("{:.2} %", 100.0 * x));
        writeln!(
            out,
            "  {:<9} {:>8}  {:>14}  {:>12}  {:>12}  {:>13}  {:>14}",
            row.threshold,
            row.subjects_flagged,
            row.anomaly_denied,
            opt_pct(row.abuse_denied_share),
            opt_pct(row.abuse_denied_anomaly_share),
            opt_pct(row.normal_denied_share),
            row.normal_subjects_flagged
                .map_or("-".into(), |n| n.to_string()),
        )?;
    }
    Ok(())
}

fn write_summary(out: &mut String, s: &Summary) -> std::fmt::Result {
    write_totals(out, s)?;
    if let Some(l) = &s.labels {
        write_labels(out, l)?;
    }
    if !s.by_rule.is_empty() {
        writeln!(out)?;
        write_rules(out, &s.by_rule)?;
    }
    writeln!(out)?;
    write_tiers(out, &s.by_tier)?;
    writeln!(out)?;
    write_flagged(out, s)?;
    write_unflagged(out, s)?;
    if !s.top_denied.is_empty() {
        writeln!(out)?;
        write_top_denied(out, &s.top_denied)?;
    }
    Ok(())
}

/// Requests allowed and denied (by reason), shadow denials and the undecidable.
fn write_totals(out: &mut String, s: &Summary) -> std::fmt::Result {
    writeln!(
        out,
        "requests         {:>12}  from {} subject{}",
        s.requests,
        s.subjects,
        if s.subjects == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "  allowed        {:>12}  {}",
        s.allowed,
        pct(s.allowed, s.requests)
    )?;
    writeln!(
        out,
        "  denied         {:>12}  {}",
        s.denied,
        pct(s.denied, s.requests)
    )?;
    for (reason, n) in s.denied_by_reason.pairs() {
        if n > 0 {
            writeln!(out, "    {reason:<16}{n:>10}  {}", pct(n, s.requests))?;
        }
    }
    if s.shadow_denied > 0 {
        writeln!(
            out,
            "  shadow denied  {:>12}  (allowed; a shadow limit would have denied)",
            s.shadow_denied
        )?;
    }
    if s.undecidable > 0 {
        writeln!(
            out,
            "  undecidable    {:>12}  (not counted above): {}",
            s.undecidable,
            s.undecidable_examples.join("; ")
        )?;
    }
    Ok(())
}

fn write_labels(out: &mut String, l: &LabelStats) -> std::fmt::Result {
    writeln!(
        out,
        "  labelled: abuse requests denied {} ({} by anomaly), normal requests denied {} ({} by anomaly)",
        pct(l.abuse_denied, l.abuse_requests),
        pct(l.abuse_denied_anomaly, l.abuse_requests),
        pct(l.normal_denied, l.normal_requests),
        pct(l.normal_denied_anomaly, l.normal_requests),
    )?;
    writeln!(
        out,
        "  labelled: abuse subjects flagged {}/{}, normal subjects flagged {}/{}",
        l.abuse_subjects_flagged, l.abuse_subjects, l.normal_subjects_flagged, l.normal_subjects
    )
}

fn write_rules(out: &mut String, rows: &[RuleRow]) -> std::fmt::Result {
    writeln!(
        out,
        "denied by rule   tier          denied    quota    burst     load  anomaly   shadow"
    )?;
    for r in rows {
        writeln!(
            out,
            "  {:<14} {:<12} {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}",
            r.rule,
            r.tier,
            r.denied,
            r.reasons.quota,
            r.reasons.burst,
            r.reasons.load,
            r.reasons.anomaly,
            r.shadow_denied
        )?;
    }
    Ok(())
}

fn write_tiers(out: &mut String, rows: &[TierRow]) -> std::fmt::Result {
    writeln!(out, "by tier          requests    denied")?;
    for t in rows {
        writeln!(
            out,
            "  {:<12} {:>10}  {:>8}  {}",
            t.tier,
            t.requests,
            t.denied,
            pct(t.denied, t.requests)
        )?;
    }
    Ok(())
}

/// The first [`FLAGGED_SHOWN`] subjects flagged, and how many more the report has.
fn write_flagged(out: &mut String, s: &Summary) -> std::fmt::Result {
    writeln!(out, "subjects flagged: {}", s.subjects_flagged)?;
    for f in s.flagged.iter().take(FLAGGED_SHOWN) {
        writeln!(
            out,
            "  {:<24} at {} (+{:.0} s), {} episode{}, max score {:.3}, {} requests, {} denied, label {}",
            f.subject,
            f.first_flagged,
            f.first_flagged_after_s,
            f.episodes,
            if f.episodes == 1 { "" } else { "s" },
            f.max_score,
            f.requests,
            f.denied,
            label(f.label)
        )?;
    }
    if s.flagged.len() > FLAGGED_SHOWN {
        writeln!(
            out,
            "  ... {} more in --report",
            s.flagged.len() - FLAGGED_SHOWN
        )?;
    }
    Ok(())
}

/// The subjects labelled abuse that were never flagged, and the most active of those never
/// scored, each with why.
fn write_unflagged(out: &mut String, s: &Summary) -> std::fmt::Result {
    if !s.abuse_unflagged.is_empty() {
        writeln!(
            out,
            "abuse subjects never flagged: {}",
            s.abuse_unflagged.len()
        )?;
        for row in s.abuse_unflagged.iter().take(FLAGGED_SHOWN) {
            write_unflagged_row(out, row)?;
        }
        if s.abuse_unflagged.len() > FLAGGED_SHOWN {
            let more = s.abuse_unflagged.len() - FLAGGED_SHOWN;
            writeln!(out, "  ... {more} more in --report")?;
        }
    }
    writeln!(out, "subjects never scored: {}", s.never_scored)?;
    for row in &s.never_scored_top {
        write_unflagged_row(out, row)?;
    }
    Ok(())
}

fn write_unflagged_row(out: &mut String, row: &UnflaggedRow) -> std::fmt::Result {
    writeln!(
        out,
        "  {:<24} {} requests, label {}: {}",
        row.subject,
        row.requests,
        label(row.label),
        row.why
    )
}

fn write_top_denied(out: &mut String, rows: &[SubjectRow]) -> std::fmt::Result {
    writeln!(
        out,
        "top subjects by denials    requests    denied  flagged  label"
    )?;
    for t in rows {
        writeln!(
            out,
            "  {:<24} {:>9}  {:>8}  {:<7}  {}",
            t.subject,
            t.requests,
            t.denied,
            if t.flagged { "yes" } else { "no" },
            label(t.label)
        )?;
    }
    Ok(())
}
