//! `ratewarden train`: read traffic, replay it into feature samples, fit, print the held-out
//! metrics, write the model. Progress goes to stderr (indicatif), results to stdout.

use super::evaluate::Evaluation;
use super::samples::{DEFAULT_EVERY, SampleOptions, Samples, feature_samples};
use super::train::{TrainError, TrainOptions, TrainReport, train};
use super::{ModelError, ModelKind};
use crate::policy::Policy;
use crate::simulate::{ReadError, Traffic, read_jsonl};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
pub struct TrainArgs {
    /// Labelled (for `logistic`) or unlabelled jsonl traffic.
    #[arg(long)]
    pub data: PathBuf,
    /// `logistic` (supervised) or `gmm` (unsupervised Gaussian mixture).
    #[arg(long, default_value = "logistic")]
    pub kind: ModelKind,
    /// Where to write the model. No default: a running daemon watching its model file loads a
    /// new one at once, so the place is always named.
    #[arg(long)]
    pub out: PathBuf,
    /// Overwrite `--out` when it exists.
    #[arg(long)]
    pub force: bool,
    /// The policy whose limits decide the requests and whose `adaptive` settings sample
    /// the features [default: ./ratewarden.yaml, else the policy shipped with ratewarden].
    #[arg(long, env = "RATEWARDEN_POLICY")]
    pub policy: Option<PathBuf>,
    /// Seed of the subject split (and of the mixture's subsample).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threshold of the reported precision and recall [default: the policy's
    /// `anomaly.threshold`].
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Gaussians in a `gmm` model.
    #[arg(long, default_value_t = 4)]
    pub components: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum TrainCommandError {
    #[error("{} exists; pass --force to overwrite it (a daemon watching it loads the new model at once)", .0.display())]
    WouldOverwrite(PathBuf),
    #[error("policy {path}:\n{errors}")]
    Policy { path: PathBuf, errors: String },
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Read { path: PathBuf, source: ReadError },
    #[error("--threshold must be between 0 and 1")]
    Threshold,
    #[error("starting the runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Train(#[from] TrainError),
    #[error(transparent)]
    Save(#[from] ModelError),
}

fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

pub fn run(args: &TrainArgs) -> Result<TrainReport, TrainCommandError> {
    if args.out.exists() && !args.force {
        return Err(TrainCommandError::WouldOverwrite(args.out.clone()));
    }
    let policy = training_policy(args.policy.as_deref())?;
    let threshold = args.threshold.unwrap_or(policy.adaptive.anomaly.threshold);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(TrainCommandError::Threshold);
    }
    let traffic = read_traffic(&args.data)?;
    let options = SampleOptions::from_policy(&policy, DEFAULT_EVERY);
    let samples = replay_into_samples(policy, &traffic, &options)?;
    print_data(&samples, &options);
    let report = fit(args, &samples, threshold, &options)?;
    print_report(&report);
    warn_if_few_abusers(&report);
    report.model.save(&args.out)?;
    println!(
        "wrote {} ({} model, version {})",
        args.out.display(),
        report.model.kind(),
        report.model.version()
    );
    Ok(report)
}

/// The policy named, else `./ratewarden.yaml`, else the one shipped with ratewarden (so
/// training works from any folder).
fn training_policy(named: Option<&Path>) -> Result<Policy, TrainCommandError> {
    const SHIPPED: &str = include_str!("../../ratewarden.yaml");
    let local = Path::new("ratewarden.yaml");
    let path = match named {
        Some(path) => path,
        None if local.exists() => local,
        None => {
            eprintln!(
                "no --policy and no ./ratewarden.yaml: using the policy shipped with ratewarden"
            );
            return Policy::from_yaml(SHIPPED, Path::new(".")).map_err(|e| {
                TrainCommandError::Policy {
                    path: PathBuf::from("(shipped ratewarden.yaml)"),
                    errors: e.to_string(),
                }
            });
        }
    };
    crate::rules::load_policy(path).map_err(|e| TrainCommandError::Policy {
        path: path.to_path_buf(),
        errors: e.to_string(),
    })
}

/// Below this many held-out abusive subjects, precision, recall and ROC AUC say little.
const FEW_HELD_OUT_ABUSERS: u64 = 30;

fn warn_if_few_abusers(report: &TrainReport) {
    let abusers = report.held_out.subjects.abuse;
    if abusers < FEW_HELD_OUT_ABUSERS {
        eprintln!(
            "warning: only {abusers} abusive subjects were held out; below {FEW_HELD_OUT_ABUSERS} the figures above mean little (train on more subjects)"
        );
    }
}

/// The jsonl traffic at `path`, in time order; unparsable lines are told on stderr and left
/// out.
fn read_traffic(path: &Path) -> Result<Traffic, TrainCommandError> {
    let file = std::fs::File::open(path).map_err(|source| TrainCommandError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let reading = bar(
        size,
        "reading  [{bar:40}] {bytes}/{total_bytes} {elapsed_precise}",
    );
    let mut traffic =
        read_jsonl(BufReader::new(file), |b| reading.set_position(b)).map_err(|source| {
            TrainCommandError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
    reading.finish();
    if traffic.skipped > 0 {
        eprintln!("skipped {} unparsable lines:", traffic.skipped);
        for (line, problem) in &traffic.examples {
            eprintln!("  line {line}: {problem}");
        }
    }
    traffic.records.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    Ok(traffic)
}

/// Replays the traffic through the policy's engine (on a runtime of its own: the samples
/// need its async store) and samples the features.
fn replay_into_samples(
    policy: Policy,
    traffic: &Traffic,
    options: &SampleOptions,
) -> Result<Samples, TrainCommandError> {
    let replaying = bar(
        traffic.records.len() as u64,
        "replaying [{bar:40}] {pos}/{len} requests {elapsed_precise}",
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(TrainCommandError::Runtime)?;
    let samples = runtime.block_on(feature_samples(policy, &traffic.records, options, |done| {
        replaying.set_position(done)
    }));
    replaying.finish();
    Ok(samples)
}

/// What the replay gave: requests, denials and subjects, then the samples.
fn print_data(samples: &Samples, options: &SampleOptions) {
    println!(
        "data: {} requests ({:.1} % denied by the policy) from {} subjects; {} undecidable",
        samples.requests,
        100.0 * samples.denied as f64 / samples.requests.max(1) as f64,
        samples.subjects.len(),
        samples.undecidable,
    );
    println!(
        "samples: {} ({})",
        samples.samples.len(),
        options.describe()
    );
}

/// Fits the model under a spinner (linfa tells no progress).
fn fit(
    args: &TrainArgs,
    samples: &Samples,
    threshold: f64,
    options: &SampleOptions,
) -> Result<TrainReport, TrainCommandError> {
    let fitting = ProgressBar::new_spinner();
    fitting.set_message(format!("fitting {} with linfa", args.kind));
    fitting.enable_steady_tick(Duration::from_millis(120));
    let report = train(
        samples,
        &TrainOptions {
            kind: args.kind,
            seed: args.seed,
            threshold,
            components: args.components,
            data: args
                .data
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            sampling: options.describe(),
        },
    )?;
    fitting.finish_and_clear();
    Ok(report)
}

fn print_report(report: &TrainReport) {
    let [fit, calibrate, held_out] = report.split;
    println!(
        "split by subject (seed {}): {fit} fit, {calibrate} calibrate, {held_out} held out",
        report.model.training().map_or(0, |t| t.seed)
    );
    let e = &report.held_out;
    println!(
        "held out: {} samples ({} abuse) from {} subjects",
        e.samples,
        e.abuse_samples,
        e.subjects.normal + e.subjects.abuse
    );
    println!(
        "  threshold {:.2}: precision {:.4}  recall {:.4}  false positive rate {:.5}",
        e.threshold, e.precision, e.recall, e.false_positive_rate
    );
    println!("  ROC AUC {:.4}", e.roc_auc);
    println!(
        "  subjects flagged: {}/{} abusive, {}/{} normal",
        e.subjects.abuse_flagged, e.subjects.abuse, e.subjects.normal_flagged, e.subjects.normal
    );
    match &report.uncalibrated {
        Some(before) => println!(
            "  calibration (Platt): expected calibration error {:.4} (before {:.4}), Brier {:.4}",
            e.expected_calibration_error, before.expected_calibration_error, e.brier
        ),
        None => println!(
            "  score = share of training traffic more typical; expected calibration error \
             (as a probability, not its meaning) {:.4}",
            e.expected_calibration_error
        ),
    }
    print_bins(e);
    if !report.archetypes.is_empty() {
        println!("  archetype            label   subjects flagged   samples flagged");
        for a in &report.archetypes {
            println!(
                "  {:<20} {:<7} {:>8} {:>7} {:>9} {:>7}",
                a.archetype,
                if a.abuse { "abuse" } else { "normal" },
                a.subjects,
                a.flagged,
                a.samples,
                a.samples_flagged
            );
        }
    }
}

fn print_bins(e: &Evaluation) {
    println!("  score bin    samples  mean score  abuse share");
    for b in e.calibration.iter().filter(|b| b.samples > 0) {
        println!(
            "  {:.1}-{:.1} {:>11}  {:>10.3}  {:>11.3}",
            b.from, b.to, b.samples, b.mean_score, b.abuse_share
        );
    }
}
