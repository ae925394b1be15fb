//! The replay log readers (issue 8): any bytes split into lines by `LineReader`, each line
//! through the combined and the JSON-lines parser: a value or an error, never a panic.
//!
//! Not yet in Cargo.toml's [[bin]] list nor in scripts/fuzz's TARGETS: it needs src/replay/
//! (branch `replay`). After merging, uncomment the `replay_lines` block of fuzz/Cargo.toml and
//! add `replay_lines` to TARGETS in scripts/fuzz.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratewarden::replay::input::{LineReader, RawLine};
use ratewarden::replay::{parse_combined_line, parse_jsonl_line};
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    let mut lines = LineReader::new(Box::new(Cursor::new(data.to_vec())));
    let mut last = 0;
    while let Ok(Some((number, line))) = lines.next_line() {
        assert!(number > last, "line numbers go up: {number} after {last}");
        last = number;
        if let RawLine::Text(text) = line {
            let _ = parse_combined_line(text);
            let _ = parse_jsonl_line(text);
        }
    }
});
