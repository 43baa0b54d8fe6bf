//! Application state, methods as tools and extractors over Streamable HTTP, in both eras:
//! a handshake-era session (whose end is seen once) and stateless 2026-07-28 requests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp::extract::{FromCtx, Rejection, State};
use mcp::prelude::*;
use mcp_tests::http::{HttpTestServer, StatelessHttp, WAIT, test_config};
use serde_json::{Value, json};

/// The application's configuration.
struct Greeting(&'static str);

/// A service whose methods are tools.
struct Visits {
    count: AtomicUsize,
}

#[tools]
impl Visits {
    /// Records a visit and greets the visitor.
    #[tool]
    async fn visit(
        &self,
        greeting: State<Greeting>,
        #[extract] tenant: Tenant,
        name: String,
    ) -> String {
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        format!("{} {name} of {} (visit {n})", greeting.0, tenant.0)
    }
}

/// The tenant from a 2026-07-28 request's `_meta`, or "anonymous" on the handshake era.
struct Tenant(String);

impl FromCtx for Tenant {
    async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
        match ctx.meta() {
            None => Ok(Tenant("anonymous".into())),
            Some(meta) => meta
                .get("example.com/tenant")
                .and_then(Value::as_str)
                .map(|t| Tenant(t.to_owned()))
                .ok_or_else(|| Rejection::new("name a tenant in _meta (example.com/tenant)")),
        }
    }
}

#[tokio::test]
async fn state_methods_and_extractors_serve_both_eras_over_http() {
    let ended = Arc::new(Mutex::new(0usize));
    let seen = ended.clone();
    let server = Server::builder("visits", "1")
        .state(Greeting("Welcome"))
        .tools_from(Visits {
            count: AtomicUsize::new(0),
        })
        .on_session_end(move |_| *seen.lock().unwrap() += 1)
        .build()
        .unwrap();
    let srv = HttpTestServer::start(server, test_config()).await;

    let mut session = srv.client();
    session.initialize("2025-11-25", json!({})).await;
    let r = session
        .request(
            2,
            "tools/call",
            json!({"name": "visit", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Welcome Ada of anonymous (visit 1)",
        "{r}"
    );

    let stateless = StatelessHttp::new(srv.url("/mcp"));
    let params = json!({"name": "visit", "arguments": {"name": "Bob"}, "_meta": {"example.com/tenant": "acme"}});
    let r = stateless.request(json!(3), "tools/call", params).await;
    assert_eq!(
        r["result"]["content"][0]["text"], "Welcome Bob of acme (visit 2)",
        "one value behind both eras: {r}"
    );
    let r = stateless
        .request(
            json!(4),
            "tools/call",
            json!({"name": "visit", "arguments": {"name": "Eve"}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("name a tenant"),
        "{r}"
    );

    // Ending the session (DELETE) ends it once.
    assert_eq!(*ended.lock().unwrap(), 0);
    let status = session.delete().send().await.unwrap().status();
    assert!(status.is_success(), "{status}");
    let deadline = std::time::Instant::now() + WAIT;
    while *ended.lock().unwrap() == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(*ended.lock().unwrap(), 1);
}
