//! Response plumbing: the body type, JSON answers and llama-server-style error objects.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};

/// Body of every response: whole JSON or an event stream that may end in an error (a fault
/// closing the connection, or the engine stopping).
pub(crate) type Body = BoxBody<Bytes, std::io::Error>;

/// A request the server answers with an error status and a JSON error object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub(crate) struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// One-line explanation.
    pub message: String,
}

impl ApiError {
    /// A 400 with this message.
    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// An error with any status.
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// The `type` field llama-server and `OpenAI` servers put in error objects.
    fn kind(&self) -> &'static str {
        match self.status {
            StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => "invalid_request_error",
            StatusCode::NOT_FOUND => "not_found_error",
            StatusCode::METHOD_NOT_ALLOWED => "not_supported_error",
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            StatusCode::SERVICE_UNAVAILABLE => "unavailable_error",
            _ => "server_error",
        }
    }

    /// `{"error":{"code":N,"message":"..","type":".."}}` with the status.
    pub(super) fn into_response(self) -> Response<Body> {
        let body = serde_json::json!({
            "error": {
                "code": self.status.as_u16(),
                "message": self.message,
                "type": self.kind(),
            }
        });
        json_response(self.status, &body)
    }
}

/// A complete body of bytes.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A JSON response with this status.
pub(crate) fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    bytes_response(status, "application/json", value.to_string())
}

/// A response of `content_type` with a complete body.
pub(crate) fn bytes_response(
    status: StatusCode,
    content_type: &'static str,
    bytes: impl Into<Bytes>,
) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A `text/event-stream` response around a streaming body.
pub(crate) fn event_stream(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
