//! `ratewarden subject-hash`: user ids to the keyed hashes the daemon shows for them.
//!
//! The flagged list, the admin view, the flag log lines and the store name a subject only by
//! its keyed hash, so a security team that must defend or overrule a flag needs to know whose it
//! is. Given the daemon's secret, this hashes candidate ids (a customer list, the keys a gateway
//! issued) so the hashes can be joined with the flagged list. Without the secret nothing can be
//! mapped back, which is the point of keying.

use crate::engine::{MAX_USER_BYTES, SubjectHasher, hash_key};
use std::io::{BufRead, Write};

#[derive(Debug, Clone, clap::Args)]
pub struct SubjectHashArgs {
    /// The daemon's keyed-hash secret (better through its variable: a command line is visible to
    /// other users of the host). A daemon started without one hashes with a random key of its
    /// own, which nothing can repeat.
    #[arg(long, env = "RATEWARDEN_HASH_KEY", hide_env_values = true, value_parser = hash_key)]
    pub hash_key: String,
    /// User ids, exactly as the daemon received them; none: one per line from standard input.
    pub users: Vec<String>,
}

/// Told on stderr when no id is given and stdin is a terminal, so the wait is not silent.
pub const TERMINAL_HINT: &str =
    "subject-hash: reading user ids from standard input, one per line; end with Ctrl-D";

/// Writes one `HASH<TAB>USER` line per id to `out`: those of `args`, else those of `input`'s
/// lines (a line's trailing `\r` dropped, empty lines skipped). An id no request can carry
/// (over [`MAX_USER_BYTES`] bytes, empty, or not UTF-8) is skipped with a line on `warnings`.
pub fn run(
    args: &SubjectHashArgs,
    mut input: impl BufRead,
    mut out: impl Write,
    mut warnings: impl Write,
) -> std::io::Result<()> {
    let hasher = SubjectHasher::from_secret(&args.hash_key);
    let mut hash = |place: &str, user: &[u8]| -> std::io::Result<()> {
        match std::str::from_utf8(user) {
            Ok(user) if !user.is_empty() && user.len() <= MAX_USER_BYTES => {
                writeln!(out, "{}\t{user}", hasher.user(user))
            }
            Ok(_) => writeln!(
                warnings,
                "subject-hash: {place} skipped: a user id is 1 to {MAX_USER_BYTES} bytes (the daemon refuses any other)"
            ),
            Err(_) => writeln!(
                warnings,
                "subject-hash: {place} skipped: not UTF-8 (the daemon refuses such a user id)"
            ),
        }
    };
    if !args.users.is_empty() {
        for (i, user) in args.users.iter().enumerate() {
            hash(&format!("argument {}", i + 1), user.as_bytes())?;
        }
        return out.flush();
    }
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let user = line.strip_suffix(b"\n").unwrap_or(&line);
        let user = user.strip_suffix(b"\r").unwrap_or(user);
        if !user.is_empty() {
            hash(&format!("line {number}"), user)?;
        }
    }
    out.flush()
}
