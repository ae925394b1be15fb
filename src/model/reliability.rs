//! `train --reliability-plot`: the reliability diagram of the held-out scores as a PNG (mean
//! score against the abuse share in each score bin, with the bins' sample counts), so the
//! model card shows whether a score of 0.8 means what it says. The font is DejaVu Sans,
//! embedded: no system font libraries.

use super::evaluate::Evaluation;
use plotters::prelude::*;
use std::error::Error;
use std::path::Path;

const FONT: &str = "sans-serif";
const SIZE: (u32, u32) = (800, 640);

pub fn draw(evaluation: &Evaluation, path: &Path) -> Result<(), String> {
    plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "the embedded font does not load".to_owned())?;
    draw_diagram(evaluation, path).map_err(|e| crate::files::unwritable(path, e.to_string()))
}

fn draw_diagram(evaluation: &Evaluation, path: &Path) -> Result<(), Box<dyn Error>> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Reliability on held-out subjects ({} samples, ECE {:.3})",
                evaluation.samples, evaluation.expected_calibration_error
            ),
            (FONT, 20),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("mean score in the bin")
        .y_desc("share of abuse samples in the bin")
        .label_style((FONT, 14))
        .draw()?;
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], &BLACK.mix(0.4)))?
        .label("perfect calibration")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.4)));
    let bins: Vec<_> = evaluation
        .calibration
        .iter()
        .filter(|b| b.samples > 0)
        .collect();
    let blue = RGBColor(31, 119, 180);
    chart
        .draw_series(LineSeries::new(
            bins.iter().map(|b| (b.mean_score, b.abuse_share)),
            blue.stroke_width(2),
        ))?
        .label("model")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], blue.stroke_width(2)));
    // Each bin's count beside its point: a bin of 4 samples says little.
    chart.draw_series(bins.iter().map(|b| {
        EmptyElement::at((b.mean_score, b.abuse_share))
            + Circle::new((0, 0), 4, blue.filled())
            + Text::new(format!("n={}", b.samples), (6, -14), (FONT, 12))
    }))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK.mix(0.3))
        .background_style(WHITE)
        .label_font((FONT, 14))
        .draw()?;
    root.present()?;
    Ok(())
}
