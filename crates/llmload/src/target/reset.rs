//! `--reset-prefix-cache`: before a case, the server is asked to drop what its prefix cache
//! holds, in its own dialect: llama-server erases each slot (`POST /slots/N?action=erase`,
//! served with `--slot-save-path`), vLLM resets (`POST /reset_prefix_cache`, served with
//! `VLLM_SERVER_DEV_MODE=1`), `SGLang` flushes (`POST /flush_cache`); a server of no known
//! dialect is asked the vLLM way, then the `SGLang` way. A refusal is kept with the server's
//! words, reduced to one printable line, and the case runs anyway.

use super::{is_llama_server, said_by, setup_request, Target};
use crate::api::http1::Method;
use crate::record::PrefixReset;

/// The most slots erased one by one.
const MOST_SLOTS: u64 = 1024;

impl Target {
    /// Asks the server to drop its prefix cache; what it did, never an error.
    pub async fn reset_prefix_cache(&self) -> PrefixReset {
        if is_llama_server(&self.server) {
            let slots = self.server["props"]["total_slots"]
                .as_u64()
                .unwrap_or(1)
                .clamp(1, MOST_SLOTS);
            return self.erase_slots(slots).await;
        }
        let owner = self.server["models"]["data"][0]["owned_by"].as_str();
        let paths: &[&str] = match owner {
            Some("vllm") => &["/reset_prefix_cache"],
            Some("sglang") => &["/flush_cache"],
            _ => &["/reset_prefix_cache", "/flush_cache"],
        };
        let mut refusals = Vec::new();
        for path in paths {
            match self.ask(path).await {
                Ok(()) => {
                    return PrefixReset {
                        how: format!("POST {path}"),
                        done: true,
                        refused: None,
                    }
                }
                Err(why) => refusals.push(format!("POST {path}: {why}")),
            }
        }
        PrefixReset {
            how: paths
                .iter()
                .map(|p| format!("POST {p}"))
                .collect::<Vec<_>>()
                .join(", then "),
            done: false,
            refused: Some(refusals.join("; ")),
        }
    }

    /// llama-server's slots `0..slots`, each erased.
    async fn erase_slots(&self, slots: u64) -> PrefixReset {
        let how = format!("POST /slots/N?action=erase for N from 0 to {}", slots - 1);
        for slot in 0..slots {
            if let Err(why) = self.ask(&format!("/slots/{slot}?action=erase")).await {
                return PrefixReset {
                    how,
                    done: false,
                    refused: Some(format!("slot {slot}: {why}")),
                };
            }
        }
        PrefixReset {
            how,
            done: true,
            refused: None,
        }
    }

    /// One `POST path` with an empty JSON body: `Ok` on a success, else why not in one line.
    async fn ask(&self, path: &str) -> Result<(), String> {
        let body = serde_json::json!({});
        match setup_request(&self.endpoint, Method::Post, path, Some(&body)).await {
            Ok((status, _)) if status.is_success() => Ok(()),
            Ok((status, body)) => Err(format!("{status}, {}", said_by(&body))),
            Err(e) => Err(e.to_string()),
        }
    }
}
