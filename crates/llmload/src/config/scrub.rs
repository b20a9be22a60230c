//! The secrets of a resolved run, for the scrubber that every file and terminal line passes
//! through (a server may echo what it was sent).

use super::Config;

impl Config {
    /// Every secret this run sends, for the scrubber every file and terminal line passes
    /// through: the API key, the URL's credentials (as given, the password alone, and as the
    /// basic-authentication value), the values of redacted headers (and their last word, the
    /// token of `Bearer TOKEN`), and the values under secret-looking keys of `--extra-body`.
    pub fn scrubber(&self) -> crate::secrets::Scrubber {
        let mut secrets: Vec<String> = self.api_key.iter().cloned().collect();
        if let Some(credentials) = &self.url_credentials {
            secrets.push(credentials.clone());
            if let Some((_, password)) = credentials.split_once(':') {
                secrets.push(password.to_owned());
            }
            let basic = crate::secrets::basic_auth(credentials);
            secrets.extend(basic.strip_prefix("Basic ").map(str::to_owned));
        }
        for header in self.headers.iter().filter(|h| !h.shown) {
            secrets.push(header.value.clone());
            secrets.extend(header.value.split_whitespace().last().map(str::to_owned));
        }
        if let Some(body) = &self.extra_body {
            secrets.extend(crate::secrets::secret_values(body));
        }
        crate::secrets::Scrubber::new(secrets)
    }
}
