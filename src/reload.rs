//! Policy hot reload: on SIGHUP, on a change of the file, and on request (admin API).
//!
//! A file that fails validation is refused, logged with every error and counted
//! (`ratewarden_config_reloads_total`); the old policy stays.

use crate::engine::Engine;
use crate::policy::{Policy, PolicyErrors};
use notify::{RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Reloads one policy file into one engine.
#[derive(Clone)]
pub struct Reloader {
    path: PathBuf,
    engine: Arc<Engine>,
    /// One reload at a time: two concurrent ones could otherwise install the older file last.
    serial: Arc<parking_lot::Mutex<()>>,
}

impl Reloader {
    pub fn new(path: PathBuf, engine: Arc<Engine>) -> Self {
        Self {
            path,
            engine,
            serial: Arc::default(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn count(&self, result: &str) {
        self.engine
            .metrics()
            .config_reloads
            .with_label_values(&["policy", result])
            .inc();
    }

    /// Reads, validates and swaps in the policy; on error the old one stays in force.
    pub fn reload(&self, trigger: &str) -> Result<(), PolicyErrors> {
        let _one_at_a_time = self.serial.lock();
        match Policy::load(&self.path) {
            Ok(policy) => {
                self.count("success");
                if policy.store != self.engine.policy().store {
                    tracing::warn!("store settings changed; they take effect at the next restart");
                }
                self.engine.reload(policy);
                tracing::info!(trigger, path = %self.path.display(), "policy reloaded");
                Ok(())
            }
            Err(errors) => {
                self.count("error");
                for line in errors.lines() {
                    tracing::error!(trigger, path = %self.path.display(), "policy refused: {line}");
                }
                Err(errors)
            }
        }
    }

    /// Starts watching for SIGHUP and file changes. The watches are in place when this
    /// returns (so a change right after start-up is not missed); reloads run on a task.
    pub fn spawn_watch(self) {
        let (tx, mut rx) = mpsc::channel::<&'static str>(16);
        let watcher = self.watch_file(tx.clone());
        #[cfg(unix)]
        spawn_sighup(tx);
        tokio::spawn(async move {
            let _watcher = watcher;
            while let Some(trigger) = rx.recv().await {
                // Editors write a file in several steps: let them finish, then read once.
                tokio::time::sleep(Duration::from_millis(100)).await;
                while rx.try_recv().is_ok() {}
                // Reading the file blocks: off the async workers.
                let reloader = self.clone();
                let _ = tokio::task::spawn_blocking(move || reloader.reload(trigger)).await;
            }
        });
    }

    fn watch_file(&self, tx: mpsc::Sender<&'static str>) -> Option<notify::RecommendedWatcher> {
        let file_name = self.path.file_name()?.to_owned();
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                let ours = event
                    .paths
                    .iter()
                    .any(|p| p.file_name() == Some(file_name.as_os_str()));
                if ours && (event.kind.is_modify() || event.kind.is_create()) {
                    let _ = tx.try_send("file change");
                }
            })
            .map_err(
                |error| tracing::warn!(%error, "cannot watch the policy file; reload with SIGHUP"),
            )
            .ok()?;
        // The folder, not the file: editors replace files by renaming a new one over them.
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|error| tracing::warn!(%error, "cannot watch the policy folder; reload with SIGHUP"))
            .ok()?;
        Some(watcher)
    }
}

#[cfg(unix)]
fn spawn_sighup(tx: mpsc::Sender<&'static str>) {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::hangup()) {
        Ok(mut hup) => {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    if tx.send("SIGHUP").await.is_err() {
                        break;
                    }
                }
            });
        }
        Err(error) => tracing::warn!(%error, "cannot listen for SIGHUP"),
    }
}
