//! The schema helper itself must be able to fail: otherwise every wire test that relies on
//! it proves nothing.

use mcp_tests::validate_server_message;
use serde_json::json;

#[test]
fn accepts_valid_messages_of_each_kind() {
    let ok =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "5"}]}});
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        validate_server_message(v, &ok, Some("tools/call")).unwrap();
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    validate_server_message("2025-11-25", &note, None).unwrap();
    let err = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "x"}});
    validate_server_message("2025-11-25", &err, None).unwrap();
}

#[test]
fn rejects_what_the_revision_does_not_allow() {
    let no_content = json!({"jsonrpc": "2.0", "id": 1, "result": {"isError": true}});
    assert!(validate_server_message("2025-11-25", &no_content, Some("tools/call")).is_err());
    let audio = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]}});
    assert!(validate_server_message("2024-11-05", &audio, Some("tools/call")).is_err());
    assert!(validate_server_message("2025-03-26", &audio, Some("tools/call")).is_ok());
    let bad_envelope = json!({"jsonrpc": "1.0", "id": 1, "result": {}});
    assert!(validate_server_message("2025-11-25", &bad_envelope, Some("ping")).is_err());
    let bad_note =
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
    assert!(validate_server_message("2025-11-25", &bad_note, None).is_err());
}
