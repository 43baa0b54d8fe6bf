//! Port of the seed's sensitive_tool_guard_test: a destructive or sensitive tool is never
//! served without an authorizer, checked at build time and again at call time for tools
//! registered later.

use mcp::auth::{allow_all, policy};
use mcp::protocol::ToolAnnotations;
use mcp::registry::ToolDef;
use mcp::server::BuildError;
use mcp::{Server, auth::Decision};
use mcp_tests::{Runs, counting_tool, deny_payload, initialized_client};
use serde_json::{Value, json};

fn with_annotations(def: ToolDef, annotations: Value) -> ToolDef {
    let a: ToolAnnotations = serde_json::from_value(annotations).expect("annotations");
    def.annotations(a)
}

fn plain(name: &str) -> ToolDef {
    counting_tool(name, &Runs::new())
}

#[test]
fn destructive_and_sensitive_make_a_tool_sensitive() {
    assert!(plain("d").destructive().is_sensitive());
    assert!(plain("s").sensitive().is_sensitive());
    assert!(with_annotations(plain("a"), json!({"destructiveHint": true})).is_sensitive());
    assert!(with_annotations(plain("b"), json!({"sensitive": true})).is_sensitive());
}

#[test]
fn unannotated_or_empty_annotations_are_not_sensitive() {
    assert!(!plain("p").is_sensitive());
    assert!(!with_annotations(plain("e"), json!({})).is_sensitive());
    assert!(
        !plain("r")
            .read_only()
            .idempotent()
            .open_world()
            .is_sensitive()
    );
}

#[test]
fn only_a_literal_true_counts() {
    for annotations in [
        json!({"destructiveHint": false}),
        json!({"sensitive": "true"}),
        json!({"sensitive": 1}),
        json!({"sensitive": false}),
        json!({"sensitive": null}),
    ] {
        assert!(
            !with_annotations(plain("x"), annotations.clone()).is_sensitive(),
            "{annotations}"
        );
    }
}

#[test]
fn safe_hints_never_exempt_and_cannot_cancel_a_dangerous_one() {
    for annotations in [
        json!({"destructiveHint": true, "readOnlyHint": true}),
        json!({"sensitive": true, "readOnlyHint": true}),
        json!({"sensitive": true, "destructiveHint": false}),
        json!({"sensitive": true, "destructiveHint": false, "readOnlyHint": true}),
    ] {
        assert!(
            with_annotations(plain("x"), annotations.clone()).is_sensitive(),
            "{annotations}"
        );
    }
    // Builder order does not matter either.
    assert!(plain("x").destructive().read_only().is_sensitive());
    assert!(plain("x").read_only().destructive().is_sensitive());
    assert!(plain("x").sensitive().read_only().is_sensitive());
    let cancelled = with_annotations(
        plain("x").sensitive(),
        json!({"destructiveHint": false, "readOnlyHint": true}),
    );
    assert!(cancelled.is_sensitive());
}

#[tokio::test]
async fn definitions_keep_their_annotations_in_the_listing() {
    let server = Server::builder("seed", "0")
        .tool(with_annotations(
            plain("wipe"),
            json!({"destructiveHint": true, "sensitive": true}),
        ))
        .authorizer(allow_all())
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let tools = client.request("tools/list", json!({})).await.unwrap();
    assert_eq!(
        tools["tools"][0]["annotations"],
        json!({"destructiveHint": true, "sensitive": true})
    );
}

#[test]
fn build_refuses_sensitive_tools_without_an_authorizer() {
    let err = Server::builder("seed", "0")
        .tool(plain("delete_file").destructive())
        .tool(plain("read_file").read_only())
        .tool(with_annotations(
            plain("rotate_keys"),
            json!({"sensitive": true}),
        ))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::SensitiveToolsUnguarded(vec!["delete_file".into(), "rotate_keys".into()])
    );
    let message = err.to_string();
    assert!(message.contains("refuses to boot"), "{message}");
    assert!(message.contains("delete_file"), "{message}");
    assert!(message.contains("rotate_keys"), "{message}");
    assert!(!message.contains("read_file"), "{message}");
    assert!(message.contains("allow_all"), "{message}");
}

#[test]
fn the_same_setup_builds_with_allow_all() {
    let server = Server::builder("seed", "0")
        .tool(plain("delete_file").destructive())
        .tool(plain("rotate_keys").sensitive())
        .authorizer(allow_all())
        .build();
    assert!(server.is_ok());
}

#[test]
fn unannotated_tools_build_without_an_authorizer() {
    let server = Server::builder("seed", "0")
        .tool(plain("a"))
        .tool(plain("b").read_only())
        .build();
    assert!(server.is_ok());
}

#[tokio::test]
async fn a_sensitive_tool_registered_at_run_time_is_denied_without_an_authorizer() {
    let server = Server::builder("seed", "0").enable_tools().build().unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let destructive = Runs::new();
    let annotated = Runs::new();
    server
        .registry()
        .register_tool(counting_tool("late_wipe", &destructive).destructive())
        .unwrap();
    server
        .registry()
        .register_tool(with_annotations(
            counting_tool("late_secret", &annotated),
            json!({"sensitive": true, "readOnlyHint": true}),
        ))
        .unwrap();
    for name in ["late_wipe", "late_secret"] {
        let r = client.call_tool(name, json!({})).await.unwrap();
        let payload = deny_payload(&r);
        assert_eq!(payload["tool"], name);
        assert_eq!(payload["decision"], "deny");
        assert_eq!(payload["detail"], "sensitive_tool_unguarded");
    }
    assert_eq!(destructive.get(), 0);
    assert_eq!(annotated.get(), 0);
}

#[tokio::test]
async fn replacing_a_plain_tool_with_a_sensitive_one_is_caught_at_call_time() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("tool", &runs))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    assert!(
        !client
            .call_tool("tool", json!({}))
            .await
            .unwrap()
            .is_error()
    );
    assert_eq!(runs.get(), 1);
    server
        .registry()
        .replace_tool(counting_tool("tool", &runs).destructive())
        .unwrap();
    let r = client.call_tool("tool", json!({})).await.unwrap();
    assert_eq!(deny_payload(&r)["detail"], "sensitive_tool_unguarded");
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn an_unannotated_late_tool_runs() {
    let server = Server::builder("seed", "0").enable_tools().build().unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let runs = Runs::new();
    server
        .registry()
        .register_tool(counting_tool("late_plain", &runs))
        .unwrap();
    let r = client.call_tool("late_plain", json!({})).await.unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.content[0].as_text(), Some("ran late_plain"));
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn with_an_authorizer_a_sensitive_tool_runs_when_it_allows() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("wipe", &runs).destructive())
        .authorizer(allow_all())
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let r = client.call_tool("wipe", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("ran wipe"));
    assert_eq!(runs.get(), 1);
    // A late one too, under a policy that allows it.
    let late = Runs::new();
    server
        .registry()
        .register_tool(counting_tool("late_wipe", &late).sensitive())
        .unwrap();
    let r = client.call_tool("late_wipe", json!({})).await.unwrap();
    assert!(!r.is_error());
    assert_eq!(late.get(), 1);
}

#[tokio::test]
async fn the_authorizer_can_see_that_a_tool_is_sensitive() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("wipe", &runs).destructive())
        .tool(counting_tool("look", &runs).read_only())
        .authorizer(policy(|req| {
            if req.is_sensitive() {
                Decision::deny("sensitive needs a human")
            } else {
                Decision::Allow
            }
        }))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let r = client.call_tool("wipe", json!({})).await.unwrap();
    assert_eq!(deny_payload(&r)["detail"], "sensitive needs a human");
    let r = client.call_tool("look", json!({})).await.unwrap();
    assert!(!r.is_error());
    assert_eq!(runs.get(), 1);
}
