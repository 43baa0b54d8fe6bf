//! The request metadata headers of the 2026-07-28 revision: `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers a tool's `inputSchema` asks for
//! with `x-mcp-header`, checked against the body they mirror.
//!
//! A load balancer or gateway may route on these headers without reading the body, so a
//! request whose headers say something the body does not is refused (400, -32020) before
//! it reaches the server: otherwise the two components would act on different requests.
//!
//! `Mcp-Name` and `Mcp-Param-*` values may be sent as `=?base64?<base64 of UTF-8>?=`; they
//! are decoded (strictly: canonical padding, the standard alphabet, valid UTF-8) before
//! the comparison. Integers compare by value (`42.0` equals `42`), booleans as `true` or
//! `false`, strings exactly.

use std::borrow::Cow;

use axum::http::{HeaderMap, HeaderName};
use base64::Engine as _;
use serde_json::Value;

use crate::protocol::inbound::Member;
use crate::protocol::methods::{self, Method, Mirrored as MirroredMember};
use crate::registry::Registry;

use super::request::VERSION_HEADER;

/// `Mcp-Method`.
pub(crate) const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub(crate) const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
/// The prefix of the headers that mirror tool arguments.
const PARAM_PREFIX: &str = "mcp-param-";
const B64_OPEN: &str = "=?base64?";
const B64_CLOSE: &str = "?=";

/// Why the headers disagree with the body: the message of the -32020 error.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Mismatch(pub(crate) String);

fn mismatch(message: impl Into<String>) -> Mismatch {
    Mismatch(format!("Header mismatch: {}", message.into()))
}

/// The body fields the headers mirror.
pub(crate) struct Mirrored<'a> {
    /// The JSON-RPC method.
    pub(crate) method: &'a str,
    /// `_meta["io.modelcontextprotocol/protocolVersion"]`.
    pub(crate) protocol_version: &'a str,
    /// `params.name`.
    pub(crate) name: Member<'a>,
    /// `params.uri`.
    pub(crate) uri: Member<'a>,
    /// `params.taskId`.
    pub(crate) task_id: Member<'a>,
    /// `params.arguments`, unparsed.
    pub(crate) arguments: Option<&'a str>,
}

/// Checks every mirrored header against the body, in a fixed order: the version, the
/// method, the name, then the tool's parameters.
pub(crate) fn check(
    headers: &HeaderMap,
    body: &Mirrored<'_>,
    registry: &Registry,
) -> Result<(), Mismatch> {
    let version = single(headers, &VERSION_HEADER)?
        .ok_or_else(|| mismatch("the MCP-Protocol-Version header is required"))?;
    if version != body.protocol_version {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header value {version:?} does not match body value {:?}",
            body.protocol_version
        )));
    }
    let method = single(headers, &METHOD_HEADER)?
        .ok_or_else(|| mismatch("the Mcp-Method header is required"))?;
    if method != body.method {
        return Err(mismatch(format!(
            "Mcp-Method header value {method:?} does not match body value {:?}",
            body.method
        )));
    }
    // Which member `Mcp-Name` mirrors is the method table's to say.
    let mirrored = Method::parse(body.method).and_then(|m| m.spec().mirrored);
    let (source, field) = match mirrored {
        Some(MirroredMember::Name) => (&body.name, "params.name"),
        Some(MirroredMember::Uri) => (&body.uri, "params.uri"),
        Some(MirroredMember::TaskId) => (&body.task_id, "params.taskId"),
        None => return Ok(()),
    };
    let header = single(headers, &NAME_HEADER)?;
    match (source, header) {
        (Member::Text(expected), Some(raw)) => {
            let got = decode(raw, "Mcp-Name")?;
            if got != expected.as_ref() {
                return Err(mismatch(format!(
                    "Mcp-Name header value {got:?} does not match body value {expected:?}"
                )));
            }
        }
        (Member::Text(_), None) => {
            return Err(mismatch(format!(
                "the Mcp-Name header is required for {} (it mirrors {field})",
                body.method
            )));
        }
        (Member::Absent, Some(_)) => {
            return Err(mismatch(format!(
                "an Mcp-Name header was sent but the body has no {field}"
            )));
        }
        // A name of the wrong type is the dispatcher's to refuse (-32602).
        _ => {}
    }
    if body.method == methods::TOOLS_CALL
        && let Member::Text(tool) = &body.name
    {
        check_params(headers, registry, tool, body.arguments)?;
    }
    Ok(())
}

/// The `Mcp-Param-*` headers of one `tools/call`.
fn check_params(
    headers: &HeaderMap,
    registry: &Registry,
    tool: &str,
    arguments: Option<&str>,
) -> Result<(), Mismatch> {
    let snapshot = registry.snapshot();
    // An unknown tool is the dispatcher's to refuse (-32602).
    let Some(def) = snapshot.tool(tool) else {
        return Ok(());
    };
    let mirrored = def.header_params();
    if mirrored.is_empty() {
        return Ok(());
    }
    let arguments: Value = match arguments {
        Some(raw) => serde_json::from_str(raw).unwrap_or(Value::Null),
        None => Value::Null,
    };
    for param in mirrored {
        let Ok(header) = HeaderName::from_bytes(
            format!("{PARAM_PREFIX}{}", param.header.to_ascii_lowercase()).as_bytes(),
        ) else {
            // Not a header name at all: no client can send it, so nothing is mirrored.
            continue;
        };
        let display = format!("Mcp-Param-{}", param.header);
        let value = param
            .path
            .iter()
            .try_fold(&arguments, |v, key| v.get(key.as_str()));
        let sent = single(headers, &header)?;
        match (value, sent) {
            (None | Some(Value::Null), None) => {}
            (None | Some(Value::Null), Some(_)) => {
                return Err(mismatch(format!(
                    "{display} was sent but the arguments have no value at {}",
                    param.path.join(".")
                )));
            }
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "the {display} header is required: it mirrors argument {}",
                    param.path.join(".")
                )));
            }
            (Some(body), Some(raw)) => {
                let got = decode(raw, &display)?;
                if !same_value(&got, body) {
                    return Err(mismatch(format!(
                        "{display} header value {got:?} does not match body value {body}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A header's value without surrounding whitespace, when it appears once. A value that is
/// not visible ASCII (with spaces and tabs) or a header sent twice is refused.
fn single<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<Option<&'h str>, Mismatch> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(mismatch(format!(
            "the {name} header appears more than once"
        )));
    }
    let text = first.to_str().map_err(|_| {
        mismatch(format!(
            "the {name} header contains characters outside visible ASCII; send such values as =?base64?...?="
        ))
    })?;
    // `to_str` let only visible ASCII, spaces and tabs through: the ASCII whitespace
    // trimmed here is the spaces and tabs around the value (a pattern trim costs 4x more).
    Ok(Some(text.trim_ascii()))
}

/// Decodes a value that may use the `=?base64?...?=` form; anything else is literal.
pub(crate) fn decode<'a>(raw: &'a str, header: &str) -> Result<Cow<'a, str>, Mismatch> {
    let Some(inner) = raw
        .strip_prefix(B64_OPEN)
        .and_then(|rest| rest.strip_suffix(B64_CLOSE))
    else {
        return Ok(Cow::Borrowed(raw));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .map_err(|e| mismatch(format!("the {header} header is not valid base64 ({e})")))?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| mismatch(format!("the {header} header does not decode to UTF-8 text")))
}

/// Whether a header's (decoded) text stands for the body's value.
fn same_value(text: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => s == text,
        Value::Bool(b) => text == if *b { "true" } else { "false" },
        Value::Number(n) => match (text.parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(b)) => h.is_finite() && h == b,
            _ => false,
        },
        // Objects, arrays and null cannot be mirrored.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::tool_schema::{HeaderParam, header_params};
    use axum::http::HeaderValue;
    use serde_json::json;

    #[test]
    fn base64_values_decode_strictly_and_others_are_literal() {
        assert_eq!(decode("us-west1", "h").unwrap(), "us-west1");
        assert_eq!(
            decode("=?base64?SGVsbG8sIOS4lueVjA==?=", "h").unwrap(),
            "Hello, 世界"
        );
        assert_eq!(decode("=?base64?IHBhZGRlZCA=?=", "h").unwrap(), " padded ");
        // Bad padding, characters outside the alphabet, bytes that are not UTF-8.
        for bad in [
            "=?base64?SGVsbG8?=",
            "=?base64?SGVs!!!bG8=?=",
            "=?base64?/w==?=",
        ] {
            assert!(decode(bad, "h").is_err(), "{bad}");
        }
        // Without both markers the value is literal.
        assert_eq!(
            decode("=?base64?SGVsbG8=", "h").unwrap(),
            "=?base64?SGVsbG8="
        );
        assert_eq!(decode("SGVsbG8=?=", "h").unwrap(), "SGVsbG8=?=");
    }

    #[test]
    fn values_compare_by_type() {
        assert!(same_value("42", &json!(42)));
        assert!(same_value("42.0", &json!(42)));
        assert!(same_value("-7", &json!(-7)));
        assert!(!same_value("42", &json!("42 ")));
        assert!(!same_value("0x2a", &json!(42)));
        assert!(same_value("true", &json!(true)));
        assert!(!same_value("True", &json!(true)));
        assert!(same_value("a b", &json!("a b")));
        assert!(!same_value("{}", &json!({})));
    }

    #[test]
    fn only_properties_chains_mirror_arguments() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "nested": {"type": "object", "properties": {
                    "id": {"type": "integer", "x-mcp-header": "Id"}
                }},
                "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
                "choice": {"anyOf": [{"type": "string", "x-mcp-header": "Choice"}]}
            }
        });
        let found = header_params(&schema);
        assert_eq!(
            found,
            vec![
                HeaderParam {
                    path: vec!["nested".into(), "id".into()],
                    header: "Id".into()
                },
                HeaderParam {
                    path: vec!["region".into()],
                    header: "Region".into()
                },
            ]
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_standard_headers_must_match_the_body() {
        let registry = Registry::new();
        let body = Mirrored {
            method: "tools/call",
            protocol_version: "2026-07-28",
            name: Member::Text("add".into()),
            uri: Member::Absent,
            task_id: Member::Absent,
            arguments: None,
        };
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "\t add  "),
        ];
        assert_eq!(check(&headers(&good), &body, &registry), Ok(()));
        let cases: [&[(&'static str, &str)]; 6] = [
            &good[1..],
            &[good[0], good[2]],
            &[good[0], ("mcp-method", "TOOLS/CALL"), good[2]],
            &good[..2],
            &[good[0], good[1], ("mcp-name", "sub")],
            &[good[0], good[1], good[2], ("mcp-name", "add")],
        ];
        for case in cases {
            assert!(check(&headers(case), &body, &registry).is_err(), "{case:?}");
        }
    }
}
