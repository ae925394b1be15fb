//! The abuse model: turns a subject's [`Features`] into an abuse score in [0, 1].
//!
//! Two kinds, both trained with linfa by `ratewarden train` and stored as JSON
//! ([`file`] describes the format):
//! - `logistic` (supervised, labelled traffic): the score is a calibrated probability of
//!   abuse at the traffic mix it was trained on.
//! - `gmm` (unsupervised, unlabelled traffic): a Gaussian mixture; the score is the share of
//!   training traffic more typical than the subject (0.99 = rarer than 99 % of it).
//!
//! Either way the score is then bounded and weighed by the evidence behind it
//! ([`evidence`]), features outside the range the model was trained on are scored at the
//! range's edge and the subject reported novel ([`scaler`]), and a logistic score can be
//! taken apart feature by feature ([`explain`]).
//!
//! Scoring evaluates the stored parameters by hand (a few dozen multiplications a subject),
//! so a control cycle scores 100,000 subjects in a few milliseconds.

/// `println!` that never panics: `train | head` or a full disk must not cost the model being
/// trained, which is written after the figures are printed.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod archetypes;
pub mod command;
mod edges;
pub mod evaluate;
pub mod evidence;
mod explain;
mod file;
pub mod loao;
pub mod logistic;
pub mod mixture;
mod print;
mod reliability;
pub mod samples;
mod samples_out;
pub mod scaler;
pub mod traffic;
pub mod train;

pub use evaluate::Evaluation;
pub use evidence::Evidence;
pub use explain::{Contribution, Explanation};
pub use file::{FORMAT, FORMAT_VERSION, ModelError, Problem};

use crate::features::{FEATURE_COUNT, Features, SubjectFeatures};
use logistic::Logistic;
use mixture::Mixture;
use scaler::Scaler;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModelKind {
    Logistic,
    Gmm,
}

impl ModelKind {
    pub fn label(self) -> &'static str {
        match self {
            ModelKind::Logistic => "logistic",
            ModelKind::Gmm => "gmm",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for ModelKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "logistic" => Ok(ModelKind::Logistic),
            "gmm" => Ok(ModelKind::Gmm),
            other => Err(other.to_string()),
        }
    }
}

/// What produced a model (stored in the file for the model card and for audits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Training {
    /// The traffic file's name.
    pub data: String,
    pub seed: u64,
    /// Subjects and feature samples the parameters were fitted on (and calibrated on).
    pub subjects: u64,
    pub samples: u64,
    /// How samples were taken: the policy's window, interval and min_requests.
    pub sampling: String,
    /// The anomaly window the samples were taken over, in seconds (a window is never 0): a
    /// model judges best over the window it learnt from. Files written before it was stored
    /// have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<std::num::NonZeroU64>,
    pub trained_by: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scorer {
    Logistic(Logistic),
    Mixture(Mixture),
}

/// A loaded (or freshly trained) model. Cannot hold a NaN or a mismatched feature list.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    version: String,
    scaler: Scaler,
    scorer: Scorer,
    evidence: Evidence,
    training: Option<Training>,
    evaluation: Option<Evaluation>,
}

/// The share of a novel subject's requests its limits must have denied for its score to flag
/// it: a signal that owes nothing to the model.
pub const SECOND_SIGNAL_DENIED_RATIO: f64 = 0.05;

/// Or what it must have asked of its limits over the window (`limit_demand`), in allowances:
/// more than they allow is the limits' own judgement too. Without it a few refused requests of
/// a huge `cost` (each adds at most one allowance) make a subject novel in `limit_demand`
/// while its limits refused under 5 % of its requests, and asking more would end a flag.
pub const SECOND_SIGNAL_DEMAND: f64 = 1.0;

/// What the model says of one subject.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Assessment {
    /// The abuse score in [0, 1], after the evidence rule.
    pub score: f64,
    /// Some feature lies outside the range the training data covered.
    pub novel: bool,
    /// The policy's limits denied at least [`SECOND_SIGNAL_DENIED_RATIO`] of its requests, or
    /// it asked at least [`SECOND_SIGNAL_DEMAND`] times what they allow over the window.
    pub second_signal: bool,
}

impl Assessment {
    /// The novelty rule: the score of a novel subject flags it only with a second signal.
    pub fn score_counts(&self) -> bool {
        !self.novel || self.second_signal
    }

    /// Whether the daemon flags this subject at `threshold` (before `hold` and exemptions).
    pub fn flags_at(&self, threshold: f64) -> bool {
        self.score >= threshold && self.score_counts()
    }
}

impl Model {
    pub(crate) fn new(
        scaler: Scaler,
        scorer: Scorer,
        evidence: Evidence,
        training: Training,
    ) -> Model {
        let mut model = Model {
            version: String::new(),
            scaler,
            scorer,
            evidence,
            training: Some(training),
            evaluation: None,
        };
        // The version names the parameters: two files with one version score alike.
        model.version = model.computed_version();
        model
    }

    /// `<kind>-<8 hex digits>` of a hash of the file the model renders to without its
    /// version and evaluation: the parameters and the training record.
    fn computed_version(&self) -> String {
        let mut bare = self.clone();
        bare.version.clear();
        bare.evaluation = None;
        let digest = blake3::hash(file::render(&bare).as_bytes()).to_hex();
        format!("{}-{}", self.kind(), &digest[..8])
    }

    /// Whether the version names what the file holds. A version of the form `train` writes
    /// whose hash does not match means the file was edited after training: it scores unlike
    /// the model of that version, under its name. Any other version is a name an operator
    /// chose, and says nothing of the contents.
    pub fn version_matches(&self) -> bool {
        let of_trains_form = self.version.split_once('-').is_some_and(|(kind, hex)| {
            kind == self.kind().label()
                && hex.len() == 8
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
        });
        !of_trains_form || self.version == self.computed_version()
    }

    /// What to tell an operator when [`Model::version_matches`] does not hold.
    pub fn edited_warning(&self) -> Option<String> {
        (!self.version_matches()).then(|| {
            format!(
                "the model file was changed after training: it does not score as the model {} \
                 that it is named after; retrain it, or give it a version of your own",
                self.version
            )
        })
    }

    /// Reads and checks a model file.
    pub fn load(path: &Path) -> Result<Model, ModelError> {
        use std::io::Read;
        let read_error = |error| ModelError::Read {
            path: path.to_owned(),
            error,
        };
        // Looked at before opening: opening a pipe for reading waits for a writer.
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        if !metadata.is_file() {
            return Err(ModelError::NotAFile {
                path: path.to_owned(),
            });
        }
        if metadata.len() > file::MAX_FILE_BYTES {
            return Err(ModelError::TooLarge {
                path: path.to_owned(),
            });
        }
        let file = std::fs::File::open(path).map_err(read_error)?;
        let mut text = String::new();
        file.take(file::MAX_FILE_BYTES)
            .read_to_string(&mut text)
            .map_err(read_error)?;
        Model::from_json(&text).map_err(|problem| ModelError::Invalid {
            path: path.to_owned(),
            problem,
        })
    }

    pub fn from_json(text: &str) -> Result<Model, Problem> {
        file::parse(text)
    }

    pub fn to_json(&self) -> String {
        file::render(self)
    }

    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        std::fs::write(path, self.to_json()).map_err(|source| ModelError::Write {
            path: path.to_owned(),
            error: source,
        })
    }

    pub fn kind(&self) -> ModelKind {
        match self.scorer {
            Scorer::Logistic(_) => ModelKind::Logistic,
            Scorer::Mixture(_) => ModelKind::Gmm,
        }
    }

    /// `<kind>-<8 hex digits of a hash of the parameters and the training record>`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The anomaly window the model was trained over, when its file says.
    pub fn trained_window(&self) -> Option<std::time::Duration> {
        let seconds = self.training.as_ref()?.window_seconds?;
        Some(std::time::Duration::from_secs(seconds.get()))
    }

    pub fn training(&self) -> Option<&Training> {
        self.training.as_ref()
    }

    /// The held-out metrics recorded when the model was trained.
    pub fn evaluation(&self) -> Option<&Evaluation> {
        self.evaluation.as_ref()
    }

    pub(crate) fn set_evaluation(&mut self, evaluation: Evaluation) {
        self.evaluation = Some(evaluation);
    }

    /// Adds results measured after training (they do not change the version).
    pub(crate) fn evaluation_mut(&mut self) -> Option<&mut Evaluation> {
        self.evaluation.as_mut()
    }

    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }

    /// The model's own logit of a standardised row, before the evidence rule.
    #[inline]
    fn raw_logit(&self, x: &[f64; FEATURE_COUNT]) -> f64 {
        match &self.scorer {
            Scorer::Logistic(l) => l.logit(x),
            Scorer::Mixture(m) => {
                let p = m.score(x).clamp(1e-9, 1.0 - 1e-9);
                (p / (1.0 - p)).ln()
            }
        }
    }

    /// The score of one subject from its features and the requests behind them.
    #[inline]
    pub fn assess(&self, observed: &SubjectFeatures) -> Assessment {
        let x = self.scaler.apply(&observed.features);
        let logit = self.evidence.apply(self.raw_logit(&x), observed.requests);
        let score = logistic::sigmoid(logit);
        Assessment {
            score: if score.is_nan() {
                0.0
            } else {
                score.clamp(0.0, 1.0)
            },
            novel: self.is_novel(&observed.features),
            second_signal: observed.features.denied_ratio >= SECOND_SIGNAL_DENIED_RATIO
                || observed.features.limit_demand >= SECOND_SIGNAL_DEMAND,
        }
    }

    /// Whether the model would extrapolate towards abuse: some feature lies outside its
    /// training range on the side that raises a linear model's score (either side for a model
    /// with pair weights or a mixture, whose direction is not one sign). A heavy client seen
    /// from fewer addresses than anyone in training is not novel: that only lowers its score.
    pub fn is_novel(&self, features: &Features) -> bool {
        self.scaler
            .outside(features)
            .any(|(j, above)| match &self.scorer {
                Scorer::Logistic(l) if l.interactions.is_empty() => {
                    let w = l.weights[j];
                    (above && w > 0.0) || (!above && w < 0.0)
                }
                _ => true,
            })
    }

    /// The abuse score of one subject, in [0, 1].
    #[inline]
    pub fn score(&self, observed: &SubjectFeatures) -> f64 {
        self.assess(observed).score
    }

    /// Scores many subjects (a control cycle's worth), in order.
    pub fn score_many(&self, observed: &[SubjectFeatures]) -> Vec<f64> {
        observed.iter().map(|o| self.score(o)).collect()
    }
}
