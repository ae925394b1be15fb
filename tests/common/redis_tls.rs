//! Redis over TLS for tests: certificates made with the `openssl` CLI (not checked in: they
//! would expire), and servers and clusters that serve TLS with them.

use super::redis::{CLUSTER_NODE_ARGS, RedisCluster, RedisServer, free_port};
use std::path::Path;
use std::process::Command;

impl RedisServer {
    /// Serves TLS on a free port too, with `certs`' server certificate (clients are not asked
    /// for one), and `extra` arguments.
    pub fn start_tls(certs: &TlsCerts, extra: &[&str]) -> RedisServer {
        let tls_port = free_port();
        let mut args: Vec<String> = vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            certs.path("server.pem"),
            "--tls-key-file".into(),
            certs.path("server.key"),
            "--tls-ca-cert-file".into(),
            certs.path("ca.pem"),
            "--tls-auth-clients".into(),
            "no".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut server = Self::start_with(&args);
        server.tls_port = Some(tls_port);
        server
    }

    /// `rediss://CREDENTIALS127.0.0.1:TLS_PORT/0` (`credentials` is `""` or `user:password@`).
    pub fn tls_url(&self, credentials: &str) -> String {
        let port = self.tls_port.expect("started with start_tls");
        format!("rediss://{credentials}127.0.0.1:{port}/0")
    }
}

impl RedisCluster {
    /// A cluster whose nodes serve TLS and talk to each other over TLS (`tls-cluster`): the
    /// nodes it names to a TLS client are their TLS ports.
    pub fn start_tls(masters: usize, certs: &TlsCerts) -> RedisCluster {
        let mut args = CLUSTER_NODE_ARGS.to_vec();
        args.extend(["--tls-cluster", "yes"]);
        let nodes: Vec<RedisServer> = (0..masters)
            .map(|_| RedisServer::start_tls(certs, &args))
            .collect();
        let ca = certs.path("ca.pem");
        Self::create(nodes, &["--tls", "--cacert", &ca])
    }

    /// The `rediss+cluster://` URL of the policy file (`credentials`: `""` or `user:password@`).
    pub fn tls_url(&self, credentials: &str) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.tls_port.expect("a TLS cluster")))
            .collect();
        format!("rediss+cluster://{credentials}{}", hosts.join(","))
    }
}

/// Certificates for Redis over TLS, made with the `openssl` CLI in a temp dir: a CA (`ca.pem`)
/// that signed `server.pem` (for 127.0.0.1 and localhost), and another CA (`other-ca.pem`) that
/// signed nothing here.
pub struct TlsCerts {
    dir: tempfile::TempDir,
}

impl TlsCerts {
    pub fn make() -> TlsCerts {
        let certs = TlsCerts {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        certs.make_ca("ca");
        certs.make_ca("other-ca");
        std::fs::write(
            certs.dir.path().join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
        )
        .expect("server.ext");
        certs.openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
        certs.openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ]);
        certs
    }

    /// The folder holding the files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A file's full path, as redis-server's arguments take it.
    pub fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }

    /// `NAME.pem` and `NAME.key`: a self-signed CA valid for two days.
    fn make_ca(&self, name: &str) {
        let (key, pem, subject) = (
            format!("{name}.key"),
            format!("{name}.pem"),
            format!("/CN=ratewarden test {name}"),
        );
        self.openssl(&[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &pem,
            "-days", "2", "-subj", &subject,
        ]);
    }

    fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .expect("openssl runs (scripts/test installs it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
