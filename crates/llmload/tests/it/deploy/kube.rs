//! Reading a Kubernetes manifest the way the API server and the kubelet do: YAML documents,
//! the Job's container, its arguments and volumes, and the `$(VAR)` expansion of a container's
//! arguments from its environment.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Every YAML document of `text`, as JSON values.
pub(super) fn documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("YAML: {e}\n{text}")))
        .collect()
}

pub(super) fn str_of<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what}: a string, not {v}"))
}

/// Kubernetes' expansion of `$(VAR)` in a container's command, args and env values: a defined
/// variable is replaced by its value, `$$` is one literal `$`, and anything else (an undefined
/// variable, an unclosed `$(`, a `$` before any other character) stays as it is.
pub(super) fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        rest = match after.chars().next() {
            None => {
                out.push('$');
                after
            }
            Some('$') => {
                out.push('$');
                &after[1..]
            }
            Some('(') => {
                if let Some(close) = after.find(')') {
                    if let Some(value) = env.get(&after[1..close]) {
                        out.push_str(value);
                    } else {
                        out.push('$');
                        out.push_str(&after[..=close]);
                    }
                    &after[close + 1..]
                } else {
                    out.push_str("$(");
                    &after[1..]
                }
            }
            Some(c) => {
                out.push('$');
                out.push(c);
                &after[c.len_utf8()..]
            }
        };
    }
    out.push_str(rest);
    out
}

/// The environment the kubelet gives the Job's container in the pod of `index`: each literal
/// `env` entry in order (each may refer to those before it), then `JOB_COMPLETION_INDEX`, which
/// the Job controller appends to the container's list. Entries from a secret are left out, as an
/// optional secret that does not exist leaves them unset.
pub(super) fn pod_env(container: &Value, index: usize) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for entry in container["env"].as_array().expect("env is a list") {
        if let Some(value) = entry["value"].as_str() {
            let expanded = expand(value, &env);
            env.insert(str_of(&entry["name"], "env name").to_owned(), expanded);
        }
    }
    env.insert("JOB_COMPLETION_INDEX".to_owned(), index.to_string());
    env
}

#[test]
fn expansion_follows_the_kubernetes_rules() {
    let env = BTreeMap::from([
        ("A".to_owned(), "one".to_owned()),
        ("EMPTY".to_owned(), String::new()),
    ]);
    let cases = [
        ("--x=$(A)", "--x=one"),
        ("$(A)/$(A)", "one/one"),
        ("$(EMPTY)-", "-"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$one"),
        ("$(UNKNOWN)", "$(UNKNOWN)"),
        ("pre-$(UNKNOWN)-$(A)", "pre-$(UNKNOWN)-one"),
        ("$(A", "$(A"),
        ("cost: $5", "cost: $5"),
        ("end$", "end$"),
        ("$é$(A)", "$éone"),
        ("no variables", "no variables"),
    ];
    for (input, expected) in cases {
        assert_eq!(expand(input, &env), expected, "{input}");
    }
}

/// The Job's one container.
pub(super) fn container(job: &Value) -> &Value {
    let containers = job["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "one container: {containers:?}");
    &containers[0]
}

/// A container's arguments, as written (before expansion).
pub(super) fn args(container: &Value) -> Vec<&str> {
    container["args"]
        .as_array()
        .expect("args is a list")
        .iter()
        .map(|a| str_of(a, "arg"))
        .collect()
}

/// The arguments of the Job's container.
pub(super) fn args_of(job: &Value) -> Vec<&str> {
    args(container(job))
}

/// The value of `--flag=VALUE` among `args`.
pub(super) fn flag<'a>(args: &[&'a str], name: &str) -> &'a str {
    let prefix = format!("{name}=");
    let values: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix(&prefix))
        .collect();
    assert_eq!(values.len(), 1, "one {name}=… in {args:?}");
    values[0]
}

/// The mount whose path holds `path`, and the volume behind it.
pub(super) fn volume_of<'a>(job: &'a Value, path: &str) -> &'a Value {
    let mounts = container(job)["volumeMounts"].as_array().expect("mounts");
    let mount = mounts
        .iter()
        .find(|m| {
            let at = str_of(&m["mountPath"], "mountPath");
            path.strip_prefix(at).is_some_and(|r| r.starts_with('/'))
        })
        .unwrap_or_else(|| panic!("no volume mounted above {path}"));
    let volumes = job["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    volumes
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap_or_else(|| panic!("no volume {}", mount["name"]))
}
