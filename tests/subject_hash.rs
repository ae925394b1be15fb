//! `ratewarden subject-hash`: it needs the daemon's secret, hashes ids as the daemon does, from
//! arguments or from lines (CRLF, blank lines, no final newline), and skips with a warning an
//! id no request can carry; on a terminal it says it is waiting for ids.

mod common;

use common::cli::text;
use ratewarden::engine::SubjectHasher;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn subject_hash(args: &[&str], secret_variable: Option<&str>, input: &[u8]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratewarden"));
    command
        .arg("subject-hash")
        .args(args)
        .env_remove("RATEWARDEN_HASH_KEY");
    if let Some(secret) = secret_variable {
        command.env("RATEWARDEN_HASH_KEY", secret);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn line(user: &str) -> String {
    let hasher = SubjectHasher::from_secret("s3cret");
    format!("{}\t{user}\n", hasher.user(user))
}

#[test]
fn without_the_secret_nothing_is_hashed() {
    let unset = subject_hash(&["alice"], None, b"");
    assert_eq!(unset.status.code(), Some(2));
    let stderr = text(&unset.stderr);
    assert!(stderr.contains("--hash-key <HASH_KEY>"), "{stderr}");
    let empty = subject_hash(&["--hash-key", "", "alice"], None, b"");
    assert_eq!(empty.status.code(), Some(2));
    assert!(
        text(&empty.stderr).contains("the hash key (--hash-key, RATEWARDEN_HASH_KEY) is empty"),
        "{}",
        text(&empty.stderr)
    );
}

#[test]
fn ids_from_arguments_or_lines_are_hashed_as_the_daemon_hashes_them() {
    let given = subject_hash(
        &["--hash-key", "s3cret", "alice", "bob"],
        None,
        b"ignored\n",
    );
    assert!(given.status.success());
    assert_eq!(text(&given.stdout), line("alice") + &line("bob"));
    let piped = subject_hash(&[], Some("s3cret"), b"alice\r\n\nbob");
    assert!(piped.status.success());
    assert_eq!(
        text(&piped.stdout),
        line("alice") + &line("bob"),
        "CRLF, a blank line, no final newline"
    );
    assert_eq!(text(&piped.stderr), "");
}

#[test]
fn an_id_no_request_can_carry_is_skipped_with_a_warning() {
    let long = "x".repeat(513);
    let input = format!("alice\n{long}\nbo\u{e9}\n");
    let mut input = input.into_bytes();
    input.extend_from_slice(b"\xff\xfe\ncarol\n");
    let piped = subject_hash(&[], Some("s3cret"), &input);
    assert!(piped.status.success());
    assert_eq!(
        text(&piped.stdout),
        line("alice") + &line("bo\u{e9}") + &line("carol")
    );
    assert_eq!(
        text(&piped.stderr),
        "subject-hash: line 2 skipped: a user id is 1 to 512 bytes (the daemon refuses any other)\n\
         subject-hash: line 4 skipped: not UTF-8 (the daemon refuses such a user id)\n"
    );
    let given = subject_hash(&["--hash-key", "s3cret", "", "dave"], None, b"");
    assert!(given.status.success());
    assert_eq!(text(&given.stdout), line("dave"));
    assert_eq!(
        text(&given.stderr),
        "subject-hash: argument 1 skipped: a user id is 1 to 512 bytes (the daemon refuses any other)\n"
    );
}

#[cfg(unix)]
#[test]
fn a_terminal_on_stdin_is_told_what_is_awaited() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut leader, follower) = {
        let (mut leader, mut follower) = (0, 0);
        // SAFETY: two valid out-pointers; no name, settings or size asked for.
        let opened = unsafe {
            libc::openpty(
                &mut leader,
                &mut follower,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
        for fd in [leader, follower] {
            // SAFETY: a descriptor just opened; only its close-on-exec flag is set, so a
            // process another test spawns meanwhile does not inherit the terminal.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        // SAFETY: openpty returned two fresh descriptors that nothing else owns.
        unsafe {
            (
                std::fs::File::from(OwnedFd::from_raw_fd(leader)),
                OwnedFd::from_raw_fd(follower),
            )
        }
    };
    let child = Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .arg("subject-hash")
        .env("RATEWARDEN_HASH_KEY", "s3cret")
        .stdin(Stdio::from(follower))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A line, then the terminal's end of input (Ctrl-D at the start of a line).
    leader.write_all(b"alice\n\x04").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), line("alice"));
    assert_eq!(
        text(&output.stderr),
        "subject-hash: reading user ids from standard input, one per line; end with Ctrl-D\n"
    );
}
