//! TLS for `https://` targets: one rustls configuration serves the streamed exchanges (driven by
//! hand in [`super::conn`]) and the whole answers of setup (in [`super::fetch`]), so that `--ca-cert` and
//! `--insecure` apply to every request the same way.
//!
//! The trusted roots are the system's (its certificate store, or `SSL_CERT_FILE` /
//! `SSL_CERT_DIR` where set) and those of `--ca-cert`. Cryptography is `ring`'s.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How the server's certificate is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TlsOptions {
    /// `--ca-cert`: a PEM file of certificates trusted besides the system's roots.
    pub ca_cert: Option<PathBuf>,
    /// `--insecure`: neither the certificate nor the host name is checked.
    pub insecure: bool,
}

/// Why the TLS configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The `--ca-cert` file cannot be used.
    #[error("--ca-cert {path}: {reason}")]
    CaCert {
        /// The file as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Setup(#[from] rustls::Error),
}

/// The largest `--ca-cert` file read.
const MAX_CA_FILE: u64 = 16 << 20;

/// The certificates of a `--ca-cert` file: PEM, one or more `CERTIFICATE` sections, each a valid
/// certificate.
pub fn read_ca_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let fail = |reason: String| TlsError::CaCert {
        path: path.display().to_string(),
        reason,
    };
    let Some(text) =
        crate::files::read_at_most(path, MAX_CA_FILE).map_err(|e| fail(e.to_string()))?
    else {
        return Err(fail(format!("more than {MAX_CA_FILE} bytes")));
    };
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(format!("not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(fail(
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    let mut roots = RootCertStore::empty();
    for (i, cert) in certs.iter().enumerate() {
        roots
            .add(cert.clone())
            .map_err(|e| fail(format!("certificate {} is not valid: {e}", i + 1)))?;
    }
    Ok(certs)
}

/// The client configuration of `options`; the system's roots are loaded only when
/// `system_roots` (an `https://` target: a plain one never needs them).
pub fn client_config(
    options: &TlsOptions,
    system_roots: bool,
) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let extra = match &options.ca_cert {
        Some(path) => read_ca_certs(path)?,
        None => Vec::new(),
    };
    if options.insecure {
        return Ok(Arc::new(
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
        ));
    }
    let mut roots = RootCertStore::empty();
    if system_roots {
        // Unreadable system certificates are skipped: the handshake says if none fits.
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    }
    roots.add_parsable_certificates(extra);
    Ok(Arc::new(
        builder.with_root_certificates(roots).with_no_client_auth(),
    ))
}

/// What to suggest after an error whose cause is the server's certificate (empty otherwise).
pub fn hint(error: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(rustls::Error::InvalidCertificate(_)) = e.downcast_ref() {
            return " (pass --ca-cert FILE, or --insecure)";
        }
        // An `io::Error` hides what it wraps from `source()`: look inside it.
        current = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner),
            None => e.source(),
        };
    }
    ""
}

/// The server name a certificate must be valid for: the URL's host (an IP address or a DNS
/// name, without the brackets of an IPv6 literal).
pub fn server_name(host: &str) -> Option<ServerName<'static>> {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(host.to_owned()).ok()
}

/// `--insecure`: any certificate for any name is accepted; the handshake's signatures are still
/// checked (they prove the server holds the key of the certificate it sent, whatever that is).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_must_hold_pem_certificates() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("missing.pem");
        let error = read_ca_certs(&missing).expect_err("missing").to_string();
        assert!(error.starts_with("--ca-cert "), "{error}");
        let text = dir.path().join("text.pem");
        std::fs::write(&text, "not a certificate\n").expect("write");
        let error = read_ca_certs(&text).expect_err("no PEM").to_string();
        assert!(error.contains("no PEM certificate"), "{error}");
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
        let good = dir.path().join("good.pem");
        std::fs::write(&good, cert.cert.pem().repeat(2)).expect("write");
        assert_eq!(read_ca_certs(&good).expect("two certificates").len(), 2);
    }

    #[test]
    fn server_names_are_hosts_or_addresses() {
        assert!(matches!(
            server_name("[::1]"),
            Some(ServerName::IpAddress(_))
        ));
        assert!(matches!(
            server_name("127.0.0.1"),
            Some(ServerName::IpAddress(_))
        ));
        assert!(matches!(
            server_name("gpu-box.example"),
            Some(ServerName::DnsName(_))
        ));
        assert!(server_name("bad host").is_none());
    }
}
