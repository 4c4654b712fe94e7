//! Output schemas of the tools, taken from the OpenAPI document: a tool's result is the REST
//! body, so its schema is the REST body's, and the two cannot drift apart.
//!
//! OpenAPI 3.1 schemas are JSON Schema 2020-12 (OpenAPI 3.1 §4.8.24), so the conversion is only
//! a move: the named component becomes the root, every component it reaches (transitively)
//! goes under `$defs`, and `#/components/schemas/X` references become `#/$defs/X`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::Value;

const COMPONENTS: &str = "#/components/schemas/";
const DEFS: &str = "#/$defs/";

/// The JSON Schema of the OpenAPI component `name`, self-contained. An unknown name (a bug:
/// the tool table names the components) gives the empty object schema `{"type": "object"}`.
pub fn output_schema(name: &str) -> Arc<JsonObject> {
    let doc = serde_json::to_value(crate::front::openapi::document()).unwrap_or(Value::Null);
    let components = doc.pointer("/components/schemas").and_then(Value::as_object).cloned().unwrap_or_default();
    Arc::new(self_contained(&components, name))
}

/// `name` out of `components` with every schema it references under `$defs`.
fn self_contained(components: &serde_json::Map<String, Value>, name: &str) -> JsonObject {
    let Some(Value::Object(root)) = components.get(name) else {
        let mut empty = JsonObject::new();
        empty.insert("type".into(), Value::from("object"));
        return empty;
    };
    let mut root = Value::Object(root.clone());
    // Every component reached from the root, by a worklist over the references found.
    let mut defs: BTreeMap<String, Value> = BTreeMap::new();
    let mut pending = Vec::new();
    references(&root, &mut pending);
    while let Some(next) = pending.pop() {
        if defs.contains_key(&next) {
            continue;
        }
        if let Some(schema) = components.get(&next) {
            references(schema, &mut pending);
            defs.insert(next, schema.clone());
        }
    }
    rewrite(&mut root);
    let Value::Object(mut root) = root else { return JsonObject::new() };
    if !defs.is_empty() {
        let mut out = serde_json::Map::new();
        for (name, mut schema) in defs {
            rewrite(&mut schema);
            out.insert(name, schema);
        }
        root.insert("$defs".into(), Value::Object(out));
    }
    root.insert("$schema".into(), Value::from("https://json-schema.org/draft/2020-12/schema"));
    root
}

/// The component names `value` references.
fn references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref"
                    && let Some(name) = v.as_str().and_then(|r| r.strip_prefix(COMPONENTS))
                {
                    out.push(name.to_owned());
                }
                references(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

/// Points every component reference of `value` at `$defs`.
fn rewrite(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "$ref"
                    && let Some(name) = v.as_str().and_then(|r| r.strip_prefix(COMPONENTS))
                {
                    *v = Value::from(format!("{DEFS}{name}"));
                } else {
                    rewrite(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_resolves_inside_the_schema() {
        for name in ["CheckResponse", "BulkResponse", "WhoisResponse", "DnsResponse", "SuggestResponse", "TldList"] {
            let schema = Value::Object((*output_schema(name)).clone());
            assert_eq!(schema["type"], "object", "{name}: an MCP output schema is an object schema");
            let mut found = Vec::new();
            fn refs(v: &Value, out: &mut Vec<String>) {
                match v {
                    Value::Object(m) => m.iter().for_each(|(k, v)| {
                        if k == "$ref" {
                            out.push(v.as_str().unwrap_or_default().to_owned());
                        }
                        refs(v, out);
                    }),
                    Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                    _ => {}
                }
            }
            refs(&schema, &mut found);
            for r in found {
                let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("{name}: external $ref {r}"));
                assert!(schema.pointer(pointer).is_some(), "{name}: {r} points nowhere");
            }
        }
    }
}
