//! The hostile modes that answer as a proxy in front of a server that does not answer:
//! the error pages nginx, `HAProxy` and Caddy send.

use super::{whole, Mode};
use tokio::net::TcpStream;

/// The page of [`Mode::BadGateway`] (every request), [`Mode::GatewayTimeout`] and
/// [`Mode::EmptyBadGateway`] (generations); the connection stays open.
pub(super) async fn page(stream: &mut TcpStream, mode: &Mode) -> std::io::Result<bool> {
    let (status, kind, page) = match mode {
        Mode::BadGateway => (
            "502 Bad Gateway",
            "text/html",
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
             <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n\
             </body>\r\n</html>\r\n",
        ),
        Mode::GatewayTimeout => (
            "504 Gateway Time-out",
            "text/html",
            "<html><body><h1>504 Gateway Time-out</h1>\nThe server didn't respond in time.\n\
             </body></html>\n",
        ),
        _ => ("502 Bad Gateway", "text/plain", ""),
    };
    whole(stream, status, kind, page).await?;
    Ok(true)
}
