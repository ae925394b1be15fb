//! Log files as numbered lines: gzip recognised by its magic bytes (whatever the name), bytes
//! that are not UTF-8 and lines over [`MAX_LINE`] reported as such instead of failing the read,
//! and the compressed bytes read so far counted for the progress bar.

use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::logs::MAX_LINE;

/// One line's bytes, as far as they can be read as text.
#[derive(Debug, PartialEq, Eq)]
pub enum RawLine<'a> {
    Text(&'a str),
    NotUtf8,
    TooLong(usize),
}

pub struct LineReader {
    inner: Box<dyn BufRead>,
    buffer: Vec<u8>,
    number: u64,
}

/// Opens `path`, decompressing gzip; `read` counts the file's bytes as they are consumed.
pub fn open(path: &Path, read: Arc<AtomicU64>) -> io::Result<LineReader> {
    let mut file = BufReader::with_capacity(
        256 * 1024,
        Counting {
            inner: File::open(path)?,
            read,
        },
    );
    let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    let inner: Box<dyn BufRead> = if gzip {
        Box::new(BufReader::with_capacity(
            256 * 1024,
            MultiGzDecoder::new(file),
        ))
    } else {
        Box::new(file)
    };
    Ok(LineReader::new(inner))
}

impl LineReader {
    pub fn new(inner: Box<dyn BufRead>) -> Self {
        Self {
            inner,
            buffer: Vec::with_capacity(1024),
            number: 0,
        }
    }

    /// The next line (1-based number, contents without `\n` or `\r\n`); `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, RawLine<'_>)>> {
        self.buffer.clear();
        let mut length = 0usize;
        let mut any = false;
        let mut last_byte = None;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (&available[..i], i + 1),
                None => (available, available.len()),
            };
            length += chunk.len();
            last_byte = chunk.last().copied().or(last_byte);
            // One byte more than a line may hold: a `\r` ending the longest line allowed.
            if length <= MAX_LINE + 1 {
                self.buffer.extend_from_slice(chunk);
            }
            let found_end = done > chunk.len();
            self.inner.consume(done);
            if found_end {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        // Measured without a `\r\n` ending, as `train` measures it.
        let carriage_return = last_byte == Some(b'\r');
        let length = length - usize::from(carriage_return);
        if length > MAX_LINE {
            return Ok(Some((self.number, RawLine::TooLong(length))));
        }
        if carriage_return {
            self.buffer.pop();
        }
        Ok(Some((
            self.number,
            match std::str::from_utf8(&self.buffer) {
                Ok(text) => RawLine::Text(text),
                Err(_) => RawLine::NotUtf8,
            },
        )))
    }
}

struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &'static [u8]) -> Vec<String> {
        let mut reader = LineReader::new(Box::new(bytes));
        let mut out = Vec::new();
        while let Some((n, line)) = reader.next_line().unwrap() {
            out.push(format!("{n}:{line:?}"));
        }
        out
    }

    #[test]
    fn numbered_lines() {
        assert_eq!(
            lines(b"a\r\nb\n\xff\xfe\nlast"),
            [
                "1:Text(\"a\")",
                "2:Text(\"b\")",
                "3:NotUtf8",
                "4:Text(\"last\")"
            ]
        );
        assert!(lines(b"").is_empty());
    }

    #[test]
    fn a_line_is_measured_without_its_carriage_return() {
        let longest = format!(
            "{}\r\n{}\r\n",
            "a".repeat(MAX_LINE),
            "b".repeat(MAX_LINE + 1)
        );
        let mut reader = LineReader::new(Box::new(std::io::Cursor::new(longest.into_bytes())));
        let Some((1, RawLine::Text(text))) = reader.next_line().unwrap() else {
            panic!("the longest line allowed, ended by \\r\\n, was not read whole");
        };
        assert_eq!(text.len(), MAX_LINE);
        let Some((2, RawLine::TooLong(length))) = reader.next_line().unwrap() else {
            panic!("a line one byte too long was read");
        };
        assert_eq!(length, MAX_LINE + 1);
    }
}
