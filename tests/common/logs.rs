//! Log lines a test provokes: a `tracing` subscriber for the current thread that keeps what
//! is written (run the test on one thread: `#[tokio::test]` is).

use std::io::Write;
use std::sync::{Arc, Mutex};
use tracing_subscriber::util::SubscriberInitExt;

#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Keeps this thread's lines at `info` and above while the guard lives.
    pub fn start(&self) -> tracing::subscriber::DefaultGuard {
        self.start_at(tracing::Level::INFO)
    }

    /// Keeps this thread's lines at `level` and above while the guard lives.
    pub fn start_at(&self, level: tracing::Level) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(level)
            .with_ansi(false)
            .without_time()
            .set_default()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    pub fn lines(&self) -> Vec<String> {
        self.text().lines().map(str::to_owned).collect()
    }
}
