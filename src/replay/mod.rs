//! `ratewarden replay`: recorded traffic through the daemon's own engine, embedded store and
//! control loop on a simulated clock, to see what a policy and model would have done.
//!
//! The replay is a different clock and input around the same code: [`input`] turns log lines
//! into records, [`pass`] sets a [`crate::clock::ManualClock`] to each record's time, asks
//! [`crate::engine::Engine::check`], reports upstream statuses, and runs
//! [`crate::control::ControlLoop::cycle`] every `adaptive.interval` of log time. Everything
//! else counts and shows what came out.

pub mod command;
mod decisions;
pub mod input;
mod outputs;
pub mod pass;
pub mod plot;
pub mod report;
pub mod summary;
pub mod sweep;
pub mod table;
pub mod traffic;

pub use command::{ReplayArgs, ReplayError, run};
pub use input::{Format, SubjectChoice, parse_combined_line, parse_jsonl_line};
pub use report::Report;
pub use sweep::{Sweep, SweepRow};
