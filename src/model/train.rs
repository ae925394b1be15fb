//! Fitting a model on feature samples and measuring it on subjects it has not seen.
//!
//! Subjects (not samples: one subject's samples are alike) are shuffled with the seed and
//! split, normal and abusive separately so each part holds both: 60 % fit the parameters,
//! 20 % calibrate (Platt scaling for `logistic`; the `gmm` kind fits on these too, it needs
//! no calibration), 20 % are held out and give the metrics stored in the model file.

pub use super::archetypes::{ArchetypeResult, by_archetype};
use super::evaluate::{Evaluation, evaluate};
use super::evidence::Evidence;
use super::loao::leave_one_archetype_out;
use super::logistic::Logistic;
use super::mixture::{MAX_COMPONENTS, Mixture};
use super::samples::{Sample, Samples};
use super::scaler::{DEFAULT_TRANSFORMS, Scaler};
use super::{Model, ModelKind, Scorer, Training};
use crate::features::{FEATURE_COUNT, Features, SubjectFeatures, TOP_SET_BY_REQUESTS};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// The most rows the mixture is fitted on (EM is the slow part); drawn evenly at random.
const MAX_MIXTURE_ROWS: usize = 40_000;

/// The most rows a logistic model is fitted on (and half as many calibrate it).
const MAX_LOGISTIC_ROWS: usize = 20_000;

/// The share of abuse a `gmm` model's scores are pulled towards with little evidence (it
/// learns from unlabelled traffic, so it cannot know the real share).
const GMM_PRIOR_SHARE: f64 = 0.05;

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("no feature samples: no subject reached min_requests in the window")]
    NoSamples,
    #[error("the logistic kind needs labelled traffic (a `label` on each line)")]
    Unlabelled,
    #[error(
        "the logistic kind needs normal and abusive subjects with at least min_requests in a window in both the fitting and the calibration part (60 % and 20 % of the subjects, split by --seed), and one of them has only one kind: train on more abusive subjects, or try another --seed"
    )]
    OneClass,
    #[error(
        "the gmm kind needs at least {needed} feature samples (10 per component, --components {components}) in the fitting and calibration part (80 % of the subjects, split by --seed), and there are {rows}: train on longer or busier traffic, or ask for fewer components"
    )]
    TooFewRows {
        rows: usize,
        needed: usize,
        components: usize,
    },
    #[error("components must be 1 to {MAX_COMPONENTS}")]
    Components,
    #[error("logistic regression failed: {0}")]
    Logistic(#[from] linfa_logistic::error::Error),
    #[error("Gaussian mixture failed: {0}")]
    Mixture(#[from] linfa_clustering::GmmError),
    #[error("the fitted model is degenerate: {0}")]
    Degenerate(String),
}

#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub kind: ModelKind,
    pub seed: u64,
    /// The threshold the held-out precision and recall are measured at.
    pub threshold: f64,
    /// Gaussians in a `gmm` model.
    pub components: usize,
    /// The data file's name and how it was sampled (stored in the model).
    pub data: String,
    pub sampling: String,
    /// The anomaly window the samples were taken over (stored in the model).
    pub window: Option<std::time::Duration>,
    /// Fit pair weights (`x_i · x_j`) besides one weight per feature (`logistic`).
    pub pairs: bool,
    /// Columns the model is fitted without (their weight is 0 and they never make a subject
    /// novel), by index into [`crate::features::FEATURE_NAMES`].
    pub ignore: Vec<usize>,
    /// Also fit one model per archetype without it, and score that archetype (slow: one fit
    /// per archetype).
    pub leave_one_archetype_out: bool,
}

/// A trained model and what was measured on the held-out subjects.
#[derive(Debug)]
pub struct TrainReport {
    pub model: Model,
    pub held_out: Evaluation,
    /// The logistic kind before Platt scaling, on the same held-out subjects.
    pub uncalibrated: Option<Evaluation>,
    /// Subjects in the fit, calibration and held-out parts.
    pub split: [usize; 3],
    /// Held-out results per archetype (when the data names them).
    pub archetypes: Vec<ArchetypeResult>,
}

/// Which part of the split each subject is in: 0 fit, 1 calibrate, 2 held out.
pub fn split_subjects(samples: &Samples, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut part = vec![0u8; samples.subjects.len()];
    for abusive in [false, true] {
        let mut group: Vec<usize> = (0..samples.subjects.len())
            .filter(|&i| samples.subjects[i].abuse == abusive)
            .collect();
        group.shuffle(&mut rng);
        let n = group.len();
        for (rank, &i) in group.iter().enumerate() {
            part[i] = match rank * 10 / n.max(1) {
                0..=5 => 0,
                6 | 7 => 1,
                _ => 2,
            };
        }
    }
    part
}

pub fn train(samples: &Samples, options: &TrainOptions) -> Result<TrainReport, TrainError> {
    if samples.samples.is_empty() {
        return Err(TrainError::NoSamples);
    }
    let part = split_subjects(samples, options.seed);
    let in_part = |p: u8| -> Vec<&Sample> {
        samples
            .samples
            .iter()
            .filter(|s| part[s.subject as usize] == p)
            .collect()
    };
    let (fit, calibrate, held_out) = (in_part(0), in_part(1), in_part(2));
    let split = [0u8, 1, 2].map(|p| part.iter().filter(|&&x| x == p).count());
    let fitted = fit_parts(
        samples.labelled,
        &fit,
        &calibrate,
        options,
        split[0] + split[1],
    )?;
    let mut model = fitted.model;
    let mut held_out_eval = measure(&model, &held_out, options.threshold);
    if options.leave_one_archetype_out {
        held_out_eval.leave_one_archetype_out =
            leave_one_archetype_out(samples, &part, options, |_| {})?;
    }
    model.set_evaluation(held_out_eval.clone());
    let scores = model.score_many(&observed(&held_out));
    Ok(TrainReport {
        uncalibrated: fitted
            .uncalibrated
            .as_ref()
            .map(|m| measure(m, &held_out, options.threshold)),
        archetypes: by_archetype(samples, &held_out, &scores, options.threshold),
        model,
        held_out: held_out_eval,
        split,
    })
}

/// A model fitted on some samples (and, for `logistic`, the same before calibration).
pub struct Fitted {
    pub model: Model,
    pub uncalibrated: Option<Model>,
}

/// Up to `limit` of `rows`, drawn evenly at random: one subject's samples ten seconds apart
/// are nearly alike, so a sample of them fits as well, in a fraction of the time.
fn at_most<'a>(rows: &[&'a Sample], limit: usize, seed: u64) -> Vec<&'a Sample> {
    let mut rows = rows.to_vec();
    if rows.len() > limit {
        rows.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        rows.truncate(limit);
    }
    rows
}

/// Fits a model of `options.kind` on `fit` (and calibrates it on `calibrate`).
pub fn fit_parts(
    labelled: bool,
    fit: &[&Sample],
    calibrate: &[&Sample],
    options: &TrainOptions,
    subjects: usize,
) -> Result<Fitted, TrainError> {
    match options.kind {
        ModelKind::Logistic if !labelled => Err(TrainError::Unlabelled),
        ModelKind::Logistic => fit_logistic(fit, calibrate, options, subjects),
        ModelKind::Gmm => fit_mixture(fit, calibrate, options, subjects),
    }
}

fn features(rows: &[&Sample]) -> Vec<Features> {
    rows.iter().map(|s| s.features).collect()
}

fn labels(rows: &[&Sample]) -> Vec<bool> {
    rows.iter().map(|s| s.abuse).collect()
}

/// The supervised kind: a logistic model on `fit`, Platt-calibrated on `calibrate`; ignored
/// features get weight 0 and a range as wide as their domain.
fn fit_logistic(
    fit: &[&Sample],
    calibrate: &[&Sample],
    options: &TrainOptions,
    subjects: usize,
) -> Result<Fitted, TrainError> {
    let has_both = |rows: &[&Sample]| rows.iter().any(|s| s.abuse) && rows.iter().any(|s| !s.abuse);
    if !has_both(fit) || !has_both(calibrate) {
        return Err(TrainError::OneClass);
    }
    let fit = at_most(fit, MAX_LOGISTIC_ROWS, options.seed);
    let calibrate = at_most(calibrate, MAX_LOGISTIC_ROWS / 2, options.seed);
    let mut scaler = Scaler::fit(DEFAULT_TRANSFORMS, &features(&fit));
    scaler.snap_to_domain();
    for j in TOP_SET_BY_REQUESTS {
        scaler.widen_top(j);
    }
    for &j in &options.ignore {
        scaler.widen(j);
    }
    let rows = |r: &[&Sample]| -> Vec<[f64; FEATURE_COUNT]> {
        r.iter()
            .map(|s| {
                let mut x = scaler.apply(&s.features);
                for &j in &options.ignore {
                    x[j] = 0.0;
                }
                x
            })
            .collect()
    };
    let raw = Logistic::fit(&rows(&fit), &labels(&fit), options.pairs)?;
    let raw = Logistic {
        weights: std::array::from_fn(|j| {
            if options.ignore.contains(&j) {
                0.0
            } else {
                raw.weights[j]
            }
        }),
        ..raw
    };
    let calibrated = raw.calibrated(&rows(&calibrate), &labels(&calibrate))?;
    let abuse_share = fit.iter().filter(|s| s.abuse).count() as f64 / fit.len().max(1) as f64;
    let evidence = Evidence::with_prior(abuse_share);
    let fitted_on = fit.len() + calibrate.len();
    Ok(Fitted {
        uncalibrated: Some(Model::new(
            scaler.clone(),
            Scorer::Logistic(raw),
            evidence,
            training(options, 0, 0),
        )),
        model: Model::new(
            scaler,
            Scorer::Logistic(calibrated),
            evidence,
            training(options, subjects, fitted_on),
        ),
    })
}

/// The unsupervised kind: a Gaussian mixture of every sample, labels unused.
fn fit_mixture(
    fit: &[&Sample],
    calibrate: &[&Sample],
    options: &TrainOptions,
    subjects: usize,
) -> Result<Fitted, TrainError> {
    if options.components == 0 || options.components > MAX_COMPONENTS {
        return Err(TrainError::Components);
    }
    let pool: Vec<&Sample> = fit.iter().chain(calibrate).copied().collect();
    let mut scaler = Scaler::fit(DEFAULT_TRANSFORMS, &features(&pool));
    scaler.snap_to_domain();
    for j in TOP_SET_BY_REQUESTS {
        scaler.widen_top(j);
    }
    let pool = at_most(&pool, MAX_MIXTURE_ROWS, options.seed);
    let rows: Vec<[f64; FEATURE_COUNT]> = pool.iter().map(|s| scaler.apply(&s.features)).collect();
    let mixture = Mixture::fit(&rows, options.components)?;
    let evidence = Evidence::with_prior(GMM_PRIOR_SHARE);
    Ok(Fitted {
        model: Model::new(
            scaler,
            Scorer::Mixture(mixture),
            evidence,
            training(options, subjects, rows.len()),
        ),
        uncalibrated: None,
    })
}

/// The samples as the control loop scores them.
pub fn observed(rows: &[&Sample]) -> Vec<SubjectFeatures> {
    rows.iter().map(|s| s.observed()).collect()
}

/// A model's metrics on `rows` at `threshold`.
pub fn measure(model: &Model, rows: &[&Sample], threshold: f64) -> Evaluation {
    let scores = model.score_many(&observed(rows));
    let labels: Vec<bool> = rows.iter().map(|s| s.abuse).collect();
    let subjects: Vec<u32> = rows.iter().map(|s| s.subject).collect();
    evaluate(&scores, &labels, &subjects, threshold)
}

fn training(options: &TrainOptions, subjects: usize, rows: usize) -> Training {
    Training {
        data: options.data.clone(),
        seed: options.seed,
        subjects: subjects as u64,
        samples: rows as u64,
        sampling: options.sampling.clone(),
        window_seconds: options
            .window
            .and_then(|w| std::num::NonZeroU64::new(w.as_secs())),
        trained_by: format!("ratewarden {} train", env!("CARGO_PKG_VERSION")),
    }
}
