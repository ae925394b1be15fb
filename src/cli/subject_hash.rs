//! `ratewarden subject-hash`: user ids to the keyed hashes the daemon shows for them.
//!
//! The flagged list, the admin view, the flag log lines and the store name a subject only by
//! its keyed hash, so a security team that must defend or overrule a flag needs to know whose it
//! is. Given the daemon's secret, this hashes candidate ids (a customer list, the keys a gateway
//! issued) so the hashes can be joined with the flagged list. Without the secret nothing can be
//! mapped back, which is the point of keying.

use crate::engine::{SubjectHasher, hash_key};
use std::io::{BufRead, Write};

#[derive(Debug, Clone, clap::Args)]
pub struct SubjectHashArgs {
    /// The daemon's keyed-hash secret. A daemon started without one hashes with a random key of
    /// its own, which nothing can repeat.
    #[arg(long, env = "RATEWARDEN_HASH_KEY", hide_env_values = true, value_parser = hash_key)]
    pub hash_key: String,
    /// User ids, exactly as the daemon received them; none: one per line from standard input.
    pub users: Vec<String>,
}

/// Writes one `HASH<TAB>USER` line per id: those of `args`, else those of `input`'s lines
/// (a line's trailing `\r` dropped; empty lines skipped, as no request has an empty user).
pub fn run(
    args: &SubjectHashArgs,
    input: impl BufRead,
    mut out: impl Write,
) -> std::io::Result<()> {
    let hasher = SubjectHasher::from_secret(&args.hash_key);
    let mut write = |user: &str| writeln!(out, "{}\t{user}", hasher.user(user));
    if !args.users.is_empty() {
        return args.users.iter().try_for_each(|user| write(user));
    }
    for line in input.lines() {
        let line = line?;
        let user = line.strip_suffix('\r').unwrap_or(&line);
        if !user.is_empty() {
            write(user)?;
        }
    }
    Ok(())
}
