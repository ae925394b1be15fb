//! `--decisions FILE`: every request's decision as one JSON line (for a sweep, every pass's,
//! each line naming its threshold), for checking a table or finding the requests a policy
//! would deny. Passes run in parallel, so each writes its own part file; the parts are joined
//! in threshold order at the end.

use super::traffic::{Record, Traffic};
use crate::engine::{CheckError, Decision, Reason};
use crate::simulate::Label;
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Serialize)]
struct Line<'a> {
    file: &'a Path,
    line: u64,
    ts: f64,
    threshold: f64,
    subject: &'a str,
    endpoint: &'a str,
    /// `None` when the policy cannot decide the request (see `error`).
    allowed: Option<bool>,
    reason: Option<Reason>,
    rule: Option<&'a str>,
    tier: Option<&'a str>,
    shadow: bool,
    label: Option<Label>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub struct DecisionWriter {
    path: PathBuf,
    parts: Vec<PathBuf>,
}

impl DecisionWriter {
    pub fn new(path: &Path, passes: usize) -> io::Result<Self> {
        File::create(path)?;
        let parts = (0..passes)
            .map(|i| {
                let mut name = path.as_os_str().to_owned();
                name.push(format!(".part{i}"));
                PathBuf::from(name)
            })
            .collect();
        Ok(Self {
            path: path.to_path_buf(),
            parts,
        })
    }

    /// Runs pass `index` with a callback that writes each decision to the pass's part file.
    pub fn pass<R>(
        &self,
        index: usize,
        threshold: f64,
        traffic: &Traffic,
        run: impl FnOnce(&mut dyn FnMut(&Record, &Result<Decision, CheckError>)) -> R,
    ) -> Result<R, (PathBuf, io::Error)> {
        let part = &self.parts[index];
        let fail = |e| (part.clone(), e);
        let mut out = BufWriter::with_capacity(1 << 20, File::create(part).map_err(fail)?);
        let mut failed: Option<io::Error> = None;
        let result = run(&mut |record, result| {
            if failed.is_some() {
                return;
            }
            let line = line_of(traffic, threshold, record, result);
            let written = serde_json::to_writer(&mut out, &line)
                .map_err(io::Error::other)
                .and_then(|()| out.write_all(b"\n"));
            if let Err(e) = written {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(fail(e));
        }
        out.flush().map_err(fail)?;
        Ok(result)
    }

    /// Joins the parts into the file, in pass order.
    pub fn finish(self) -> io::Result<()> {
        let mut out = BufWriter::new(File::create(&self.path)?);
        for part in &self.parts {
            io::copy(&mut File::open(part)?, &mut out)?;
            std::fs::remove_file(part)?;
        }
        out.flush()
    }
}

fn line_of<'a>(
    traffic: &'a Traffic,
    threshold: f64,
    record: &Record,
    result: &'a Result<Decision, CheckError>,
) -> Line<'a> {
    let file = traffic
        .files
        .get(record.file as usize)
        .map_or(Path::new(""), |f| f.path.as_path());
    let mut line = Line {
        file,
        line: record.line,
        ts: record.at as f64 / 1e6,
        threshold,
        subject: &traffic.subjects[record.subject as usize],
        endpoint: &traffic.endpoints[record.endpoint as usize],
        allowed: None,
        reason: None,
        rule: None,
        tier: None,
        shadow: false,
        label: record.label,
        error: None,
    };
    match result {
        Ok(decision) => {
            line.allowed = Some(decision.allowed);
            line.reason = decision.reason.filter(|_| !decision.allowed);
            line.rule = Some(
                decision
                    .deciding_limit()
                    .map_or("none", |l| l.name.as_str()),
            );
            line.tier = Some(decision.tier_name());
            line.shadow = decision.shadow;
        }
        Err(error) => line.error = Some(error.to_string()),
    }
    line
}
