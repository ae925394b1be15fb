//! A load factor as the control loop last measured it, read against the live thresholds.
//!
//! The control loop samples a source once per `adaptive.interval`; the thresholds an operator
//! sets through the admin API apply from the next decision. So what the loop publishes is the
//! state behind its factor (the hysteresis band and the smoothed signal, or an upstream
//! gradient's step), and each decision turns it into a factor with the thresholds in force.

use super::Thresholds;

/// Where the smoothed load of a CPU or Prometheus source is, with hysteresis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    Normal,
    High,
    Low,
}

impl Band {
    /// The band of the smoothed load `s` under `t`, coming from `self`: above `high` it is
    /// high, and back to normal only at `high - margin` or below; below `low` it is low, and
    /// back only at `low + margin` or above. The margin is 0.05, or a quarter of `high - low`
    /// when that is narrower, so the bands never overlap.
    pub fn next(self, s: f64, t: &Thresholds) -> Band {
        let margin = (0.05f64).min((t.load_high - t.load_low) / 4.0);
        match self {
            _ if s > t.load_high => Band::High,
            _ if s < t.load_low => Band::Low,
            Band::High if s > t.load_high - margin => Band::High,
            Band::Low if s < t.load_low + margin => Band::Low,
            _ => Band::Normal,
        }
    }

    pub fn factor(self, t: &Thresholds) -> f64 {
        match self {
            Band::Normal => 1.0,
            Band::High => t.load_high_factor,
            Band::Low => t.load_low_factor,
        }
    }
}

/// What a load factor is made of, so that it can be read against the live thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LiveLoad {
    /// A factor as it stands (pinned, or a source that gives 1.0 without a reading).
    Fixed(f64),
    /// An upstream gradient's factor: moved in steps, kept within the live bounds.
    Bounded(f64),
    /// A CPU or Prometheus source: the band of its smoothed value (none before a sample).
    Banded { band: Band, smoothed: Option<f64> },
}

impl LiveLoad {
    pub fn factor(&self, t: &Thresholds) -> f64 {
        match *self {
            LiveLoad::Fixed(factor) => factor,
            LiveLoad::Bounded(factor) => {
                factor.clamp(t.load_high_factor.min(1.0), t.load_low_factor.max(1.0))
            }
            LiveLoad::Banded { band, smoothed } => {
                smoothed.map_or(band, |s| band.next(s, t)).factor(t)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thresholds() -> Thresholds {
        Thresholds::default()
    }

    #[test]
    fn a_band_reads_the_live_factors_and_bounds() {
        let mut t = thresholds();
        let busy = LiveLoad::Banded {
            band: Band::High,
            smoothed: Some(0.9),
        };
        assert_eq!(busy.factor(&t), 0.5);
        t.load_high_factor = 0.25;
        assert_eq!(busy.factor(&t), 0.25);
        // A higher `high` puts 0.9 back in the normal band.
        t.load_high = 0.97;
        assert_eq!(busy.factor(&t), 1.0);
        // Within the margin below `high`, a high band stays high.
        let hovering = LiveLoad::Banded {
            band: Band::High,
            smoothed: Some(0.94),
        };
        assert_eq!(hovering.factor(&t), 0.25);
        let unsampled = LiveLoad::Banded {
            band: Band::Normal,
            smoothed: None,
        };
        assert_eq!(unsampled.factor(&t), 1.0);
    }

    #[test]
    fn a_gradient_keeps_within_the_live_bounds_and_a_fixed_factor_as_it_is() {
        let mut t = thresholds();
        assert_eq!(LiveLoad::Bounded(0.6).factor(&t), 0.6);
        t.load_high_factor = 0.75;
        assert_eq!(LiveLoad::Bounded(0.6).factor(&t), 0.75);
        t.load_low_factor = 1.2;
        assert_eq!(LiveLoad::Bounded(1.4).factor(&t), 1.2);
        assert_eq!(LiveLoad::Fixed(0.6).factor(&t), 0.6);
    }
}
