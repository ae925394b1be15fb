//! The HTTP/1.1 server: hyper connections with a deadline and a size cap on every request head,
//! and a graceful stop.
//!
//! `axum::serve` sets neither bound (hyper's header timeout needs a timer that axum does not
//! give it), so a client sending one header byte every few seconds, or none at all, could hold a
//! connection forever. Here a connection that has not sent a whole request head within
//! [`HEADER_READ_TIMEOUT`] is closed, and a head over [`MAX_HEAD_BYTES`] gets 431.

use super::accept::Acceptor;
use axum::Router;
use axum::extract::{ConnectInfo, Request};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// The longest a client may take to send a request head (request line and headers), counted
/// from the connection's start or the end of its previous response: so it is also how long an
/// idle keep-alive connection stays open.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest request head; a larger one is answered 431 and the connection closed.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Serves `app` until `stop` resolves, then stops accepting and lets every connection finish
/// the request it is in (idle keep-alive connections close at once).
pub async fn serve(listener: TcpListener, app: Router, stop: impl Future<Output = ()>) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES);
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    let mut acceptor = Acceptor::new(listener, "HTTP");
    loop {
        let (stream, remote) = tokio::select! {
            accepted = acceptor.accept() => accepted,
            () = &mut stop => break,
        };
        // What `into_make_service_with_connect_info` gives handlers: the peer's address.
        let service = app
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(remote));
                request
            });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away or breaks the protocol ends only its own connection.
            if let Err(error) = connection.await {
                tracing::debug!(%error, %remote, "HTTP connection ended");
            }
        });
    }
    drop(acceptor);
    graceful.shutdown().await;
}
