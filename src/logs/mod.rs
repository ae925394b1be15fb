//! Lines of recorded traffic, parsed into values that cannot be invalid: the JSON-lines format
//! `simulate` writes and `train` and `replay` read, and the log timestamps both formats use.
//!
//! One parser for both readers, so `train` learns from exactly the lines `replay` replays, and
//! skips the same ones with the same message.

mod jsonl;
pub mod time;

pub use jsonl::{JsonLine, JsonlError, parse_jsonl_line};

/// Longer lines are skipped (and counted) by every reader of logs and traffic: no access log
/// line is this long, a binary file's "line" may be the whole file.
pub const MAX_LINE: usize = 64 * 1024;
