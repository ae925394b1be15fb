//! `--plot`: the report as a PNG: denials over time by reason, and the sweep as a curve of
//! abuse requests denied against normal requests denied (without labels: anomaly denials
//! against the threshold). The font is DejaVu Sans, embedded: no system font libraries.

use super::report::Report;
use super::summary::Summary;
use super::sweep::SweepRow;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::error::Error;
use std::path::Path;

const FONT: &str = "sans-serif";
const WIDTH: u32 = 1200;
const HEIGHT: u32 = 1000;

type Drawn = Result<(), Box<dyn Error>>;
type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

pub fn draw(report: &Report, path: &Path) -> Result<(), String> {
    plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "the embedded font does not load".to_owned())?;
    draw_both(report, path).map_err(|e| crate::files::unwritable(path, e.to_string()))
}

fn draw_both(report: &Report, path: &Path) -> Drawn {
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(HEIGHT / 2);
    timeline(&top, &report.summary)?;
    match &report.sweep {
        Some(rows) if rows.iter().all(|r| r.abuse_denied_share.is_some()) => {
            sweep_curve(&bottom, rows)?
        }
        Some(rows) => sweep_unlabelled(&bottom, rows)?,
        None => note(
            &bottom,
            "no --sweep: run with --sweep threshold=FROM:TO:STEP for the curve",
        )?,
    }
    root.present()?;
    Ok(())
}

fn color(reason: &str) -> RGBColor {
    match reason {
        "quota" => RGBColor(31, 119, 180),
        "burst" => RGBColor(255, 127, 14),
        "load" => RGBColor(148, 103, 189),
        "anomaly" => RGBColor(214, 39, 40),
        _ => RGBColor(127, 127, 127),
    }
}

/// (divisor in seconds, unit name) for a span.
fn time_unit(span_s: f64) -> (f64, &'static str) {
    match span_s {
        s if s <= 900.0 => (1.0, "s"),
        s if s <= 6.0 * 3600.0 => (60.0, "min"),
        s if s <= 7.0 * 86400.0 => (3600.0, "h"),
        _ => (86400.0, "days"),
    }
}

fn timeline(area: &Area, summary: &Summary) -> Drawn {
    let t = &summary.timeline;
    let width = t.bucket_seconds as f64;
    let span = width * t.buckets.len() as f64;
    let (unit, unit_name) = time_unit(span);
    let reasons: Vec<&'static str> = summary
        .denied_by_reason
        .pairs()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(r, _)| *r)
        .collect();
    let count = |b: &super::summary::Bucket, reason: &str| {
        b.denied
            .pairs()
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, n)| *n)
    };
    let peak = t
        .buckets
        .iter()
        .flat_map(|b| reasons.iter().map(move |r| count(b, r)))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "Denials per {} s by reason (from {}, threshold {})",
                t.bucket_seconds, t.start, summary.threshold
            ),
            (FONT, 22),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..(span / unit).max(1e-9), 0f64..(peak as f64 * 1.1))?;
    chart
        .configure_mesh()
        .x_desc(format!("time since the first request ({unit_name})"))
        .y_desc("denied requests")
        .label_style((FONT, 15))
        .draw()?;
    for reason in &reasons {
        let points = t
            .buckets
            .iter()
            .enumerate()
            .map(|(i, b)| (i as f64 * width / unit, count(b, reason) as f64));
        let style = color(reason).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points, style))?
            .label(*reason)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
    }
    if reasons.is_empty() {
        chart.draw_series(std::iter::once(Text::new(
            "no denials",
            (span / unit / 2.0, peak as f64 / 2.0),
            (FONT, 20),
        )))?;
    } else {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font((FONT, 15))
            .draw()?;
    }
    Ok(())
}

fn sweep_curve(area: &Area, rows: &[SweepRow]) -> Drawn {
    let point = |r: &SweepRow| {
        (
            100.0 * r.normal_denied_share.unwrap_or(0.0),
            100.0 * r.abuse_denied_share.unwrap_or(0.0),
        )
    };
    let points: Vec<(f64, f64)> = rows.iter().map(point).collect();
    let (x_max, y_max) = points
        .iter()
        .fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Sweep: abuse requests denied against normal requests denied (any reason)",
            (FONT, 22),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            0f64..(x_max * 1.2).max(0.1),
            0f64..(y_max * 1.1).clamp(1.0, 100.0),
        )?;
    chart
        .configure_mesh()
        .x_desc("normal requests denied (%)")
        .y_desc("abuse requests denied (%)")
        .label_style((FONT, 15))
        .draw()?;
    let blue = RGBColor(31, 119, 180);
    chart.draw_series(LineSeries::new(points.clone(), blue.stroke_width(2)))?;
    chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, blue.filled())))?;
    let room = (x_max * 1.2).max(0.1) * 0.14;
    let line = (y_max * 1.1).clamp(1.0, 100.0) * 0.05;
    let labels = sweep_labels(rows, &points, (room, line));
    // A label moved off its point is tied to it by a thin line, so it is never read as the
    // label of a point it ended up beside.
    chart.draw_series(
        labels
            .iter()
            .filter(|l| l.moved)
            .map(|l| PathElement::new(vec![l.point, l.at], blue.stroke_width(1))),
    )?;
    chart.draw_series(
        labels
            .into_iter()
            .map(|l| Text::new(l.text, l.at, (FONT, 15))),
    )?;
    Ok(())
}

/// A sweep point's label and where it goes.
#[derive(Debug)]
struct SweepLabel {
    text: String,
    /// The point it names.
    point: (f64, f64),
    /// Where the label is drawn.
    at: (f64, f64),
    /// Placed off its usual spot beside the point (drawn with a line to it).
    moved: bool,
}

/// One label per distinct point, naming every threshold that landed there ("0.2–0.4, 0.7":
/// thresholds that coincide need not be neighbours), placed right of its point, or, when that
/// spot would overlap a label already placed, at the nearest spot left of it or a whole line up
/// or down, on either side, that overlaps no label and is not beside another point (where it
/// would read as that point's; `room`: a label's width, `line`: its height, in the chart's
/// units).
fn sweep_labels(
    rows: &[SweepRow],
    points: &[(f64, f64)],
    (room, line): (f64, f64),
) -> Vec<SweepLabel> {
    let same = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 1e-3 && (a.1 - b.1).abs() < 1e-3;
    let mut groups: Vec<((f64, f64), Vec<usize>)> = Vec::new();
    for (i, p) in points.iter().enumerate() {
        match groups.iter_mut().find(|(at, _)| same(*at, *p)) {
            Some((_, members)) => members.push(i),
            None => groups.push((*p, vec![i])),
        }
    }
    let beside = |p: (f64, f64)| (p.0 + room * 0.05, p.1 + line * 0.4);
    let left_of = |p: (f64, f64)| (p.0 - room * 1.05, p.1 + line * 0.4);
    let overlaps =
        |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < room && (a.1 - b.1).abs() < line;
    let mut placed: Vec<SweepLabel> = Vec::new();
    for (g, (point, members)) in groups.iter().enumerate() {
        let text = threshold_runs(rows, members);
        let home = beside(*point);
        // Away from its point, a label must also keep off the spots beside other points.
        let free = |spot: (f64, f64)| {
            !placed.iter().any(|l| overlaps(l.at, spot))
                && (spot == home
                    || !groups.iter().enumerate().any(|(h, (other, _))| {
                        h != g
                            && (overlaps(beside(*other), spot) || overlaps(left_of(*other), spot))
                    }))
        };
        // Right of the point, then left of it, then 1 line down, right and left, 1 line up,
        // 2 down, ...: the search ends, since only finitely many spots are taken.
        let left = left_of(*point);
        let at = (0..)
            .flat_map(|k: i32| {
                let step = if k % 2 == 1 { -(k + 1) / 2 } else { k / 2 };
                let dy = f64::from(step) * line;
                [(home.0, home.1 + dy), (left.0, left.1 + dy)]
            })
            .find(|spot| free(*spot))
            .unwrap_or(home);
        placed.push(SweepLabel {
            text,
            point: *point,
            at,
            moved: at != home,
        });
    }
    placed
}

/// The thresholds of `members` (row indices, ascending), runs of neighbours written "a–b".
fn threshold_runs(rows: &[SweepRow], members: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut start = 0;
    for k in 0..members.len() {
        let run_ends = members.get(k + 1) != Some(&(members[k] + 1));
        if run_ends {
            let (first, last) = (rows[members[start]].threshold, rows[members[k]].threshold);
            parts.push(if start == k {
                format!("{first}")
            } else {
                format!("{first}–{last}")
            });
            start = k + 1;
        }
    }
    parts.join(", ")
}

fn sweep_unlabelled(area: &Area, rows: &[SweepRow]) -> Drawn {
    let low = rows.first().map_or(0.0, |r| r.threshold);
    let high = rows.last().map_or(1.0, |r| r.threshold);
    let peak = rows
        .iter()
        .map(|r| r.anomaly_denied)
        .max()
        .unwrap_or(0)
        .max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Sweep: requests denied by reason anomaly (no labels in the input)",
            (FONT, 22),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(low..high.max(low + 1e-6), 0f64..peak as f64 * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("anomaly threshold")
        .y_desc("anomaly denials")
        .label_style((FONT, 15))
        .draw()?;
    let red = color("anomaly");
    let points = rows.iter().map(|r| (r.threshold, r.anomaly_denied as f64));
    chart.draw_series(LineSeries::new(points, red.stroke_width(2)))?;
    Ok(())
}

fn note(area: &Area, text: &str) -> Drawn {
    area.draw_text(text, &(FONT, 20).into_font().color(&BLACK), (40, 40))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{SweepRow, sweep_labels};

    fn row(threshold: f64) -> SweepRow {
        SweepRow {
            threshold,
            subjects_flagged: 0,
            anomaly_denied: 0,
            abuse_denied_share: None,
            normal_denied_share: None,
            abuse_denied_anomaly_share: None,
            normal_denied_anomaly_share: None,
            normal_subjects_flagged: None,
            abuse_subjects_flagged: None,
        }
    }

    #[test]
    fn coinciding_points_share_one_label_and_near_labels_do_not_overlap() {
        let rows: Vec<SweepRow> = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6].map(row).into();
        // 0.1, 0.2 and 0.5 coincide; 0.3 and 0.4 sit a hair apart; 0.6 is far.
        let points = [
            (1.0, 50.0),
            (1.0, 50.0),
            (1.2, 50.5),
            (1.25, 50.6),
            (1.0, 50.0),
            (10.0, 90.0),
        ];
        let labels = sweep_labels(&rows, &points, (2.0, 5.0));
        let texts: Vec<&str> = labels.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["0.1–0.2, 0.5", "0.3", "0.4", "0.6"]);
        assert_apart(&labels, (2.0, 5.0));
        assert!(!labels[3].moved, "the far point keeps its spot");
    }

    /// No two labels overlap, and no moved label sits where another point's label would go.
    fn assert_apart(labels: &[super::SweepLabel], (room, line): (f64, f64)) {
        let home = |p: (f64, f64)| (p.0 + room * 0.05, p.1 + line * 0.4);
        for (i, a) in labels.iter().enumerate() {
            for (j, b) in labels.iter().enumerate() {
                if i == j {
                    continue;
                }
                let (p, q) = (a.at, b.at);
                let apart = (p.0 - q.0).abs() >= room || (p.1 - q.1).abs() >= line;
                assert!(i > j || apart, "{a:?} overlaps {b:?}");
                let (p, q) = (a.at, home(b.point));
                let elsewhere = (p.0 - q.0).abs() >= room || (p.1 - q.1).abs() >= line;
                assert!(!a.moved || elsewhere, "{a:?} sits beside {b:?}'s point");
            }
        }
    }

    #[test]
    fn a_label_pushed_off_its_point_never_lands_beside_another_point() {
        // A replay's sweep (0.5:0.95:0.15): three points close together, the last 6 points below.
        let rows: Vec<SweepRow> = [0.5, 0.65, 0.8, 0.95].map(row).into();
        let points = [(1.75, 57.7), (1.65, 56.7), (1.65, 55.4), (1.65, 49.7)];
        let spacing = (0.29, 3.2);
        let labels = sweep_labels(&rows, &points, spacing);
        assert_apart(&labels, spacing);
        assert!(!labels[0].moved);
        assert!(labels[1].moved && labels[2].moved, "{labels:?}");
    }
}
