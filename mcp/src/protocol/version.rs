//! Protocol revisions and the two eras they fall into.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A dated MCP protocol revision this framework knows.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first dated release (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, batches, tool annotations, audio.
    V2025_03_26,
    /// 2025-06-18: structured output, elicitation, resource links; batches removed.
    V2025_06_18,
    /// 2025-11-25: the last handshake-era revision (icons, URL elicitation, tasks).
    V2025_11_25,
    /// 2026-07-28: the stateless revision (no handshake, per-request metadata).
    V2026_07_28,
}

/// Which family of the protocol a revision belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize` handshake, sessions, server-to-client requests (up to 2025-11-25).
    Handshake,
    /// No handshake; every request carries its own metadata (2026-07-28 on).
    Stateless,
}

impl ProtocolVersion {
    /// Every known revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The handshake-era revisions, oldest first.
    pub const HANDSHAKE: [ProtocolVersion; 4] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
    ];

    /// The newest handshake-era revision: the answer to an `initialize` asking for a
    /// version we do not know.
    pub const LATEST_HANDSHAKE: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The newest revision of all.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The wire form, e.g. `"2025-06-18"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era this revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Stateless,
            _ => Era::Handshake,
        }
    }

    /// Whether JSON-RPC batches (arrays) are part of this revision. Only 2025-03-26 has them.
    pub const fn allows_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// Whether `audio` content blocks exist in this revision.
    pub fn has_audio_content(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Whether `resource_link` content blocks exist in this revision.
    pub fn has_resource_links(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Whether the server may advertise the `completions` capability.
    pub fn has_completions_capability(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a version string this framework does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVersion(pub String);

impl fmt::Display for UnknownVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown MCP protocol version {:?}", self.0)
    }
}

impl std::error::Error for UnknownVersion {}

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A connection's negotiated revision, read on every request without a lock: a read-write
/// lock's read costs two atomic read-modify-writes (each a full barrier on x86), a load
/// costs none. Set once a handshake settles it (or a shared record brings it), never unset.
#[derive(Debug, Default)]
pub(crate) struct NegotiatedVersion(std::sync::atomic::AtomicU8);

impl NegotiatedVersion {
    /// `0` is "none yet"; revision `i` of [`ProtocolVersion::ALL`] is `i + 1`.
    const NONE: u8 = 0;

    /// The revision, if one was negotiated.
    pub(crate) fn get(&self) -> Option<ProtocolVersion> {
        match self.0.load(std::sync::atomic::Ordering::Acquire) {
            Self::NONE => None,
            n => ProtocolVersion::ALL.get(usize::from(n) - 1).copied(),
        }
    }

    /// Records the revision. Release: whoever reads it also sees what was stored before it
    /// (the client's capabilities, on `initialize`).
    pub(crate) fn set(&self, version: ProtocolVersion) {
        // A fieldless enum's discriminants are its revisions in order, as in `ALL`.
        self.0
            .store(version as u8 + 1, std::sync::atomic::Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_every_version() {
        for v in ProtocolVersion::ALL {
            assert_eq!(v.as_str().parse::<ProtocolVersion>().unwrap(), v);
        }
        assert!("2025-01-01".parse::<ProtocolVersion>().is_err());
    }

    #[test]
    fn a_negotiated_version_reads_back_as_set() {
        let cell = NegotiatedVersion::default();
        assert_eq!(cell.get(), None);
        for v in ProtocolVersion::ALL {
            cell.set(v);
            assert_eq!(cell.get(), Some(v));
        }
    }

    #[test]
    fn eras_and_batches() {
        assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Stateless);
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Handshake);
        let batching: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.allows_batches())
            .collect();
        assert_eq!(batching, vec![ProtocolVersion::V2025_03_26]);
    }
}
