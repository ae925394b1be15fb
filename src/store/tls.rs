//! `store.tls_ca`: the CA certificates (PEM) a Redis server's certificate must chain to,
//! instead of the system's roots (a managed Redis with a private CA, or a test's own CA).
//!
//! The file is read and parsed once, when the policy compiles, so that `check-policy` refuses a
//! missing file or one that holds no certificate, and the store connects with what was checked.

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::{self, PemObject};
use std::fmt;
use std::path::{Path, PathBuf};

/// The certificates of a `store.tls_ca` file: at least one, each a valid trust anchor.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsCa {
    path: PathBuf,
    pem: Vec<u8>,
}

/// Why a `store.tls_ca` file trusts nothing (each message follows the file's name).
#[derive(Debug, thiserror::Error)]
pub enum TlsCaError {
    #[error("cannot be read: {0}")]
    Unreadable(std::io::Error),
    #[error("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")]
    NoCertificate,
    #[error("is not valid PEM: {0}")]
    NotPem(pem::Error),
    #[error("holds a certificate (number {index}) that is not a usable CA certificate: {reason}")]
    NotAnAnchor { index: usize, reason: rustls::Error },
}

impl TlsCa {
    /// Reads and checks the PEM file at `path`.
    pub fn load(path: &Path) -> Result<TlsCa, TlsCaError> {
        let pem = std::fs::read(path).map_err(TlsCaError::Unreadable)?;
        let mut anchors = RootCertStore::empty();
        for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
            let cert = cert.map_err(TlsCaError::NotPem)?;
            anchors
                .add(cert)
                .map_err(|reason| TlsCaError::NotAnAnchor {
                    index: i + 1,
                    reason,
                })?;
        }
        if anchors.is_empty() {
            return Err(TlsCaError::NoCertificate);
        }
        Ok(TlsCa {
            path: path.to_owned(),
            pem,
        })
    }

    /// Where the certificates were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// As the redis client takes them: the CA replaces the system's roots, no client certificate.
    pub(super) fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(self.pem.clone()),
        }
    }
}

/// The path only: the certificates are long and say nothing a log reader needs.
impl fmt::Debug for TlsCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TlsCa({})", self.path.display())
    }
}

/// rustls finds its crypto provider (ring, the only one built in) by itself, but a dependency
/// that enabled a second one would make that ambiguous: install ring first. Idempotent.
pub(super) fn install_crypto_provider() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::{TlsCa, TlsCaError};

    #[test]
    fn a_file_without_a_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        assert!(matches!(TlsCa::load(&path), Err(TlsCaError::NoCertificate)));
        let garbled = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        std::fs::write(&path, garbled).unwrap();
        assert!(matches!(
            TlsCa::load(&path),
            Err(TlsCaError::NotAnAnchor { index: 1, .. })
        ));
        assert!(matches!(
            TlsCa::load(&dir.path().join("missing.pem")),
            Err(TlsCaError::Unreadable(_))
        ));
    }
}
