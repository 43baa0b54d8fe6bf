//! The edge of the pipeline: what an incoming message says about itself, read once.
//!
//! A transport decodes a frame into a [`Message`], then asks this module
//! which protocol era it belongs to ([`EraSignals::era`], the one place the era is
//! decided) and, for a 2026-07-28 request, for its validated metadata
//! ([`StatelessMeta::parse`] and [`StatelessMeta::admit`]). The result travels with the
//! request (in the transport's `RequestExtras`); nothing below re-detects the era or
//! re-parses `_meta`.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::methods::{self, Method};
use super::stateless::{RawText, Required, Reserved};
use super::{
    ClientCapabilities, Era, ErrorObject, Implementation, LoggingLevel, Message, Meta, Params,
    ProtocolVersion, codes, meta_keys,
};

/// The revisions a client may name in a request's `_meta` (the list `server/discover` and
/// -32022 report). Handshake revisions are reached through `initialize` instead.
pub const STATELESS_VERSIONS: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

/// What the `MCP-Protocol-Version` HTTP header says about the era.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VersionHeader {
    /// No header (always so on stdio).
    #[default]
    Absent,
    /// A handshake revision.
    Handshake,
    /// Anything else: 2026-07-28, a revision this server does not know, or junk.
    Other,
}

impl VersionHeader {
    /// Classifies the header's text, if the header is present.
    pub fn of(value: Option<&str>) -> Self {
        match value {
            None => VersionHeader::Absent,
            Some(v) => match v.trim().parse::<ProtocolVersion>() {
                Ok(v) if ProtocolVersion::HANDSHAKE.contains(&v) => VersionHeader::Handshake,
                _ => VersionHeader::Other,
            },
        }
    }
}

/// What one message shows about its era.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EraSignals {
    /// The message is an `initialize` request.
    pub initialize: bool,
    /// The message is a `server/discover` request.
    pub discover: bool,
    /// Its params' `_meta` declares a protocol version. [`EraSignals::of`] looks only when
    /// the header leaves the era open: a header naming a version that is not a handshake
    /// revision means 2026-07-28 whatever `_meta` says, and finding the key means scanning
    /// the whole params (a tool call's arguments included).
    pub declares_version: bool,
    /// The `MCP-Protocol-Version` header (HTTP).
    pub header: VersionHeader,
}

impl EraSignals {
    /// Reads the signals of a decoded message.
    pub fn of_message(message: &Message, header: VersionHeader) -> Self {
        match message {
            Message::Request(r) => {
                EraSignals::of(&r.method, r.params.as_ref().map(Params::get), header)
            }
            Message::Notification(n) => {
                EraSignals::of(&n.method, n.params.as_ref().map(Params::get), header)
            }
            Message::Response(_) => EraSignals {
                header,
                ..EraSignals::default()
            },
        }
    }

    /// Reads the signals of a method and its params.
    pub fn of(method: &str, params: Option<&str>, header: VersionHeader) -> Self {
        EraSignals {
            initialize: method == methods::INITIALIZE,
            discover: method == methods::SERVER_DISCOVER,
            declares_version: header != VersionHeader::Other && declares_version(params),
            header,
        }
    }

    /// The era the message belongs to, or `None` when nothing in it decides: the only
    /// place the era is decided. A version in `_meta` or a header that is not a handshake
    /// revision means 2026-07-28; then `initialize` or a handshake header means the
    /// handshake era; then `server/discover` means 2026-07-28. An undecided message is
    /// served by what its transport knows (a connection's earlier messages, or HTTP's
    /// sessionless setting).
    pub fn era(&self) -> Option<Era> {
        if self.declares_version || self.header == VersionHeader::Other {
            Some(Era::Stateless)
        } else if self.initialize || self.header == VersionHeader::Handshake {
            Some(Era::Handshake)
        } else if self.discover {
            Some(Era::Stateless)
        } else {
            None
        }
    }
}

/// Whether params declare a protocol version in `_meta`: the mark of a 2026-07-28 request.
/// Handshake-era traffic pays a substring search; only a hit is parsed, and then only
/// `_meta`'s keys are looked at (nothing is built: its values are skipped).
fn declares_version(params: Option<&str>) -> bool {
    #[derive(Deserialize)]
    struct OnlyMeta {
        #[serde(rename = "_meta", default)]
        meta: Option<VersionProbe>,
    }
    let Some(raw) = params else { return false };
    if !raw.contains(meta_keys::PROTOCOL_VERSION) {
        return false;
    }
    serde_json::from_str::<OnlyMeta>(raw)
        .ok()
        .and_then(|p| p.meta)
        .is_some_and(|VersionProbe(found)| found)
}

/// Whether a `_meta` object has the protocol version among its keys.
struct VersionProbe(bool);

impl<'de> Deserialize<'de> for VersionProbe {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = VersionProbe;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<VersionProbe, A::Error> {
                let mut found = false;
                while let Some(is_version) = map.next_key_seed(IsVersion)? {
                    found |= is_version;
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                Ok(VersionProbe(found))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// Reads a key as whether it is the protocol version's, without keeping it.
struct IsVersion;

impl<'de> serde::de::DeserializeSeed<'de> for IsVersion {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for IsVersion {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == meta_keys::PROTOCOL_VERSION)
    }
}

/// A W3C trace context a client passed in `_meta` (`traceparent`, `tracestate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    /// `traceparent`.
    pub traceparent: String,
    /// `tracestate`, if any.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The trace context among `_meta`'s members (ignored unless `traceparent` is a string).
    fn from_reserved(meta: &Reserved<'_>) -> Option<TraceContext> {
        let text =
            |v: Option<RawText<'_>>| v.and_then(|v| serde_json::from_str::<String>(v.0).ok());
        Some(TraceContext {
            traceparent: text(meta.traceparent)?,
            tracestate: text(meta.tracestate),
        })
    }
}

/// A 2026-07-28 request's metadata, parsed once at the edge and validated.
#[derive(Clone, Debug)]
pub struct StatelessMeta {
    /// The protocol version the request speaks.
    pub protocol_version: String,
    /// What the client can do for this request, shared with every `Ctx` of the request.
    pub capabilities: Arc<ClientCapabilities>,
    /// The minimum level of log messages wanted for this request.
    pub log_level: Option<LoggingLevel>,
    /// The trace context, if the client sent one.
    pub trace: Option<TraceContext>,
    /// The request's params, which `_meta` was read from: [`StatelessMeta::meta`] and
    /// [`StatelessMeta::client_info`] read them again when asked (most requests never
    /// ask), so nothing of `_meta` is copied or built per request.
    params: Option<Params>,
    /// `_meta` as a map, made the first time someone asks for it.
    map: OnceLock<Meta>,
    /// `_meta`'s client info, read the first time someone asks for it.
    client_info: OnceLock<Option<Implementation>>,
    /// Where the head's members lie in the params, so the dispatcher does not read them
    /// again; `None` when they could not be placed (never for a head read from them).
    spans: Option<HeadSpans>,
}

/// The members of a `tools/call`'s params as the edge found them, each as its JSON text
/// (`None`: not there, or `null`).
#[derive(Clone, Debug)]
pub(crate) struct CallMembers<'a> {
    /// `name`: the tool's, if it is a string.
    pub(crate) name: Member<'a>,
    /// `arguments`.
    pub(crate) arguments: Option<&'a str>,
    /// `_meta.progressToken`.
    pub(crate) progress_token: Option<&'a str>,
}

/// The members of a 2026-07-28 request's params that the edge reads, found in one pass
/// over them: `_meta`'s reserved members among them, so `_meta` is not scanned twice.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub struct ParamsHead<'a> {
    /// `_meta`'s members that the server reads.
    #[serde(rename = "_meta")]
    pub meta: Option<MetaMembers<'a>>,
    /// `name` (`tools/call`, `prompts/get`), as sent ([`ParamsHead::text`] reads it).
    #[serde(deserialize_with = "raw_text")]
    pub name: Option<&'a str>,
    /// `uri` (`resources/read`), as sent.
    #[serde(deserialize_with = "raw_text")]
    pub uri: Option<&'a str>,
    /// `taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`), as sent.
    #[serde(rename = "taskId", deserialize_with = "raw_text")]
    pub task_id: Option<&'a str>,
    /// `arguments` (`tools/call`), as sent.
    #[serde(deserialize_with = "raw_text")]
    pub arguments: Option<&'a str>,
    /// `inputResponses` (a `tools/call` answering a question), as sent.
    #[serde(rename = "inputResponses", deserialize_with = "raw_text")]
    pub input_responses: Option<&'a str>,
    /// `requestState` (a `tools/call` answering a question), as sent.
    #[serde(rename = "requestState", deserialize_with = "raw_text")]
    pub request_state: Option<&'a str>,
}

/// Where the members of a [`ParamsHead`] lie in the text it was read from: what a request's
/// [`Params`] keep of the head the envelope's reader read with them, so that neither the
/// edge nor the dispatcher reads the params again to find their members.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeadSpans {
    /// `name`, `uri`, `taskId`, `arguments`, `inputResponses`, `requestState`: each one's
    /// start and end, `(0, 0)` when it is absent (a member's JSON text is never empty).
    members: [(u32, u32); 6],
    /// `_meta`'s reserved members the same way, in
    /// [`Reserved`](crate::protocol::stateless::Reserved)'s order, when `_meta` is there.
    reserved: Option<[(u32, u32); 7]>,
}

impl HeadSpans {
    /// Where `head`'s members lie in `text`, which it was read from (`None` when one does
    /// not lie in it).
    pub(crate) fn of(head: &ParamsHead<'_>, text: &str) -> Option<HeadSpans> {
        u32::try_from(text.len()).ok()?;
        let reserved = match &head.meta {
            Some(meta) => Some(spans_of(meta.reserved.members(), text)?),
            None => None,
        };
        Some(HeadSpans {
            members: spans_of(head.members(), text)?,
            reserved,
        })
    }

    /// What a `tools/call` needs of the head these spans place in `text`, without placing
    /// the rest: `None` when the params answer the server's questions (a rare round, whose
    /// answers are parsed where they are used).
    pub(crate) fn call_members<'a>(&self, text: &'a str) -> Option<CallMembers<'a>> {
        let [name, _, _, arguments, input_responses, request_state] = self.members;
        if input_responses != (0, 0) || request_state != (0, 0) {
            return None;
        }
        let token = self.reserved.map_or((0, 0), |reserved| reserved[6]);
        Some(CallMembers {
            name: ParamsHead::text(place(name, text)?),
            arguments: place(arguments, text)?,
            progress_token: place(token, text)?,
        })
    }

    /// The head these spans place in `text` (`None` when a span does not lie in it).
    pub(crate) fn head<'a>(&self, text: &'a str) -> Option<ParamsHead<'a>> {
        let members = places(&self.members, text)?;
        let meta = match &self.reserved {
            Some(reserved) => Some(MetaMembers {
                reserved: Reserved::of_members(places(reserved, text)?),
            }),
            None => None,
        };
        // In `members`' order (see `ParamsHead::members`).
        Some(ParamsHead {
            meta,
            name: members[0],
            uri: members[1],
            task_id: members[2],
            arguments: members[3],
            input_responses: members[4],
            request_state: members[5],
        })
    }
}

/// Where each of `members` lies in `text` (`None` when one does not lie in it).
fn spans_of<const N: usize>(members: [Option<&str>; N], text: &str) -> Option<[(u32, u32); N]> {
    let mut spans = [(0, 0); N];
    for (span, member) in spans.iter_mut().zip(members) {
        if let Some(member) = member {
            let range = super::params::range_in(text, member)?;
            // `text` fits in a u32 (checked by the caller), so each offset in it does.
            *span = (range.start as u32, range.end as u32);
        }
    }
    Some(spans)
}

/// The member `span` places in `text`: `Some(None)` when it is absent, `None` when it does
/// not lie in `text`.
fn place(span: (u32, u32), text: &str) -> Option<Option<&str>> {
    match span {
        (_, 0) => Some(None),
        (start, end) => text.get(start as usize..end as usize).map(Some),
    }
}

/// [`place`] for each of `spans`.
fn places<'a, const N: usize>(
    spans: &[(u32, u32); N],
    text: &'a str,
) -> Option<[Option<&'a str>; N]> {
    let mut members = [None; N];
    for (member, &span) in members.iter_mut().zip(spans) {
        *member = place(span, text)?;
    }
    Some(members)
}

/// Reads a member as its JSON text, validated and kept as sent (`null` is absent, as for an
/// `Option<&RawValue>`).
pub(crate) fn raw_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<&'de str>, D::Error> {
    Option::<&'de RawValue>::deserialize(d).map(|raw| raw.map(RawValue::get))
}

/// A member of the params as [`ParamsHead`] found it, by what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Member<'a> {
    /// Not there, or `null`.
    Absent,
    /// A string (borrowed from the params unless it had escapes).
    Text(Cow<'a, str>),
    /// Any other JSON value.
    Other,
}

impl<'a> ParamsHead<'a> {
    /// The head of a request's params: the one read with the envelope when there is one,
    /// else read now ([`ParamsHead::parse`]).
    pub fn of(params: Option<&'a Params>) -> Result<ParamsHead<'a>, ErrorObject> {
        match params.and_then(Params::head) {
            Some(head) => Ok(head),
            None => ParamsHead::parse(params.map(Params::get)),
        }
    }

    /// Its members other than `_meta`, in [`HeadSpans`]' order.
    fn members(&self) -> [Option<&'a str>; 6] {
        [
            self.name,
            self.uri,
            self.task_id,
            self.arguments,
            self.input_responses,
            self.request_state,
        ]
    }

    /// Reads the head of `params` (-32602 when they are not an object, or `_meta` is not an
    /// object that names each reserved member at most once).
    pub fn parse(params: Option<&'a str>) -> Result<ParamsHead<'a>, ErrorObject> {
        match params {
            Some(raw) => serde_json::from_str(raw)
                .map(|FromObject(head)| head)
                .map_err(|_| unreadable(raw)),
            None => Ok(ParamsHead::default()),
        }
    }

    /// Whether `_meta` names a protocol version.
    pub fn declares_version(&self) -> bool {
        self.meta
            .as_ref()
            .is_some_and(MetaMembers::declares_version)
    }

    /// What a member of the head holds (`name`, `uri` or `taskId`).
    pub fn text(member: Option<&'a str>) -> Member<'a> {
        member.map_or(Member::Absent, Member::of)
    }
}

impl<'a> Member<'a> {
    /// What `raw`, the JSON text of a member that is there, holds.
    fn of(raw: &'a str) -> Member<'a> {
        if !raw.starts_with('"') {
            return Member::Other;
        }
        // A `RawValue` is valid JSON: a string without escapes is what lies between its
        // quotes; one with escapes is decoded.
        match raw.get(1..raw.len() - 1) {
            Some(text) if !text.contains('\\') => Member::Text(Cow::Borrowed(text)),
            _ => serde_json::from_str::<String>(raw)
                .map_or(Member::Other, |text| Member::Text(Cow::Owned(text))),
        }
    }
}

/// The error for params [`ParamsHead`] could not read: when `_meta` is what is wrong with
/// them, the error says what `_meta` must be. Only a refused request pays for reading them
/// again.
fn unreadable(raw: &str) -> ErrorObject {
    /// Only `_meta`, as sent.
    #[derive(Deserialize)]
    struct OnlyMeta<'a> {
        #[serde(rename = "_meta", default, borrow)]
        meta: Option<&'a RawValue>,
    }
    let meta = serde_json::from_str::<FromObject<OnlyMeta<'_>>>(raw)
        .ok()
        .and_then(|FromObject(only)| only.meta);
    match meta {
        // serde's own message would name an internal type and a position inside `_meta`;
        // this one says what to send instead.
        Some(meta) if serde_json::from_str::<MetaMembers<'_>>(meta.get()).is_err() => {
            ErrorObject::invalid_params(
                "Invalid params: _meta must be a JSON object that names each \
                 io.modelcontextprotocol/ member at most once",
            )
        }
        _ => ErrorObject::invalid_params("Invalid params: params must be an object carrying _meta"),
    }
}

/// The members of a request's `_meta` that the server reads, found without building a map
/// of it (the rest is skipped).
#[derive(Debug, Default)]
pub struct MetaMembers<'a> {
    reserved: Reserved<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for MetaMembers<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let FromObject(reserved) = FromObject::deserialize(d)?;
        Ok(MetaMembers { reserved })
    }
}

/// A struct read only from a JSON object: serde's derived readers also take an array,
/// member by member in declaration order, and `["2026-07-28", {}]` is no `_meta`.
struct FromObject<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for FromObject<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
            type Value = T;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Object(std::marker::PhantomData))
            .map(FromObject)
    }
}

impl MetaMembers<'_> {
    /// Whether `_meta` names a protocol version.
    pub fn declares_version(&self) -> bool {
        self.reserved.protocol_version.is_some()
    }
}

impl StatelessMeta {
    /// Validates the reserved members of a request's `_meta` (-32602 when one is missing
    /// or malformed), as [`ParamsHead::parse`] read them from `params`, which the metadata
    /// keeps for [`StatelessMeta::meta`]. `handshake_hint` ends the advice given when
    /// there is no `_meta` at all: what a handshake-era client does instead on this
    /// transport.
    pub fn parse(
        head: &ParamsHead<'_>,
        params: Option<&Params>,
        handshake_hint: &str,
    ) -> Result<StatelessMeta, ErrorObject> {
        let Some(meta) = &head.meta else {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: {}; a 2026-07-28 request carries _meta with \
                 io.modelcontextprotocol/protocolVersion and \
                 io.modelcontextprotocol/clientCapabilities (a handshake-era client {handshake_hint})",
                super::stateless::NO_META
            )));
        };
        let required = Required::from_reserved(&meta.reserved).map_err(|e| {
            let super::MetaError::Invalid(reason) = e;
            ErrorObject::invalid_params(format!("Invalid params: {reason}"))
        })?;
        Ok(StatelessMeta {
            protocol_version: required.protocol_version,
            capabilities: Arc::new(required.capabilities),
            log_level: required.log_level,
            trace: TraceContext::from_reserved(&meta.reserved),
            spans: params.and_then(|params| HeadSpans::of(head, params.get())),
            params: params.cloned(),
            map: OnceLock::new(),
            client_info: OnceLock::new(),
        })
    }

    /// The members of a `tools/call`'s params, as the edge read them. `None` when it could
    /// not place them, or when the params answer the server's questions (a rare round,
    /// whose answers are parsed where they are used): read the params instead.
    pub(crate) fn call_members(&self) -> Option<CallMembers<'_>> {
        self.spans
            .as_ref()?
            .call_members(self.params.as_ref()?.get())
    }

    /// The whole `_meta` object as the client sent it.
    pub fn meta(&self) -> &Meta {
        self.map.get_or_init(|| {
            #[derive(Deserialize)]
            struct OnlyMeta {
                #[serde(rename = "_meta", default)]
                meta: Option<Meta>,
            }
            // The params were read as an object with `_meta` one when the request came in.
            self.params
                .as_ref()
                .and_then(|params| serde_json::from_str::<OnlyMeta>(params.get()).ok())
                .and_then(|read| read.meta)
                .unwrap_or_default()
        })
    }

    /// Checks what follows the metadata, in the order the specification and the conformance
    /// suite expect: the version (-32022), then the method (-32601).
    pub fn admit(&self, method: &str) -> Result<Method, ErrorObject> {
        let supported = STATELESS_VERSIONS
            .iter()
            .any(|v| v.as_str() == self.protocol_version);
        if !supported {
            return Err(ErrorObject::new(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(json!({
                "supported": STATELESS_VERSIONS.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
                "requested": self.protocol_version,
            })));
        }
        match Method::parse(method) {
            Some(m) if m.spec().stateless && !m.spec().notification => Ok(m),
            Some(m) if m.spec().handshake => Err(ErrorObject::method_not_found(format!(
                "Method not found: {method} is not part of protocol 2026-07-28"
            ))),
            _ => Err(ErrorObject::method_not_found(format!(
                "Unknown method: {method}"
            ))),
        }
    }

    /// Parses and admits the metadata of a request that reached the server with nothing
    /// read yet (stdio): -32602, then -32022, then -32601.
    pub fn read(method: &str, params: Option<&Params>) -> Result<StatelessMeta, ErrorObject> {
        let head = ParamsHead::of(params)?;
        let meta = StatelessMeta::parse(&head, params, "sends initialize first")?;
        meta.admit(method)?;
        Ok(meta)
    }

    /// The client's identity, if it said (read from `_meta` the first time it is asked
    /// for; a `clientInfo` that is not one is no identity).
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client_info
            .get_or_init(|| {
                let info = self.meta().get(meta_keys::CLIENT_INFO)?;
                Implementation::deserialize(info).ok()
            })
            .as_ref()
    }

    /// The minimum log level the request asked for.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RequestMeta;

    /// [`StatelessMeta::read`] of params given as text.
    fn read(method: &str, params: Option<&str>) -> Result<StatelessMeta, ErrorObject> {
        let params = params.map(|text| {
            Params::from(serde_json::from_str::<&RawValue>(text).expect("test params are JSON"))
        });
        StatelessMeta::read(method, params.as_ref())
    }

    fn signals(init: bool, discover: bool, meta: bool, header: VersionHeader) -> Option<Era> {
        EraSignals {
            initialize: init,
            discover,
            declares_version: meta,
            header,
        }
        .era()
    }

    #[test]
    fn the_era_follows_the_rules() {
        use VersionHeader::{Absent, Handshake, Other};
        assert_eq!(signals(true, false, false, Absent), Some(Era::Handshake));
        assert_eq!(signals(true, false, false, Handshake), Some(Era::Handshake));
        assert_eq!(signals(true, false, true, Absent), Some(Era::Stateless));
        assert_eq!(signals(true, false, false, Other), Some(Era::Stateless));
        assert_eq!(
            signals(false, false, false, Handshake),
            Some(Era::Handshake)
        );
        assert_eq!(signals(false, false, true, Handshake), Some(Era::Stateless));
        assert_eq!(signals(false, true, false, Absent), Some(Era::Stateless));
        assert_eq!(signals(false, false, false, Absent), None);
    }

    /// Only a protocol version among `_meta`'s own keys marks a 2026-07-28 request, as
    /// when `_meta` was read into a map, whatever its value.
    #[test]
    fn only_a_version_in_meta_declares_one() {
        let v = meta_keys::PROTOCOL_VERSION;
        for (params, declares) in [
            (format!(r#"{{"_meta":{{"{v}":"2026-07-28"}}}}"#), true),
            (
                format!(
                    r#"{{"name":"x","arguments":{{"a":[1,{{"b":null}}]}},"_meta":{{"x":{{"y":[true,"\u0041"]}},"{v}":null,"z":2}}}}"#
                ),
                true,
            ),
            (
                format!(
                    r#"{{"_meta":{{"{}":"2026-07-28"}}}}"#,
                    v.replace('/', "\\/")
                ),
                // Found by the substring search only as written plainly.
                false,
            ),
            (format!(r#"{{"arguments":{{"{v}":"2026-07-28"}}}}"#), false),
            (
                format!(r#"{{"_meta":{{"x":{{"{v}":"2026-07-28"}}}}}}"#),
                false,
            ),
            (format!(r#"{{"_meta":["{v}"]}}"#), false),
            (format!(r#"{{"_meta":"{v}"}}"#), false),
            (format!(r#"{{"_meta":null,"x":"{v}"}}"#), false),
            (format!(r#"["{v}"]"#), false),
            (
                format!(r#"{{"_meta":{{"{v}":1}},"_meta":{{"{v}":1}}}}"#),
                false,
            ),
            (format!(r#"{{"_meta":{{"{v}":1,}}}}"#), false),
        ] {
            assert_eq!(declares_version(Some(&params)), declares, "{params}");
        }
        assert!(!declares_version(None));
    }

    /// Reading a message's signals decides as the rules do, and skips the scan of the
    /// params only when the header has decided already.
    #[test]
    fn a_deciding_header_spares_the_scan_of_the_params() {
        use VersionHeader::{Absent, Handshake, Other};
        let v = meta_keys::PROTOCOL_VERSION;
        let declaring = format!(r#"{{"name":"x","_meta":{{"{v}":"2026-07-28"}}}}"#);
        let plain = r#"{"name":"x","arguments":{}}"#;
        for (params, header, declares, era) in [
            (declaring.as_str(), Absent, true, Some(Era::Stateless)),
            (declaring.as_str(), Handshake, true, Some(Era::Stateless)),
            (declaring.as_str(), Other, false, Some(Era::Stateless)),
            (plain, Absent, false, None),
            (plain, Handshake, false, Some(Era::Handshake)),
            (plain, Other, false, Some(Era::Stateless)),
        ] {
            let read = EraSignals::of(methods::TOOLS_CALL, Some(params), header);
            assert_eq!(read.declares_version, declares, "{params} {header:?}");
            assert_eq!(read.era(), era, "{params} {header:?}");
        }
    }

    #[test]
    fn version_headers_are_classified_by_era() {
        assert_eq!(VersionHeader::of(None), VersionHeader::Absent);
        for (value, era) in [
            ("2025-11-25", VersionHeader::Handshake),
            (" 2025-03-26 ", VersionHeader::Handshake),
            ("2026-07-28", VersionHeader::Other),
            ("v999", VersionHeader::Other),
        ] {
            assert_eq!(VersionHeader::of(Some(value)), era, "{value}");
        }
    }

    #[test]
    fn metadata_is_checked_in_the_specified_order() {
        let bad_meta = r#"{"_meta":{}}"#;
        assert_eq!(
            read("nope", Some(bad_meta)).unwrap_err().code,
            codes::INVALID_PARAMS
        );
        let old = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}"#;
        assert_eq!(
            read("nope", Some(old)).unwrap_err().code,
            codes::UNSUPPORTED_PROTOCOL_VERSION
        );
        let good = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-a-b-01"}}"#;
        let e = read("ping", Some(good)).unwrap_err();
        assert!(e.message.contains("not part of protocol 2026-07-28"));
        let meta = read("tools/list", Some(good)).unwrap();
        assert_eq!(meta.trace.unwrap().traceparent, "00-a-b-01");
    }

    #[test]
    fn a_calls_members_are_handed_on_as_the_edge_found_them() {
        let meta = r#""_meta":{"progressToken":"p-1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let params = format!(
            r#"{{"name":"ech\u006f","arguments":{{"text":"hé"}},{meta},"inputResponses":{{"a":{{"action":"accept"}}}},"requestState":"s"}}"#
        );
        // A call answering the server's questions is left to the dispatcher's reader.
        let found = read("tools/call", Some(&params)).unwrap();
        assert!(found.call_members().is_none());
        let plain = format!(r#"{{"name":"ech\u006f","arguments":{{"text":"hé"}},{meta}}}"#);
        let found = read("tools/call", Some(&plain)).unwrap();
        let call = found.call_members().unwrap();
        assert_eq!(call.name, Member::Text("echo".into()), "escapes decoded");
        assert_eq!(call.arguments, Some(r#"{"text":"hé"}"#));
        assert_eq!(call.progress_token, Some(r#""p-1""#));

        // Absent and null members are not there; a name that is no string is `Other`.
        let bare = format!(r#"{{"name":7,"arguments":null,{meta}}}"#);
        let call = read("tools/call", Some(&bare)).unwrap();
        let call = call.call_members().unwrap();
        assert_eq!((call.name, call.arguments), (Member::Other, None));

        // A head read from other text cannot be placed in these params: nothing is handed
        // on, and the dispatcher reads the params itself.
        let text = format!(r#"{{"name":"x",{meta}}}"#);
        let copy = text.clone();
        let head = ParamsHead::parse(Some(&copy)).unwrap();
        let params = Params::from(serde_json::from_str::<&RawValue>(&text).unwrap());
        let meta = StatelessMeta::parse(&head, Some(&params), "").unwrap();
        assert!(meta.call_members().is_none());
        // A progress token given twice makes `_meta` malformed, as any member twice does.
        let twice = r#"{"_meta":{"progressToken":1,"progressToken":2,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
        assert!(read("tools/call", Some(twice)).is_err());
    }

    #[test]
    fn meta_is_read_in_one_pass_and_kept_whole() {
        let params = r#"{"_meta":{"x-app":{"n":[1,2]},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/logLevel":"info","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"traceparent":7}}"#;
        let meta = read("tools/list", Some(params)).unwrap();
        assert_eq!(meta.protocol_version, "2026-07-28");
        assert!(meta.capabilities.elicitation.is_some());
        assert_eq!(meta.log_level(), Some(LoggingLevel::Info));
        assert_eq!(meta.client_info().unwrap().name, "c");
        // A trace context that is not a string is ignored, not an error.
        assert!(meta.trace.is_none());
        // Every member, the server's and the application's, as sent.
        assert_eq!(meta.meta()["x-app"], json!({"n": [1, 2]}));
        assert_eq!(meta.meta().len(), 6);

        let invalid = |params: &str| read("tools/list", Some(params)).unwrap_err();
        // Without `_meta` at all, the error says what a 2026-07-28 request carries and what
        // a handshake-era client does instead.
        let none = invalid(r#"{"name":"x"}"#);
        assert!(none.message.contains("has no _meta"), "{}", none.message);
        assert!(
            none.message.contains("sends initialize first"),
            "{}",
            none.message
        );
        for params in [
            r#"{"_meta":"2026-07-28"}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}"#,
        ] {
            let e = invalid(params);
            assert_eq!(e.code, codes::INVALID_PARAMS, "{params}");
            assert!(!e.message.contains("Reserved"), "{}", e.message);
        }
    }

    #[test]
    fn request_meta_reads_a_map_as_it_reads_text() {
        let map: Meta = serde_json::from_value(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/logLevel": "debug",
        }))
        .unwrap();
        let read = RequestMeta::from_meta(Some(&map)).unwrap();
        assert_eq!(read.protocol_version, "2026-07-28");
        assert!(read.capabilities.sampling.is_some());
        assert_eq!(read.log_level, Some(LoggingLevel::Debug));
        assert!(RequestMeta::from_meta(None).is_err());
        let mut no_capabilities = map;
        no_capabilities.remove("io.modelcontextprotocol/clientCapabilities");
        assert!(RequestMeta::from_meta(Some(&no_capabilities)).is_err());
    }

    /// What the head finds in one pass: `_meta`'s reserved members and the members the
    /// headers mirror, each as it was sent.
    #[test]
    fn the_head_reads_meta_and_the_mirrored_members_in_one_pass() {
        let v = meta_keys::PROTOCOL_VERSION;
        let params = format!(
            r#"{{"name":"a\u0062c","uri":"file:///x","taskId":7,"arguments":{{"k":[1]}},"_meta":{{"{v}":"2026-07-28","other":{{"{v}":1}}}}}}"#
        );
        let head = ParamsHead::parse(Some(&params)).unwrap();
        assert!(head.declares_version());
        assert_eq!(ParamsHead::text(head.name), Member::Text("abc".into()));
        assert!(matches!(
            ParamsHead::text(head.uri),
            Member::Text(Cow::Borrowed("file:///x"))
        ));
        assert_eq!(ParamsHead::text(head.task_id), Member::Other);
        assert_eq!(head.arguments, Some(r#"{"k":[1]}"#));
        let bare = ParamsHead::parse(Some(r#"{"name":null,"_meta":null}"#)).unwrap();
        assert_eq!(ParamsHead::text(bare.name), Member::Absent);
        assert!(bare.meta.is_none() && !bare.declares_version());
        assert!(!ParamsHead::parse(None).unwrap().declares_version());
    }

    /// A refused head says which part is wrong: the params, or only their `_meta`.
    #[test]
    fn an_unreadable_head_names_its_fault() {
        let v = meta_keys::PROTOCOL_VERSION;
        for (params, fault) in [
            ("[1]".to_string(), "params must be an object"),
            (
                r#"{"name":1,"name":2}"#.to_string(),
                "params must be an object",
            ),
            ("[{}]".to_string(), "params must be an object"),
            (r#"{"_meta":[]}"#.to_string(), "_meta must be a JSON object"),
            (
                r#"{"_meta":["2026-07-28",{}]}"#.to_string(),
                "_meta must be a JSON object",
            ),
            (
                format!(r#"{{"name":"x","_meta":{{"{v}":"a","{v}":"b"}}}}"#),
                "_meta must be a JSON object",
            ),
        ] {
            let Err(e) = ParamsHead::parse(Some(&params)) else {
                panic!("{params} was read");
            };
            assert_eq!(e.code, codes::INVALID_PARAMS, "{params}");
            assert!(e.message.contains(fault), "{params}: {}", e.message);
        }
    }

    /// The client's info is read when asked for, from `_meta` as sent; info that is not
    /// an `Implementation` is none, and does not make the request invalid.
    #[test]
    fn client_info_is_read_when_asked_for() {
        let m = |info: &str| {
            format!(
                r#"{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}{info}}}}}"#
            )
        };
        let named = read(
            "tools/list",
            Some(&m(
                r#","io.modelcontextprotocol/clientInfo":{"name":"n","version":"2"}"#,
            )),
        )
        .unwrap();
        assert_eq!(named.client_info().map(|i| i.version.as_str()), Some("2"));
        let junk = read(
            "tools/list",
            Some(&m(r#","io.modelcontextprotocol/clientInfo":5"#)),
        )
        .unwrap();
        assert!(junk.client_info().is_none());
        assert!(
            read("tools/list", Some(&m("")))
                .unwrap()
                .client_info()
                .is_none()
        );
    }
}
