//! Methods as tools: the `#[tool]` methods of a `#[tools]` impl, registered together from one
//! value, with the schemas, descriptions and safety rules of function tools.

use std::sync::atomic::{AtomicUsize, Ordering};

use mcp::extract::State;
use mcp::prelude::*;
use mcp::testing::TestClient;
use serde_json::json;

/// A counter service: its tools share the value they were registered from.
struct Counter {
    step: usize,
    total: AtomicUsize,
}

/// A label from the server's state.
struct Label(&'static str);

#[tools]
impl Counter {
    /// Adds the step to the total, `times` times.
    #[tool(idempotent = false)]
    async fn bump(
        &self,
        /// How many steps to add.
        times: usize,
    ) -> String {
        let total = self.total.fetch_add(self.step * times, Ordering::SeqCst) + self.step * times;
        total.to_string()
    }

    /// The total, labelled.
    #[tool(read_only, name = "read_total")]
    async fn read(&self, label: State<Label>, ctx: Ctx) -> String {
        let _ = ctx.request_id();
        format!("{}: {}", label.0, self.total.load(Ordering::SeqCst))
    }

    /// Sets the total back to zero.
    #[tool(destructive)]
    async fn reset(&self) -> String {
        self.total.store(0, Ordering::SeqCst);
        "reset".into()
    }

    /// Not a tool: an ordinary method stays as it is.
    fn step(&self) -> usize {
        self.step
    }
}

fn counter() -> Counter {
    Counter {
        step: 5,
        total: AtomicUsize::new(0),
    }
}

#[tokio::test]
async fn methods_become_tools_sharing_one_value() {
    assert_eq!(counter().step(), 5);
    let server = Server::builder("counter", "1")
        .tools_from(counter())
        .state(Label("total"))
        .authorizer(mcp::auth::allow_all())
        .build()
        .unwrap();
    let mut client = TestClient::connect(&server);
    client.initialize(json!({})).await.unwrap();

    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["bump", "read_total", "reset"]);
    let bump = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(
        bump["description"],
        "Adds the step to the total, `times` times."
    );
    assert_eq!(
        bump["inputSchema"]["properties"]["times"]["description"],
        "How many steps to add."
    );
    assert_eq!(bump["inputSchema"]["required"], json!(["times"]));
    let read = serde_json::to_value(&tools[1]).unwrap();
    assert!(
        read["inputSchema"]
            .get("properties")
            .is_none_or(|p| p == &json!({})),
        "the state and the context are not arguments: {read}"
    );
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    let reset = serde_json::to_value(&tools[2]).unwrap();
    assert_eq!(reset["annotations"]["destructiveHint"], true);

    let r = client.call_tool("bump", json!({"times": 2})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("10"));
    let r = client.call_tool("bump", json!({"times": 1})).await.unwrap();
    assert_eq!(
        r.content[0].as_text(),
        Some("15"),
        "one value behind every call"
    );
    let r = client.call_tool("read_total", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("total: 15"));
    let r = client
        .call_tool("bump", json!({"times": "two"}))
        .await
        .unwrap();
    assert!(r.is_error(), "arguments are checked as for function tools");
}

#[test]
fn a_destructive_method_needs_an_authorizer() {
    let e = Server::builder("counter", "1")
        .tools_from(counter())
        .state(Label("total"))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("reset"), "{e}");
}
