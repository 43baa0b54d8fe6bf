//! Results shaped for the negotiated revision: content kinds a revision does not know are
//! turned into text it does, so every message validates against that revision's schema.

use crate::protocol::{CallToolResult, ContentBlock, GetPromptResult, ProtocolVersion};

/// Rewrites content blocks the revision does not have (audio before 2025-03-26, resource
/// links before 2025-06-18) as text blocks that say what they were.
fn downgrade_block(version: ProtocolVersion, block: &mut ContentBlock) {
    match block {
        ContentBlock::Audio(a) if !version.has_audio_content() => {
            *block = ContentBlock::text(format!(
                "[audio content ({}) not supported by this client]",
                a.mime_type
            ));
        }
        ContentBlock::ResourceLink(link) if !version.has_resource_links() => {
            *block = ContentBlock::text(format!("Resource: {} ({})", link.uri, link.name));
        }
        _ => {}
    }
}

/// Shapes a tool result for `version`. Handshake-era revisions require `structuredContent`
/// to be an object; anything else stays available as the text block.
pub(crate) fn tool_result(version: ProtocolVersion, result: &mut CallToolResult) {
    for block in &mut result.content {
        downgrade_block(version, block);
    }
    let structured_allowed = match &result.structured_content {
        None => true,
        Some(_) if version < ProtocolVersion::V2025_06_18 => false,
        Some(v) => v.is_object() || version.era() == crate::protocol::Era::Stateless,
    };
    if !structured_allowed {
        result.structured_content = None;
    }
}

/// Shapes a rendered prompt for `version`.
pub(crate) fn prompt_result(version: ProtocolVersion, result: &mut GetPromptResult) {
    for message in &mut result.messages {
        downgrade_block(version, &mut message.content);
    }
}
