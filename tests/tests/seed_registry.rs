//! Port of the seed's registry_test and tool_def_test: registration, listing order, removal,
//! duplicates, replacement, validation in check order, all-or-nothing batches, URI templates,
//! and contained handler errors.

use std::sync::Arc;

use mcp::Server;
use mcp::protocol::CallToolResult;
use mcp::registry::{
    PromptArgs, PromptDef, PromptError, Registry, RegistryError, ResourceDef, ResourceError,
    ResourceRequest, ResourceTemplateDef, ToolArgs, ToolDef, ToolProblem, UriTemplate,
};
use mcp::server::BuildError;
use mcp::{Ctx, auth::allow_all};
use mcp_tests::{Runs, counting_tool, initialized_client};
use parking_lot::Mutex;
use serde_json::{Value, json};

fn tool(name: &str) -> ToolDef {
    counting_tool(name, &Runs::new())
}

fn names(r: &Registry) -> Vec<String> {
    r.snapshot().tools().map(|t| t.name().to_owned()).collect()
}

#[test]
fn register_list_sorted_and_remove() {
    let r = Registry::new();
    for n in ["zeta", "alpha", "mid"] {
        r.register_tool(tool(n)).unwrap();
    }
    assert_eq!(names(&r), ["alpha", "mid", "zeta"]);
    assert!(r.snapshot().tool("mid").is_some());
    assert!(r.remove_tool("mid"));
    assert!(!r.remove_tool("mid"), "removing twice reports absence");
    assert!(r.snapshot().tool("mid").is_none());
    assert_eq!(names(&r), ["alpha", "zeta"]);
}

#[test]
fn a_snapshot_is_not_changed_by_later_registrations() {
    let r = Registry::new();
    r.register_tool(tool("a")).unwrap();
    let before = r.snapshot();
    r.register_tool(tool("b")).unwrap();
    r.remove_tool("a");
    assert_eq!(before.tools().map(|t| t.name()).collect::<Vec<_>>(), ["a"]);
    assert_eq!(names(&r), ["b"]);
}

#[test]
fn duplicates_are_refused_with_a_clear_error() {
    let r = Registry::new();
    r.register_tool(tool("dup")).unwrap();
    let err = r.register_tool(tool("dup")).unwrap_err();
    assert_eq!(
        err,
        RegistryError::Duplicate {
            kind: "tool",
            name: "dup".into()
        }
    );
    let message = err.to_string();
    assert!(message.contains("\"dup\""), "{message}");
    assert!(message.contains("already registered"), "{message}");
    assert!(message.contains("replace_tool"), "{message}");

    r.register_resource(ResourceDef::new("app://x", "x", |_c, _r| async { "x" }))
        .unwrap();
    let err = r
        .register_resource(ResourceDef::new("app://x", "x2", |_c, _r| async { "x" }))
        .unwrap_err();
    assert!(matches!(
        err,
        RegistryError::Duplicate {
            kind: "resource",
            ..
        }
    ));
    r.register_prompt(PromptDef::new("p", "d", |_c, _a: PromptArgs| async { "p" }))
        .unwrap();
    assert!(
        r.register_prompt(PromptDef::new("p", "d", |_c, _a: PromptArgs| async { "p" }))
            .is_err()
    );
}

#[test]
fn a_server_with_duplicate_entries_refuses_to_build() {
    let err = Server::builder("seed", "0")
        .tool(tool("same"))
        .tool(tool("same"))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::Registry(RegistryError::Duplicate {
            kind: "tool",
            name: "same".into()
        })
    );
}

#[tokio::test]
async fn replace_tool_overwrites() {
    let old_runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("t", &old_runs))
        .build()
        .unwrap();
    server
        .registry()
        .replace_tool(ToolDef::new(
            "t",
            "The replacement.",
            json!({"type": "object"}),
            |_c: Ctx, _a: ToolArgs| async { "new" },
        ))
        .unwrap();
    // replace_tool also registers a name that did not exist.
    server.registry().replace_tool(tool("fresh")).unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let listed = client.list_tools().await.unwrap();
    assert_eq!(listed.len(), 2);
    let t = listed.iter().find(|t| t.name == "t").unwrap();
    assert_eq!(t.description.as_deref(), Some("The replacement."));
    let r = client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("new"));
    assert_eq!(old_runs.get(), 0);
    // A replacement is validated like a registration.
    let bad = ToolDef::new(
        "t",
        "",
        json!({"type": "object"}),
        |_c: Ctx, _a: ToolArgs| async { "x" },
    );
    assert!(matches!(
        server.registry().replace_tool(bad),
        Err(RegistryError::InvalidTool(_))
    ));
}

#[test]
fn validation_lists_every_problem_in_check_order() {
    let bad = ToolDef::new(
        "",
        "  ",
        json!({"type": "string"}),
        |_c: Ctx, _a: ToolArgs| async { "x" },
    );
    let err = bad.validate().unwrap_err();
    assert_eq!(err.problems.len(), 3, "{err}");
    assert_eq!(err.problems[0], ToolProblem::MissingName);
    assert_eq!(err.problems[1], ToolProblem::MissingDescription);
    assert!(matches!(
        err.problems[2],
        ToolProblem::InvalidInputSchema(_)
    ));

    let bad = ToolDef::new(
        "has space",
        "ok",
        json!("not an object"),
        |_c: Ctx, _a: ToolArgs| async { "x" },
    )
    .output_schema(json!(42));
    let err = bad.validate().unwrap_err();
    assert!(matches!(err.problems[0], ToolProblem::InvalidName(_)));
    assert!(matches!(
        err.problems[1],
        ToolProblem::InvalidInputSchema(_)
    ));
    assert!(matches!(
        err.problems[2],
        ToolProblem::InvalidOutputSchema(_)
    ));
    let message = err.to_string();
    assert!(
        message.starts_with("tool \"has space\": invalid name"),
        "{message}"
    );

    // Registration refuses an invalid tool with the same list.
    let r = Registry::new();
    let schemaless = ToolDef::new("x", "d", json!({}), |_c: Ctx, _a: ToolArgs| async { "x" });
    match r.register_tool(schemaless) {
        Err(RegistryError::InvalidTool(e)) => {
            assert_eq!(e.tool, "x");
            assert!(matches!(
                e.problems[..],
                [ToolProblem::InvalidInputSchema(_)]
            ));
        }
        other => panic!("expected InvalidTool, got {other:?}"),
    }
    assert_eq!(names(&r), Vec::<String>::new());
    assert!(tool("valid.name-1_x").validate().is_ok());
}

#[test]
fn register_all_is_all_or_nothing() {
    let r = Registry::new();
    r.register_tool(tool("existing")).unwrap();
    // An invalid tool anywhere in the batch: nothing is added.
    let invalid = ToolDef::new(
        "",
        "d",
        json!({"type": "object"}),
        |_c: Ctx, _a: ToolArgs| async { "x" },
    );
    let err = r
        .register_all(
            vec![tool("a"), invalid, tool("b")],
            vec![ResourceDef::new("app://r", "r", |_c, _r| async { "r" })],
            vec![],
            vec![],
        )
        .unwrap_err();
    assert!(matches!(err, RegistryError::InvalidTool(_)));
    // A clash with an existing entry: nothing is added either.
    let err = r
        .register_all(vec![tool("c"), tool("existing")], vec![], vec![], vec![])
        .unwrap_err();
    assert!(matches!(err, RegistryError::Duplicate { .. }));
    // A clash inside the batch.
    assert!(
        r.register_all(vec![tool("d"), tool("d")], vec![], vec![], vec![])
            .is_err()
    );
    // An invalid resource fails the tools with it.
    assert!(
        r.register_all(
            vec![tool("e")],
            vec![ResourceDef::new("no-scheme", "r", |_c, _r| async { "r" })],
            vec![],
            vec![],
        )
        .is_err()
    );
    assert_eq!(names(&r), ["existing"]);
    assert_eq!(r.snapshot().resources().count(), 0);
    // A good batch lands whole.
    r.register_all(
        vec![tool("a"), tool("b")],
        vec![ResourceDef::new("app://r", "r", |_c, _r| async { "r" })],
        vec![],
        vec![PromptDef::new("p", "d", |_c, _a: PromptArgs| async { "p" })],
    )
    .unwrap();
    assert_eq!(names(&r), ["a", "b", "existing"]);
    assert_eq!(r.snapshot().resources().count(), 1);
    assert_eq!(r.snapshot().prompts().count(), 1);
}

#[tokio::test]
async fn registry_changes_are_announced_to_initialized_clients() {
    let server = Server::builder("seed", "0")
        .enable_tools()
        .enable_prompts()
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    server.registry().register_tool(tool("a")).unwrap();
    server.registry().remove_tool("a");
    server.registry().remove_tool("a"); // absent: no announcement
    server
        .registry()
        .register_prompt(PromptDef::new("p", "d", |_c, _a: PromptArgs| async { "p" }))
        .unwrap();
    // A refused registration changes nothing and announces nothing.
    let _ =
        server
            .registry()
            .register_prompt(PromptDef::new("p", "d", |_c, _a: PromptArgs| async { "p" }));
    let methods: Vec<Value> = client
        .drain(std::time::Duration::from_millis(100))
        .await
        .into_iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/tools/list_changed",
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed"
        ]
    );
}

#[test]
fn uri_templates_match_and_extract_variables() {
    let t = UriTemplate::parse("file:///docs/{name}").unwrap();
    let vars = t.matches("file:///docs/readme").unwrap();
    assert_eq!(vars.get("name").map(String::as_str), Some("readme"));
    // A simple variable stops at '/'.
    assert!(t.matches("file:///docs/a/b").is_none());
    assert!(t.matches("file:///docs/").is_none());
    assert!(t.matches("file:///other/readme").is_none());
    // Percent-decoded.
    let vars = t.matches("file:///docs/hello%20world").unwrap();
    assert_eq!(vars["name"], "hello world");

    let t = UriTemplate::parse("repo://{owner}/{repo}/blob/{+path}").unwrap();
    let vars = t.matches("repo://acme/site/blob/src/lib.rs").unwrap();
    assert_eq!(vars["owner"], "acme");
    assert_eq!(vars["repo"], "site");
    assert_eq!(vars["path"], "src/lib.rs");
    assert_eq!(t.variables().collect::<Vec<_>>(), ["owner", "repo", "path"]);
    assert_eq!(t.expand(&vars), "repo://acme/site/blob/src/lib.rs");

    for bad in [
        "a://{x}{y}",
        "a://{x",
        "a://x}",
        "a://{}",
        "a://{x}/{x}",
        "a://{?q}",
    ] {
        let err = UriTemplate::parse(bad).unwrap_err();
        assert_eq!(err.template, bad);
    }
}

#[tokio::test]
async fn templates_are_read_with_their_variables_and_the_most_specific_wins() {
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let s1 = Arc::clone(&seen);
    let s2 = Arc::clone(&seen);
    let server = Server::builder("seed", "0")
        .template(
            ResourceTemplateDef::new(
                "file:///{+path}",
                "any file",
                move |_c, req: ResourceRequest| {
                    s1.lock().push(("any".into(), req.vars["path"].clone()));
                    async move { format!("file {}", req.uri) }
                },
            )
            .unwrap(),
        )
        .template(
            ResourceTemplateDef::new(
                "file:///docs/{name}",
                "doc",
                move |_c, req: ResourceRequest| {
                    s2.lock().push(("doc".into(), req.vars["name"].clone()));
                    async move { format!("doc {}", req.vars["name"]) }
                },
            )
            .unwrap()
            .mime_type("text/markdown"),
        )
        .resource(ResourceDef::new(
            "file:///docs/fixed",
            "fixed",
            |_c, _r| async { "fixed wins" },
        ))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let read = |uri: &str| json!({"uri": uri});
    let r = client
        .request("resources/read", read("file:///docs/guide"))
        .await
        .unwrap();
    assert_eq!(r["contents"][0]["text"], "doc guide");
    assert_eq!(r["contents"][0]["mimeType"], "text/markdown");
    let r = client
        .request("resources/read", read("file:///src/main.rs"))
        .await
        .unwrap();
    assert_eq!(r["contents"][0]["text"], "file file:///src/main.rs");
    let r = client
        .request("resources/read", read("file:///docs/fixed"))
        .await
        .unwrap();
    assert_eq!(r["contents"][0]["text"], "fixed wins");
    assert_eq!(
        *seen.lock(),
        [
            ("doc".to_owned(), "guide".to_owned()),
            ("any".to_owned(), "src/main.rs".to_owned())
        ]
    );
    let templates = client
        .request("resources/templates/list", json!({}))
        .await
        .unwrap();
    let listed: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["file:///docs/{name}", "file:///{+path}"]);
}

#[tokio::test]
async fn handler_errors_are_contained() {
    let server = Server::builder("seed", "0")
        .tool(ToolDef::new(
            "tool_err",
            "Fails.",
            json!({"type": "object"}),
            |_c: Ctx, _a: ToolArgs| async { Err::<CallToolResult, _>("tool broke") },
        ))
        .tool(
            ToolDef::new(
                "tool_panic",
                "Panics.",
                json!({"type": "object"}),
                |_c: Ctx, _a: ToolArgs| async {
                    let v: Vec<u8> = Vec::new();
                    v[3]
                },
            )
            .destructive(),
        )
        .authorizer(allow_all())
        .resource(ResourceDef::new("app://fails", "fails", |_c, _r| async {
            Err::<String, _>(ResourceError::Failed("backend unavailable".into()))
        }))
        .resource(ResourceDef::new("app://gone", "gone", |_c, _r| async {
            Err::<String, _>(ResourceError::NotFound)
        }))
        .resource(ResourceDef::new("app://panics", "panics", |_c, _r| async {
            if true {
                panic!("resource SECRET");
            }
            "never"
        }))
        .prompt(PromptDef::new(
            "prompt_err",
            "Fails.",
            |_c, _a: PromptArgs| async {
                Err::<String, _>(PromptError::Failed("template missing".into()))
            },
        ))
        .prompt(PromptDef::new(
            "prompt_bad_args",
            "Refuses.",
            |_c, _a: PromptArgs| async {
                Err::<String, _>(PromptError::InvalidParams(
                    "`lang` must be rust or go".into(),
                ))
            },
        ))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;

    let r = client.call_tool("tool_err", json!({})).await.unwrap();
    assert!(r.is_error());
    assert_eq!(r.content[0].as_text(), Some("tool broke"));
    let r = client.call_tool("tool_panic", json!({})).await.unwrap();
    assert!(r.is_error());
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .starts_with("callback_panicked")
    );

    let err = client
        .request("resources/read", json!({"uri": "app://fails"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32603);
    assert!(err.message.contains("backend unavailable"), "{err}");
    let err = client
        .request("resources/read", json!({"uri": "app://gone"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32002);
    let err = client
        .request("resources/read", json!({"uri": "app://panics"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32603);
    assert!(err.message.starts_with("callback_panicked"), "{err}");
    assert!(!err.message.contains("SECRET"));

    let err = client
        .request("prompts/get", json!({"name": "prompt_err"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32603);
    assert!(err.message.contains("template missing"), "{err}");
    let err = client
        .request("prompts/get", json!({"name": "prompt_bad_args"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("`lang`"), "{err}");
    let err = client
        .request("prompts/get", json!({"name": "unknown_prompt"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);

    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn prompts_check_required_arguments_and_render() {
    let server = Server::builder("seed", "0")
        .prompt(
            PromptDef::new("review", "Reviews code.", |_c, a: PromptArgs| async move {
                let code = a.require("code")?.to_owned();
                Ok::<_, PromptError>(format!("Please review:\n{code}"))
            })
            .argument("code", "The code", true),
        )
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let listed = client.request("prompts/list", json!({})).await.unwrap();
    assert_eq!(listed["prompts"][0]["name"], "review");
    assert_eq!(listed["prompts"][0]["arguments"][0]["required"], true);
    let err = client
        .request("prompts/get", json!({"name": "review"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("code"), "{err}");
    let r = client
        .request(
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "fn main() {}"}}),
        )
        .await
        .unwrap();
    assert_eq!(r["messages"][0]["role"], "user");
    assert_eq!(
        r["messages"][0]["content"]["text"],
        "Please review:\nfn main() {}"
    );
    assert_eq!(r["description"], "Reviews code.");
}
