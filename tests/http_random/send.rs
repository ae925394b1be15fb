//! Sending one request over raw TCP and naming what came back: a reply, a close or a reset.
//!
//! Connections are kept between requests like a real client's, so a request that leaves the
//! server in a bad state shows up on the next one.

use crate::common::daemon::{Connection, Reply};
use std::io;
use std::net::SocketAddr;

pub enum Outcome {
    Reply(Reply),
    /// The server closed the connection without a response.
    Closed,
    /// The server reset the connection (typically: it closed with unread bytes left).
    Reset,
}

fn transport(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

fn outcome_of(e: io::Error) -> io::Result<Outcome> {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => Ok(Outcome::Closed),
        _ if transport(&e) => Ok(Outcome::Reset),
        _ => Err(e),
    }
}

/// Sends one request, on the kept connection when it can carry it; a kept connection that
/// the server had already closed is retried once on a new one, as any client would.
pub fn send(
    addr: SocketAddr,
    kept: &mut Option<Connection>,
    raw: &[u8],
    head: bool,
    own_connection: bool,
    half_close: bool,
) -> io::Result<Outcome> {
    if !own_connection {
        if let Some(connection) = kept.as_mut() {
            match connection.exchange(raw, head) {
                Ok(reply) => {
                    if reply.closes() {
                        *kept = None;
                    }
                    return Ok(Outcome::Reply(reply));
                }
                Err(e) if transport(&e) => *kept = None,
                Err(e) => {
                    *kept = None;
                    return Err(e);
                }
            }
        }
    }
    let mut connection = Connection::open(addr)?;
    let written = connection.write(raw);
    if half_close {
        let _ = connection.shutdown_write();
    }
    match (connection.read_reply(head), written) {
        (Ok(reply), _) => {
            if !own_connection && !half_close && !reply.closes() {
                *kept = Some(connection);
            }
            Ok(Outcome::Reply(reply))
        }
        (Err(e), Err(w)) if transport(&e) => outcome_of(w),
        (Err(e), _) => outcome_of(e),
    }
}
