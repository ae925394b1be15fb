//! PNG previews of the dashboards' main panels, drawn with plotters from a real Prometheus's
//! answers to the panels' own queries, so the docs can show what a dashboard shows without a
//! Grafana. The font is DejaVu Sans, embedded (the `dejavu` crate): no system font libraries.

use crate::common::prometheus::{Prometheus, Series};
use crate::panels::{self, PanelQuery};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use std::error::Error;
use std::path::Path;

const FONT: &str = "sans-serif";
const WIDTH: u32 = 1500;
const HEIGHT: u32 = 940;
/// At most this many series per chart (the largest by total), so legends stay legible.
const MAX_SERIES: usize = 8;

type Drawn = Result<(), Box<dyn Error>>;

/// The run being drawn: its Prometheus, time range (seconds) and marked events.
pub struct Run<'a> {
    pub prometheus: &'a Prometheus,
    pub start: f64,
    pub end: f64,
    /// (seconds since `start`, short name): drawn as vertical markers.
    pub events: &'a [(f64, &'static str)],
}

pub fn register_fonts() {
    // Registering twice is harmless; an error would mean the embedded font is broken.
    plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
        .unwrap_or_else(|_| panic!("DejaVu Sans is a valid font"));
    plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold())
        .unwrap_or_else(|_| panic!("DejaVu Sans Bold is a valid font"));
}

/// Draws `titles` (panels of dashboard `stem`, in a grid of `rows` x `cols`) into `out`.
pub fn draw(run: &Run, stem: &str, titles: &[&str], (rows, cols): (usize, usize), out: &Path) {
    register_fonts();
    draw_dashboard(run, stem, titles, (rows, cols), out)
        .unwrap_or_else(|e| panic!("drawing {}: {e}", out.display()));
}

fn draw_dashboard(
    run: &Run,
    stem: &str,
    titles: &[&str],
    grid: (usize, usize),
    out: &Path,
) -> Drawn {
    let dashboard = panels::load(stem);
    let queries = panels::queries(stem);
    let root = BitMapBackend::new(out, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let heading = format!(
        "{}: main panels from a real Prometheus ({:.0} s of test traffic, all rules and tiers)",
        dashboard["title"].as_str().unwrap_or(stem),
        run.end - run.start
    );
    let body = root.titled(&heading, (FONT, 24).into_font().style(FontStyle::Bold))?;
    for (area, title) in body.split_evenly(grid).iter().zip(titles) {
        let panel = panels::panels(&dashboard)
            .into_iter()
            .find(|p| p["title"] == *title)
            .ok_or_else(|| format!("no panel {title:?} in dashboards/{stem}.json"))?;
        let targets: Vec<&PanelQuery> = queries.iter().filter(|q| q.panel == *title).collect();
        match panel["type"].as_str() {
            Some("heatmap") => heatmap(run, area, panel, &targets)?,
            Some("bargauge") => bars(run, area, panel, &targets)?,
            _ => lines(run, area, panel, &targets)?,
        }
    }
    root.present()?;
    Ok(())
}

fn unit(panel: &Value) -> &str {
    panel["fieldConfig"]["defaults"]["unit"]
        .as_str()
        .unwrap_or("short")
}

/// A value as Grafana's unit would show it.
fn format_value(unit: &str, v: f64) -> String {
    match unit {
        _ if v == 0.0 => "0".to_owned(),
        "percentunit" => format!("{:.0} %", v * 100.0),
        "s" if v < 0.001 => format!("{:.0} µs", v * 1e6),
        "s" if v < 1.0 => format!("{:.1} ms", v * 1e3),
        "s" => format!("{v:.1} s"),
        "reqps" => format!("{v:.1} req/s"),
        "ops" => format!("{v:.1}/s"),
        _ => format!("{v:.1}"),
    }
}

/// Grafana's legend: `{{label}}` replaced by the series' value of that label.
fn legend(format: &str, series: &Series) -> String {
    let mut text = format.to_owned();
    for (name, value) in &series.labels {
        text = text.replace(&format!("{{{{{name}}}}}"), value.as_str().unwrap_or(""));
    }
    text
}

fn color(name: &str, index: usize) -> RGBColor {
    match name {
        "allowed" | "policy success" => RGBColor(55, 135, 45),
        "denied" | "policy error" | "quota" => RGBColor(196, 22, 42),
        "shadow_denied" | "burst" => RGBColor(255, 120, 10),
        "load" => RGBColor(138, 56, 214),
        _ => {
            let c = Palette99::pick(index).to_rgba();
            RGBColor(c.0, c.1, c.2)
        }
    }
}

fn caption<'a>(panel: &'a Value) -> (&'a str, TextStyle<'a>) {
    (
        panel["title"].as_str().unwrap_or(""),
        (FONT, 17).into_font().style(FontStyle::Bold).into(),
    )
}

fn no_data(area: &DrawingArea<BitMapBackend, plotters::coord::Shift>, panel: &Value) -> Drawn {
    let message = "No data in this run";
    let (title, style) = caption(panel);
    let inner = area.margin(6, 6, 10, 10).titled(title, style)?;
    let (w, h) = inner.dim_in_pixel();
    inner.draw(&Rectangle::new(
        [(0, 0), (w as i32 - 1, h as i32 - 1)],
        BLACK.mix(0.2),
    ))?;
    let style = (FONT, 16)
        .into_font()
        .color(&BLACK.mix(0.6))
        .pos(Pos::new(HPos::Center, VPos::Center));
    inner.draw(&Text::new(message, (w as i32 / 2, h as i32 / 2), style))?;
    Ok(())
}

/// A time series panel: one line per series of every target.
fn lines(
    run: &Run,
    area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    panel: &Value,
    targets: &[&PanelQuery],
) -> Drawn {
    let range = format!("{:.0}s", run.end - run.start);
    let mut drawn: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for target in targets {
        let expr = target.substituted(&range);
        for series in run.prometheus.query_range(&expr, run.start, run.end, 1.0) {
            let points: Vec<(f64, f64)> = series
                .samples
                .iter()
                .map(|&(t, v)| (t - run.start, v))
                .filter(|(_, v)| v.is_finite())
                .collect();
            drawn.push((legend(&target.legend, &series), points));
        }
    }
    let total = |p: &[(f64, f64)]| p.iter().map(|(_, v)| v.abs()).sum::<f64>();
    drawn.sort_by(|a, b| total(&b.1).total_cmp(&total(&a.1)));
    drawn.retain(|(_, p)| total(p) > 0.0);
    drawn.truncate(MAX_SERIES);
    if drawn.is_empty() {
        return no_data(area, panel);
    }
    let unit = unit(panel);
    let top = drawn
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, v)| *v))
        .fold(0.0f64, f64::max)
        * 1.25;
    let top = if unit == "percentunit" && top <= 1.0 {
        top.max(0.05)
    } else {
        top.max(1e-6)
    };
    let duration = run.end - run.start;
    let (title, style) = caption(panel);
    let mut chart = ChartBuilder::on(area)
        .caption(title, style)
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(78)
        .build_cartesian_2d(0f64..duration, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("seconds into the run")
        .x_labels(8)
        .y_labels(6)
        .y_label_formatter(&|v| format_value(unit, *v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 12))
        .light_line_style(BLACK.mix(0.05))
        .draw()?;
    // Events as vertical lines, their names on three staggered levels (they are seconds
    // apart).
    for (i, &(at, name)) in run.events.iter().enumerate() {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(at, 0.0), (at, top)],
            BLACK.mix(0.25).stroke_width(1),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            name,
            (
                at + duration * 0.005,
                top * (0.985 - 0.045 * (i % 3) as f64),
            ),
            (FONT, 11).into_font().color(&BLACK.mix(0.6)),
        )))?;
    }
    for (index, (name, points)) in drawn.iter().enumerate() {
        let c = color(name, index);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .margin(14)
        .label_font((FONT, 12))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

/// A heatmap of cumulative histogram buckets (`le`): one column per step, one cell per bucket,
/// darker for more observations.
fn heatmap(
    run: &Run,
    area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    panel: &Value,
    targets: &[&PanelQuery],
) -> Drawn {
    let range = format!("{:.0}s", run.end - run.start);
    let Some(target) = targets.first() else {
        return no_data(area, panel);
    };
    let mut buckets: Vec<(f64, Vec<(f64, f64)>)> = run
        .prometheus
        .query_range(&target.substituted(&range), run.start, run.end, 1.0)
        .into_iter()
        .filter_map(|s| {
            let le: f64 = s.label("le").parse().ok()?;
            le.is_finite().then_some((le, s.samples))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Cumulative counts to counts per bucket.
    let mut cells = Vec::new();
    let mut max = 0.0f64;
    for i in 0..buckets.len() {
        let low = if i == 0 { 0.0 } else { buckets[i - 1].0 };
        for (j, &(t, v)) in buckets[i].1.iter().enumerate() {
            let below = if i == 0 {
                0.0
            } else {
                buckets[i - 1].1.get(j).map_or(0.0, |s| s.1)
            };
            let count = (v - below).max(0.0);
            if count.is_finite() && count > 0.0 {
                max = max.max(count);
                cells.push((t - run.start, low, buckets[i].0, count));
            }
        }
    }
    if cells.is_empty() {
        return no_data(area, panel);
    }
    let duration = run.end - run.start;
    let (title, style) = caption(panel);
    let mut chart = ChartBuilder::on(area)
        .caption(title, style)
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(78)
        .build_cartesian_2d(0f64..duration, 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("seconds into the run")
        .y_label_formatter(&|v| format!("score {v:.1}"))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 12))
        .draw()?;
    chart.draw_series(cells.into_iter().map(|(t, low, high, count)| {
        let shade = (count / max).sqrt();
        let c = RGBColor(
            255,
            (230.0 - 150.0 * shade) as u8,
            (200.0 - 190.0 * shade) as u8,
        );
        Rectangle::new([(t, low), (t + 1.0, high)], c.filled())
    }))?;
    Ok(())
}

/// A bar gauge: one horizontal bar per series of an instant query at the end of the run.
fn bars(
    run: &Run,
    area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    panel: &Value,
    targets: &[&PanelQuery],
) -> Drawn {
    let range = format!("{:.0}s", run.end - run.start);
    let mut values: Vec<(String, f64)> = Vec::new();
    for target in targets {
        for series in run.prometheus.query(&target.substituted(&range), run.end) {
            if let Some(&(_, v)) = series.samples.first().filter(|(_, v)| v.is_finite()) {
                values.push((legend(&target.legend, &series), v));
            }
        }
    }
    values.sort_by(|a, b| b.1.total_cmp(&a.1));
    values.truncate(MAX_SERIES);
    if values.is_empty() {
        return no_data(area, panel);
    }
    let unit = unit(panel);
    let steps = &panel["fieldConfig"]["defaults"]["thresholds"]["steps"];
    let step = |i: usize| steps[i]["value"].as_f64().unwrap_or(f64::INFINITY);
    let n = values.len();
    let names: Vec<String> = values.iter().map(|(name, _)| name.clone()).collect();
    let (title, style) = caption(panel);
    let mut chart = ChartBuilder::on(area)
        .caption(title, style)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(140)
        .build_cartesian_2d(0f64..1.08f64, -0.6f64..(n as f64 - 0.4))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 0.01 && i >= 0.0 && (i as usize) < n {
                names[n - 1 - i as usize].clone()
            } else {
                String::new()
            }
        })
        .x_labels(6)
        .x_label_formatter(&|v| format_value(unit, *v))
        .light_line_style(TRANSPARENT)
        .label_style((FONT, 12))
        .draw()?;
    chart.draw_series(values.iter().enumerate().map(|(i, (_, v))| {
        let y = (n - 1 - i) as f64;
        let c = if *v >= step(2) {
            RGBColor(196, 22, 42)
        } else if *v >= step(1) {
            RGBColor(224, 180, 0)
        } else {
            RGBColor(55, 135, 45)
        };
        Rectangle::new([(0.0, y - 0.35), (v.clamp(0.0, 1.0), y + 0.35)], c.filled())
    }))?;
    chart.draw_series(values.iter().enumerate().map(|(i, (_, v))| {
        let y = (n - 1 - i) as f64;
        Text::new(
            format_value(unit, *v),
            (v.clamp(0.0, 0.85) + 0.01, y + 0.1),
            (FONT, 12).into_font(),
        )
    }))?;
    Ok(())
}
