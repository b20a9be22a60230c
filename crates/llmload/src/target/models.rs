//! The models a server lists: the one given checked against them, the first taken where none
//! is given (only a plain name), and a long list kept short.

use crate::error::Error;
use serde_json::{json, Value};

/// The most models of `/v1/models` that `campaign.json` keeps (a gateway may list thousands).
const KEPT_MODELS: usize = 100;

/// `--model` against the models the server lists, where it lists any: a name it does not list
/// is refused before anything is sent, with some of the names it does.
pub(super) fn check_model(given: &str, server: &Value) -> crate::error::Result<()> {
    let Some(listed) = server["models"]["data"]
        .as_array()
        .filter(|l| !l.is_empty())
    else {
        return Ok(());
    };
    let ids: Vec<&str> = listed.iter().filter_map(|m| m["id"].as_str()).collect();
    if ids.is_empty() || ids.contains(&given) {
        return Ok(());
    }
    let shown: Vec<String> = ids
        .iter()
        .take(8)
        .map(|id| crate::api::error_body::flatten(&id.chars().take(80).collect::<String>()))
        .collect();
    let more = if ids.len() > 8 { ", …" } else { "" };
    Err(Error::Target(format!(
        "--model {:?}: the server lists {} model(s) at /v1/models and not this one ({}{more})",
        given.chars().take(80).collect::<String>(),
        ids.len(),
        shown.join(", ")
    )))
}

/// Keeps the first [`KEPT_MODELS`] models of a long list, and says how many there were.
pub(super) fn keep_models(server: &mut Value) {
    let Some(listed) = server["models"]["data"].as_array_mut() else {
        return;
    };
    let count = listed.len();
    if count > KEPT_MODELS {
        listed.truncate(KEPT_MODELS);
        server["models"]["listed"] = json!(count);
    }
}

/// The longest model name taken from a server's list without being asked for by name.
const MODEL_NAME_LIMIT: usize = 512;

/// The first model the server lists, sent as it is in every request, so only when it is plain
/// text: a name with line breaks, controls or markup (which could only be shown altered) or of
/// more than [`MODEL_NAME_LIMIT`] characters is refused, and `--model` names the one to use.
pub(super) fn first_model(server: &Value) -> crate::error::Result<Option<String>> {
    let Some(name) = server["models"]["data"][0]["id"]
        .as_str()
        .or_else(|| server["models"]["models"][0]["name"].as_str())
    else {
        return Ok(None);
    };
    let length = name.chars().count();
    if length > MODEL_NAME_LIMIT || crate::api::error_body::flatten(name) != name {
        let shown: String = name.chars().take(80).collect();
        let why = if length > MODEL_NAME_LIMIT {
            format!("is {length} characters long")
        } else {
            "is not plain text (line breaks, controls or markup)".to_owned()
        };
        return Err(Error::Target(format!(
            "the first model the server lists ({}{}) {why}: pass --model with the name to use",
            crate::api::error_body::flatten(&shown),
            if length > 80 { "…" } else { "" }
        )));
    }
    Ok(Some(name.to_owned()))
}
