//! A message's params: JSON text shared with the frame it arrived in.
//!
//! A request's params used to be copied out of the frame into a buffer of their own, then
//! shared with everything the request hands on (a tool call's arguments are a slice of
//! them). Sharing the frame instead spares that copy: one allocation less per request, and
//! for a 1 MiB argument over HTTP a megabyte less to allocate, fault in and copy, since the
//! body the transport read is kept as it is.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::inbound::{CallMembers, HeadSpans, ParamsHead};

/// The params of a request or a notification, as the client sent them: JSON text, an
/// object or an array (or a part of them, such as a call's arguments). Cloning shares the
/// text.
///
/// ```
/// use mcp::protocol::jsonrpc::{Incoming, Message, decode};
///
/// let Incoming::Single(Ok(Message::Request(request))) =
///     decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#)
/// else {
///     unreachable!()
/// };
/// assert_eq!(request.params.unwrap().get(), r#"{"name":"echo"}"#);
/// ```
pub struct Params {
    frame: Frame,
    /// Where the params are in the frame's text; `None` when they are all of it (params
    /// copied out of a frame, the common case, are read without slicing).
    range: Option<Range<usize>>,
    /// Where the members of their head lie, when the envelope's reader read it with them
    /// (see `jsonrpc::walk`): [`Params::head`] gives it without reading them again.
    head: Option<Box<HeadSpans>>,
}

/// A clone shares the text, not the head: whoever holds it reads the head again if it
/// needs it (only the edge and the dispatcher do, from the request's own params).
impl Clone for Params {
    fn clone(&self) -> Self {
        Params {
            frame: self.frame.clone(),
            range: self.range.clone(),
            head: None,
        }
    }
}

/// The text a [`Params`] lies in.
#[derive(Clone)]
pub(crate) enum Frame {
    /// A copy of the params alone.
    Copied(Arc<str>),
    /// A body taken over as it was read, not copied (a large HTTP body).
    Kept(Arc<String>),
}

impl Frame {
    fn text(&self) -> &str {
        match self {
            Frame::Copied(text) => text,
            Frame::Kept(text) => text,
        }
    }
}

/// Where `part` lies in `text`, when it is a slice of it (found by address, not by
/// content).
pub(crate) fn range_in(text: &str, part: &str) -> Option<Range<usize>> {
    let offset = (part.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    // A `str` that lies inside `text` is a slice of it, and starts and ends on its
    // character boundaries (no string starts or ends inside a character).
    (offset <= text.len() && part.len() <= text.len() - offset).then(|| offset..offset + part.len())
}

impl Params {
    /// `part` (JSON), which was read out of `text` (which starts at `base` in `frame`'s
    /// text), as a slice of the frame; a copy of its own when it does not lie in `text`.
    pub(crate) fn within(frame: &Frame, text: &str, base: usize, part: &str) -> Self {
        match range_in(text, part) {
            Some(range) => Params {
                frame: frame.clone(),
                range: Some(base + range.start..base + range.end),
                head: None,
            },
            None => Self::copied(part),
        }
    }

    /// `part`, read out of `params` (a call's arguments out of its params), as a slice of
    /// their frame: a 1 MiB argument is not copied again on its way to the handler. A copy
    /// when it is not in them, or there are none to share.
    pub(crate) fn part_of(params: Option<&Params>, part: &str) -> Self {
        match params {
            Some(params) => {
                let base = params.range.as_ref().map_or(0, |range| range.start);
                Params::within(&params.frame, params.get(), base, part)
            }
            None => Params::copied(part),
        }
    }

    /// A copy of `text`, which must be JSON.
    pub(crate) fn copied(text: &str) -> Self {
        Params {
            frame: Frame::Copied(Arc::from(text)),
            range: None,
            head: None,
        }
    }

    /// The same params, with where their head's members lie (read out of their text).
    pub(crate) fn with_head(self, spans: HeadSpans) -> Self {
        Params {
            head: Some(Box::new(spans)),
            ..self
        }
    }

    /// Their head, when it was read with the envelope.
    pub(crate) fn head(&self) -> Option<ParamsHead<'_>> {
        self.head.as_ref()?.head(self.get())
    }

    /// What a `tools/call` needs of their head, when it was read with the envelope and
    /// holds it (see [`ParamsHead::call_members`]).
    pub(crate) fn call_members(&self) -> Option<CallMembers<'_>> {
        self.head.as_ref()?.call_members(self.get())
    }

    /// The params' JSON text.
    pub fn get(&self) -> &str {
        let text = self.frame.text();
        match &self.range {
            None => text,
            // The range was cut from this very text, on character boundaries.
            Some(range) => text.get(range.clone()).unwrap_or("null"),
        }
    }
}

impl From<Box<RawValue>> for Params {
    fn from(raw: Box<RawValue>) -> Self {
        Params::copied(raw.get())
    }
}

impl From<&RawValue> for Params {
    fn from(raw: &RawValue) -> Self {
        Params::copied(raw.get())
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Params").field(&self.get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Env<'a> {
        #[serde(borrow)]
        params: &'a RawValue,
    }

    #[derive(serde::Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        arguments: &'a RawValue,
    }

    fn shares(params: &Params, frame: &Arc<str>) -> bool {
        matches!(&params.frame, Frame::Copied(text) if Arc::ptr_eq(text, frame))
    }

    #[test]
    fn params_and_the_arguments_read_out_of_them_share_the_frame() {
        let text: Arc<str> = Arc::from(r#" {"params":{"name":"t","arguments":{"text":"héllo"}}}"#);
        let frame = Frame::Copied(Arc::clone(&text));
        let trimmed = &text[1..];
        let env: Env<'_> = serde_json::from_str(trimmed).unwrap();
        let params = Params::within(&frame, trimmed, 1, env.params.get());
        assert_eq!(params.get(), r#"{"name":"t","arguments":{"text":"héllo"}}"#);
        assert!(shares(&params, &text));

        let call: Call<'_> = serde_json::from_str(params.get()).unwrap();
        let arguments = Params::part_of(Some(&params), call.arguments.get());
        assert_eq!(arguments.get(), r#"{"text":"héllo"}"#);
        assert!(shares(&arguments, &text), "the call keeps the frame alive");
        assert_eq!(Arc::strong_count(&text), 4);
    }

    #[test]
    fn text_from_elsewhere_is_copied() {
        let text: Arc<str> = Arc::from("{}");
        let frame = Frame::Copied(Arc::clone(&text));
        let other = RawValue::from_string(r#"[1,2]"#.to_owned()).unwrap();
        let params = Params::within(&frame, "{}", 0, other.get());
        assert!(!shares(&params, &text));
        assert_eq!(params.get(), "[1,2]");
        assert_eq!(Params::from(other).get(), params.get());
        let alone = Params::part_of(None, "{}");
        assert_eq!(alone.get(), "{}");
        let elsewhere = RawValue::from_string(r#"{"x":1}"#.to_owned()).unwrap();
        let copied = Params::part_of(Some(&params), elsewhere.get());
        assert!(!shares(&copied, &text));
        assert_eq!(copied.get(), r#"{"x":1}"#);
    }
}
