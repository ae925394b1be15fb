//! How much a score may say given how many requests stand behind it.
//!
//! Features estimated from a handful of requests are weak evidence: twenty page loads in ten
//! seconds read as a machine if taken at face value. So the model's logit is bounded (no
//! certainty from any single pattern) and then pulled towards the prior in proportion to how
//! little was seen:
//!
//! ```text
//! logit = prior + w · (clamp(z, -max_logit, max_logit) - prior),   w = n / (n + half_weight)
//! ```
//!
//! where `z` is the model's own logit and `n` the subject's requests in the window. A subject
//! with `half_weight` requests gets half the model's say, whatever `anomaly.window` and
//! `anomaly.min_requests` an operator picks. The numbers are stored in the model file.

use serde::{Deserialize, Serialize};

/// The model's bound and the prior a score is pulled towards.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Requests at which the model's logit carries half its weight.
    pub half_weight_requests: f64,
    /// The largest logit the model may give, either way (8: a probability of 0.9997).
    pub max_logit: f64,
    /// The logit a subject with no requests would get: the training data's abuse share.
    pub prior_logit: f64,
}

/// What this build trains with.
pub const HALF_WEIGHT_REQUESTS: f64 = 30.0;
pub const MAX_LOGIT: f64 = 8.0;

impl Evidence {
    /// The defaults, with the prior at the share `abuse_share` of abuse in the training rows.
    pub fn with_prior(abuse_share: f64) -> Evidence {
        let p = abuse_share.clamp(1e-3, 0.5);
        Evidence {
            half_weight_requests: HALF_WEIGHT_REQUESTS,
            max_logit: MAX_LOGIT,
            prior_logit: (p / (1.0 - p)).ln(),
        }
    }

    /// The weight of the model's say after `requests` requests, in [0, 1).
    #[inline]
    pub fn weight(&self, requests: u64) -> f64 {
        let n = requests as f64;
        n / (n + self.half_weight_requests)
    }

    /// The model's logit `z` bounded and pulled towards the prior.
    #[inline]
    pub fn apply(&self, z: f64, requests: u64) -> f64 {
        let bounded = z.clamp(-self.max_logit, self.max_logit);
        self.prior_logit + self.weight(requests) * (bounded - self.prior_logit)
    }

    /// Refuses numbers that would make scores meaningless; the message names the field.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if !(self.half_weight_requests.is_finite() && self.half_weight_requests >= 0.0) {
            return Err(("half_weight_requests", "must be a finite number, 0 or more"));
        }
        if !(self.max_logit.is_finite() && self.max_logit > 0.0) {
            return Err(("max_logit", "must be a finite number above 0"));
        }
        if !self.prior_logit.is_finite() || self.prior_logit.abs() > self.max_logit {
            return Err(("prior_logit", "must be a finite number within ±max_logit"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_the_say_at_half_weight_requests() {
        let e = Evidence {
            half_weight_requests: 30.0,
            max_logit: 8.0,
            prior_logit: -2.0,
        };
        assert_eq!(e.apply(100.0, 30), -2.0 + 0.5 * 10.0);
        assert_eq!(e.apply(4.0, 0), -2.0);
        assert!(e.apply(100.0, u64::MAX) <= 8.0);
    }
}
