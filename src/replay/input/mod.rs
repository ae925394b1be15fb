//! Reading logs: combined and JSON-lines files (gzip or not) into [`Traffic`], with the
//! subject chosen by `--subject`. A line that cannot be used is counted, its first examples
//! kept with their line numbers, and skipped.
//!
//! The line parsers ([`parse_combined_line`], [`parse_jsonl_line`]) take a `&str` and return a
//! value or an error, never panic: they are the entry points for fuzzing.

mod combined;
mod escapes;
mod lines;

pub use crate::logs::time;
pub use crate::logs::{JsonLine, JsonlError, parse_jsonl_line};
pub use combined::{CombinedError, CombinedLine, parse_combined_line};
pub use lines::{LineReader, MAX_LINE, RawLine, open};

use super::traffic::{FileStats, Parsed, Traffic};
use crate::engine::Cost;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Per file: JSON lines when its first non-empty line starts with `{`, else combined.
    #[default]
    Auto,
    Combined,
    Jsonl,
}

/// `--subject`: whom a request counts against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubjectChoice {
    Ip,
    User,
    /// A request header, by name (compared case-insensitively).
    Header(String),
}

impl FromStr for SubjectChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "ip" => Ok(SubjectChoice::Ip),
            "user" => Ok(SubjectChoice::User),
            _ => match text.strip_prefix("header:") {
                Some(name) if !name.is_empty() && !name.contains([' ', ':']) => {
                    Ok(SubjectChoice::Header(name.to_owned()))
                }
                _ => Err(format!(
                    "{text:?} is not ip, user or header:NAME (header:X-Api-Key, say)"
                )),
            },
        }
    }
}

impl SubjectChoice {
    pub fn describe(choice: Option<&SubjectChoice>) -> String {
        match choice {
            None => "default (combined: ip; jsonl: user)".into(),
            Some(SubjectChoice::Ip) => "ip".into(),
            Some(SubjectChoice::User) => "user".into(),
            Some(SubjectChoice::Header(name)) => format!("header:{name}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    // `error`, not `source`: the message says it already (anyhow would repeat a source).
    #[error("cannot open {path}: {error}")]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "--subject header:{header} reads the `headers` object of JSON lines, and {path} is a combined log, which logs no request headers by name: use --subject ip or user, or a jsonl log"
    )]
    HeaderNotLogged { path: PathBuf, header: String },
}

/// `--format combined` with `--subject header:NAME`: a combined log names no header, so this is
/// refused before any file is opened (with `--format auto`, at a combined file's first line).
pub fn refuse_header_for_combined(
    paths: &[PathBuf],
    format: Format,
    subject: Option<&SubjectChoice>,
) -> Result<(), ReadError> {
    match (format, subject, paths.first()) {
        (Format::Combined, Some(SubjectChoice::Header(name)), Some(path)) => {
            Err(ReadError::HeaderNotLogged {
                path: path.clone(),
                header: name.clone(),
            })
        }
        _ => Ok(()),
    }
}

/// Reads every file, then puts the records in time order (files may come in any order).
/// `read` counts the (compressed) bytes read so far.
pub fn read_logs(
    paths: &[PathBuf],
    format: Format,
    subject: Option<&SubjectChoice>,
    read: &Arc<AtomicU64>,
) -> Result<Traffic, ReadError> {
    refuse_header_for_combined(paths, format, subject)?;
    let mut traffic = Traffic::default();
    for (index, path) in paths.iter().enumerate() {
        read_file(
            &mut traffic,
            u32::try_from(index).unwrap_or(u32::MAX),
            path,
            format,
            subject,
            read,
        )?;
    }
    traffic.finish();
    Ok(traffic)
}

fn read_file(
    traffic: &mut Traffic,
    index: u32,
    path: &Path,
    format: Format,
    subject: Option<&SubjectChoice>,
    read: &Arc<AtomicU64>,
) -> Result<(), ReadError> {
    let open_error = |error| ReadError::Open {
        path: path.to_path_buf(),
        error,
    };
    let gzip = is_gzip(path).map_err(open_error)?;
    let mut reader = open(path, read.clone()).map_err(open_error)?;
    let mut file = FileRead {
        traffic,
        index,
        path,
        subject,
        format: match format {
            Format::Auto => None,
            Format::Combined => Some(Format::Combined),
            Format::Jsonl => Some(Format::Jsonl),
        },
        stats: FileStats {
            path: path.to_path_buf(),
            format: None,
            gzip,
            lines: 0,
            parsed: 0,
            skipped: 0,
        },
    };
    loop {
        match reader.next_line() {
            Ok(Some((number, line))) => file.line(number, line)?,
            Ok(None) => break,
            // A file that cannot be read to its end (a truncated gzip, say) is used up to there.
            Err(error) => {
                let number = file.stats.lines + 1;
                file.skip(number, format!("reading stopped: {error}"), None);
                break;
            }
        }
    }
    file.traffic.files.push(file.stats);
    Ok(())
}

/// Whether the file starts with gzip's magic bytes.
fn is_gzip(path: &Path) -> std::io::Result<bool> {
    let mut file = std::fs::File::open(path)?;
    let mut magic = [0u8; 2];
    std::io::Read::read(&mut file, &mut magic).map(|n| n == 2 && magic == [0x1f, 0x8b])
}

/// One file being read: where its records go, and what it has found so far.
struct FileRead<'a> {
    traffic: &'a mut Traffic,
    /// The file's index in `--log` order.
    index: u32,
    path: &'a Path,
    subject: Option<&'a SubjectChoice>,
    /// `--format`, or what the first line told; `None` before it.
    format: Option<Format>,
    stats: FileStats,
}

impl FileRead<'_> {
    /// Adds line `number`'s record, or counts it skipped; blank lines are neither.
    fn line(&mut self, number: u64, line: RawLine<'_>) -> Result<(), ReadError> {
        self.stats.lines = number;
        let text = match line {
            RawLine::Text(text) if text.trim().is_empty() => return Ok(()),
            // Windows tools start a UTF-8 file with a byte order mark.
            RawLine::Text(text) if number == 1 => crate::files::without_byte_order_mark(text),
            RawLine::Text(text) => text,
            RawLine::NotUtf8 => {
                self.skip(number, "not UTF-8 text".into(), None);
                return Ok(());
            }
            RawLine::TooLong(len) => {
                self.skip(number, format!("{len} bytes long (over {MAX_LINE})"), None);
                return Ok(());
            }
        };
        let outcome = match self.format_of(text)? {
            Format::Jsonl => from_jsonl(text, self.subject, self.traffic, self.index, number),
            _ => from_combined(text, self.subject, self.traffic, self.index, number),
        };
        match outcome {
            Ok(()) => self.stats.parsed += 1,
            Err(problem) => self.skip(number, problem, Some(text)),
        }
        Ok(())
    }

    /// The file's format, told by its first line when `--format` is `auto`: JSON lines start
    /// with `{`. `--subject header:NAME` refuses a combined log there, before its first
    /// record.
    fn format_of(&mut self, text: &str) -> Result<Format, ReadError> {
        let format = *self
            .format
            .get_or_insert(if text.trim_start().starts_with('{') {
                Format::Jsonl
            } else {
                Format::Combined
            });
        if self.stats.format.is_none() {
            self.stats.format = Some(if format == Format::Jsonl {
                "jsonl"
            } else {
                "combined"
            });
            if let (Format::Combined, Some(SubjectChoice::Header(name))) = (format, self.subject) {
                return Err(ReadError::HeaderNotLogged {
                    path: self.path.to_path_buf(),
                    header: name.clone(),
                });
            }
        }
        Ok(format)
    }

    fn skip(&mut self, number: u64, problem: String, text: Option<&str>) {
        self.stats.skipped += 1;
        self.traffic.skip(self.path, number, problem, text);
    }
}

fn from_combined(
    text: &str,
    subject: Option<&SubjectChoice>,
    traffic: &mut Traffic,
    file: u32,
    number: u64,
) -> Result<(), String> {
    let line = parse_combined_line(text).map_err(|e| e.to_string())?;
    // An absent user falls back to the address, as forward auth does (a header subject never
    // gets here: it is refused for combined logs).
    let chosen = match subject {
        None | Some(SubjectChoice::Ip) | Some(SubjectChoice::Header(_)) => Some(line.address),
        Some(SubjectChoice::User) => line.user,
    };
    traffic.fallbacks += u64::from(chosen.is_none());
    // One client, one subject: a dual-stack server logs `::ffff:192.0.2.1` for `192.0.2.1`,
    // which the daemon counts as one address.
    let ip = line
        .address
        .parse::<IpAddr>()
        .ok()
        .map(|ip| ip.to_canonical());
    // Written out again only for an IPv6 form (a mapped one, or `2001:DB8::1`): an IPv4
    // address parses only from its canonical text.
    let mapped = ip
        .filter(|_| line.address.contains(':'))
        .map(|ip| ip.to_string());
    let subject = match chosen {
        Some(chosen) if chosen != line.address => chosen,
        _ => mapped.as_deref().unwrap_or(line.address),
    };
    let parsed = Parsed {
        at: line.at,
        subject,
        endpoint: &line.endpoint,
        tier: None,
        ip,
        cost: Cost::ONE,
        status: line.status,
        latency_ms: line.latency_ms,
        label: None,
    };
    traffic.push(file, number, &parsed);
    Ok(())
}

fn from_jsonl(
    text: &str,
    subject: Option<&SubjectChoice>,
    traffic: &mut Traffic,
    file: u32,
    number: u64,
) -> Result<(), String> {
    let line = parse_jsonl_line(text).map_err(|e| e.to_string())?;
    let ip = line.ip.as_ref().map(|(_, ip)| ip.to_canonical());
    // Written out only when the subject is the address.
    let canonical = matches!(subject, Some(SubjectChoice::Ip))
        .then(|| ip.map(|ip| ip.to_string()))
        .flatten();
    let chosen = match subject {
        None | Some(SubjectChoice::User) => line.user.as_ref(),
        Some(SubjectChoice::Ip) => match &canonical {
            Some(text) => text.as_str(),
            None => return Err("no `ip`, and --subject ip needs one".into()),
        },
        // A line without the header has no subject: it is unparsable.
        Some(SubjectChoice::Header(name)) => match line.header(name) {
            Some(value) if !value.is_empty() => value,
            _ => {
                return Err(format!(
                    "no `headers.{name}`, and --subject header:{name} needs it"
                ));
            }
        },
    };
    let parsed = Parsed {
        at: line.at,
        subject: chosen,
        endpoint: &line.endpoint,
        tier: line.tier.as_deref(),
        ip,
        cost: line.cost,
        status: line.status,
        latency_ms: line.latency_ms,
        label: line.label,
    };
    traffic.push(file, number, &parsed);
    Ok(())
}
