//! Lines of recorded traffic, parsed into values that cannot be invalid: the JSON-lines format
//! `simulate` writes and `train` and `replay` read, and the log timestamps both formats use.
//!
//! One parser for both readers, so `train` learns from exactly the lines `replay` replays, and
//! skips the same ones with the same message.

mod jsonl;
pub mod time;

pub use jsonl::{JsonLine, JsonlError, parse_jsonl_line};
