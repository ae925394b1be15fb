//! The abuse model in force, swapped whole on reload; a bad file is refused and the old model
//! stays (a missing model limits without anomaly scaling until the file appears).

use crate::features::SubjectFeatures;
use crate::metrics::Metrics;
use crate::model::{Model, ModelError};
use arc_swap::ArcSwapOption;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub struct ModelSlot {
    current: ArcSwapOption<Model>,
    /// The file the policy names, kept to reload it when it changes.
    path: parking_lot::Mutex<Option<PathBuf>>,
    metrics: Arc<Metrics>,
}

impl ModelSlot {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            current: ArcSwapOption::empty(),
            path: parking_lot::Mutex::new(None),
            metrics,
        }
    }

    pub fn get(&self) -> Option<Arc<Model>> {
        self.current.load_full()
    }

    pub fn path(&self) -> Option<PathBuf> {
        self.path.lock().clone()
    }

    /// Loads the model the policy names (`None`: no model configured, anomaly scaling off).
    /// On error the model in force stays and the error is counted.
    pub fn load(&self, path: Option<&Path>) -> Result<(), ModelError> {
        let mut current_path = self.path.lock();
        *current_path = path.map(Path::to_path_buf);
        let Some(path) = path else {
            self.current.store(None);
            self.metrics.model_info.reset();
            self.metrics.model_file_refused.set(0);
            return Ok(());
        };
        match Model::load(path) {
            Ok(model) => {
                self.metrics.model_info.reset();
                self.metrics
                    .model_info
                    .with_label_values(&[model.version(), model.kind().label()])
                    .set(1);
                self.count("success");
                self.metrics.model_file_refused.set(0);
                tracing::info!(path = %path.display(), kind = model.kind().label(), version = model.version(), "model loaded");
                if let Some(warning) = model.edited_warning() {
                    tracing::warn!(path = %path.display(), "{warning}");
                }
                self.current.store(Some(Arc::new(model)));
                Ok(())
            }
            Err(error) => {
                self.count("error");
                // Counted from start-up too: a model refused then has no reload to alert on.
                self.metrics.model_file_refused.set(1);
                tracing::error!(path = %path.display(), %error, "model refused; {}", self.in_force());
                Err(error)
            }
        }
    }

    /// Warns when the model in force was trained over another anomaly window than `window`: it
    /// still scores, but judges best over the window it learnt from (over a shorter one a
    /// client's minutes of trouble weigh more, over a longer one a change of behaviour less).
    pub fn warn_if_window_differs(&self, window: Duration) {
        let Some(model) = self.get() else { return };
        let Some(trained) = model
            .trained_window()
            .filter(|t| t.as_secs() != window.as_secs())
        else {
            return;
        };
        tracing::warn!(
            version = model.version(),
            trained_window_s = trained.as_secs(),
            policy_window_s = window.as_secs(),
            "the model was trained over a {} s anomaly window but adaptive.anomaly.window is {} s: \
             it scores, but not as its model card measured; retrain it over this window or set \
             the window back",
            trained.as_secs(),
            window.as_secs()
        );
    }

    /// What a refused model leaves in force, for the messages that tell of it.
    pub fn in_force(&self) -> &'static str {
        if self.get().is_some() {
            "the model in force stays"
        } else {
            "no model is in force: nothing is scaled for anomaly until one loads"
        }
    }

    /// The `n` features that push `observed`'s score up the most: (name, contribution to the
    /// logit), largest first. Empty without a model, or for a kind whose score is not a sum.
    pub fn top_features(&self, observed: &SubjectFeatures, n: usize) -> Vec<(&'static str, f64)> {
        let Some(model) = self.get() else {
            return Vec::new();
        };
        model.explain(observed).top_features(n)
    }

    /// Reloads the file last named, if any.
    pub fn reload(&self) -> Result<(), ModelError> {
        let path = self.path();
        match path {
            Some(path) => self.load(Some(&path)),
            None => Ok(()),
        }
    }

    fn count(&self, result: &str) {
        self.metrics
            .config_reloads
            .with_label_values(&["model", result])
            .inc();
    }
}
