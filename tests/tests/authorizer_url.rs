//! The authorizer's URL step (`Decision::Url`): the human completes something in their
//! browser before the call may proceed. -32042 on 2025-11-25 (with the completion notice the
//! authorizer sends), an input-required result on 2026-07-28 (never -32042), a deny that
//! carries no URL for a client that cannot take one, and the same at the read seam.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mcp::Server;
use mcp::auth::{AuditEvent, Decision, policy};
use mcp::context::ElicitationCompletion;
use mcp::registry::{ResourceDef, ResourceRequest, ToolDef};
use mcp::testing::TestClient;
use parking_lot::Mutex;
use serde_json::{Value, json};

const URL: &str = "https://bank.example/confirm/7f3a";
const ID: &str = "confirm-7f3a";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// A server whose `pay` tool and `bank://statement` resource need a confirmation at the
/// bank; `done` says whether the human confirmed, `completions` keeps what the authorizer
/// was handed to tell the client.
struct Bank {
    server: Server,
    done: Arc<AtomicBool>,
    ran: Arc<AtomicUsize>,
    completions: Arc<Mutex<Vec<ElicitationCompletion>>>,
    audit: Arc<Mutex<Vec<AuditEvent>>>,
}

impl Bank {
    fn new() -> Bank {
        Bank::with_step(|| Decision::url("Confirm the payment at your bank", URL, ID))
    }

    fn with_step(step: impl Fn() -> Decision + Send + Sync + 'static) -> Bank {
        let done = Arc::new(AtomicBool::new(false));
        let ran = Arc::new(AtomicUsize::new(0));
        let completions = Arc::new(Mutex::new(Vec::new()));
        let audit = Arc::new(Mutex::new(Vec::new()));
        let step = Arc::new(step);
        let (d, c, s) = (done.clone(), completions.clone(), step.clone());
        let (d2, s2) = (done.clone(), step);
        let r = ran.clone();
        let events = audit.clone();
        let server = Server::builder("bank", "1.0.0")
            .tool(
                ToolDef::from_fn("pay", "Pays.", move |_ctx, _: NoArgs| {
                    let r = r.clone();
                    async move {
                        r.fetch_add(1, Ordering::SeqCst);
                        "paid"
                    }
                })
                .destructive(),
            )
            .tool(ToolDef::from_fn(
                "balance",
                "Reads the balance.",
                |_ctx, _: NoArgs| async { "12" },
            ))
            .resource(ResourceDef::new(
                "bank://statement",
                "statement",
                |_ctx, _r: ResourceRequest| async { "the statement" },
            ))
            .authorizer(policy(move |req| {
                if req.name() != "pay" || d.load(Ordering::SeqCst) {
                    return Decision::Allow;
                }
                if let Some(completion) = req.elicitation_completion(ID) {
                    c.lock().push(completion);
                }
                s()
            }))
            .read_authorizer(policy(move |req| {
                if req.name() != "resources/read" || d2.load(Ordering::SeqCst) {
                    Decision::Allow
                } else {
                    s2()
                }
            }))
            .audit(move |e| events.lock().push(e.clone()))
            .build()
            .unwrap();
        Bank {
            server,
            done,
            ran,
            completions,
            audit,
        }
    }

    fn outcomes(&self) -> Vec<(String, String)> {
        self.audit
            .lock()
            .iter()
            .filter(|e| e.name == "pay")
            .map(|e| (e.decision.to_owned(), e.outcome.as_str().to_owned()))
            .collect()
    }
}

fn assert_valid(version: &str, name: &str, instance: &Value) {
    mcp_tests::schema::SchemaValidator::for_version(version)
        .validate(name, instance)
        .unwrap_or_else(|e| panic!("{name} ({version}): {e}\n{instance}"));
}

fn pay() -> Value {
    json!({"name": "pay", "arguments": {}})
}

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn on_2025_11_25_the_call_fails_with_32042_until_the_step_is_done() {
    let bank = Bank::new();
    let mut c = TestClient::connect(&bank.server);
    c.initialize(json!({"elicitation": {"url": {}}}))
        .await
        .unwrap();
    let response = c.request_message("tools/call", pay()).await.unwrap();
    assert_eq!(response["error"]["code"], -32042, "{response}");
    assert_valid("2025-11-25", "URLElicitationRequiredError", &response);
    let elicitation = &response["error"]["data"]["elicitations"][0];
    assert_eq!(elicitation["mode"], "url");
    assert_eq!(elicitation["url"], URL);
    assert_eq!(elicitation["elicitationId"], ID);
    assert_eq!(elicitation["message"], "Confirm the payment at your bank");
    assert_eq!(bank.ran.load(Ordering::SeqCst), 0);

    // The human confirms; the authorizer's flow tells the client, which retries.
    bank.done.store(true, Ordering::SeqCst);
    let completion = bank.completions.lock().pop().expect("a completion handle");
    assert_eq!(completion.elicitation_id(), ID);
    assert!(completion.send());
    let notice = c.next_message().await.expect("the completion notice");
    assert_eq!(notice["method"], "notifications/elicitation/complete");
    assert_eq!(notice["params"]["elicitationId"], ID);
    assert_valid("2025-11-25", "ElicitationCompleteNotification", &notice);

    let r = c.request("tools/call", pay()).await.unwrap();
    assert_eq!(r["content"][0]["text"], "paid", "{r}");
    assert_eq!(bank.ran.load(Ordering::SeqCst), 1);
    assert_eq!(
        bank.outcomes(),
        [
            ("url".to_owned(), "awaiting_url".to_owned()),
            ("allow".to_owned(), "served".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_client_without_the_url_capability_never_sees_the_url() {
    let bank = Bank::new();
    for caps in [json!({}), json!({"elicitation": {}})] {
        let mut c = TestClient::connect(&bank.server);
        c.initialize(caps.clone()).await.unwrap();
        let list = c.request("tools/list", json!({})).await.unwrap();
        assert_eq!(tool_names(&list), ["balance"], "{caps}");
        let response = c.request_message("tools/call", pay()).await.unwrap();
        let text = response.to_string();
        assert!(!text.contains("bank.example"), "the URL leaked: {text}");
        assert_eq!(response["result"]["isError"], true, "{response}");
        let payload: Value =
            serde_json::from_str(response["result"]["content"][0]["text"].as_str().unwrap())
                .unwrap();
        assert_eq!(payload["decision"], "url");
        assert_eq!(payload["question"], "Confirm the payment at your bank");
        assert!(
            payload["detail"]
                .as_str()
                .unwrap()
                .starts_with("url_step_unavailable: "),
            "{payload}"
        );
        assert!(c.drain(Duration::from_millis(50)).await.is_empty());
    }
    // A client that declared URL mode sees the tool.
    let mut c = TestClient::connect(&bank.server);
    c.initialize(json!({"elicitation": {"url": {}}}))
        .await
        .unwrap();
    let list = c.request("tools/list", json!({})).await.unwrap();
    assert_eq!(tool_names(&list), ["balance", "pay"]);
    // So does one on 2026-07-28 that declares it, and one that does not, does not.
    let mut c = TestClient::connect(&bank.server);
    c.use_stateless(json!({"elicitation": {"url": {}}}));
    let list = c.request("tools/list", json!({})).await.unwrap();
    assert_eq!(tool_names(&list), ["balance", "pay"]);
    c.use_stateless(json!({"elicitation": {}}));
    let list = c.request("tools/list", json!({})).await.unwrap();
    assert_eq!(tool_names(&list), ["balance"]);
    let r = c.request("tools/call", pay()).await.unwrap();
    assert_eq!(r["isError"], true, "{r}");
    assert!(!r.to_string().contains("bank.example"), "{r}");
    assert_eq!(bank.ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn on_2026_07_28_the_url_rides_in_input_requests_and_the_retry_is_decided_again() {
    let bank = Bank::new();
    let mut c = TestClient::connect(&bank.server);
    c.use_stateless(json!({"elicitation": {"url": {}}}));
    let first = c.request("tools/call", pay()).await.unwrap();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let key = format!("url-{ID}");
    let asked = &first["inputRequests"][&key];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(asked["params"]["url"], URL);
    assert!(asked["params"].get("elicitationId").is_none(), "{asked}");
    assert_valid("2026-07-28", "InputRequest", asked);
    assert!(
        bank.completions.lock().is_empty(),
        "no completion notice on 2026-07-28"
    );

    let retry = |answer: Value, state: &Value| {
        json!({"name": "pay", "arguments": {}, "requestState": state,
               "inputResponses": {&key: answer}})
    };
    // Agreed to open it, but the bank has not confirmed yet: refused, nothing ran.
    let early = c
        .request(
            "tools/call",
            retry(json!({"action": "accept"}), &first["requestState"]),
        )
        .await
        .unwrap();
    assert_eq!(early["isError"], true, "{early}");
    assert!(early.to_string().contains("url_step_unfinished"), "{early}");
    // The state is spent: a new call starts over, and a decline is refused as one.
    let again = c.request("tools/call", pay()).await.unwrap();
    assert_eq!(again["resultType"], "input_required", "{again}");
    let declined = c
        .request(
            "tools/call",
            retry(json!({"action": "decline"}), &again["requestState"]),
        )
        .await
        .unwrap();
    assert!(
        declined.to_string().contains("url_step_declined"),
        "{declined}"
    );
    // An answer without the state that asked for it counts for nothing: asked again.
    let forged = c
        .request(
            "tools/call",
            json!({"name": "pay", "arguments": {}, "inputResponses": {&key: {"action": "accept"}}}),
        )
        .await
        .unwrap();
    assert_eq!(forged["resultType"], "input_required", "{forged}");
    assert_eq!(bank.ran.load(Ordering::SeqCst), 0);

    // Confirmed at the bank: the retry is allowed and runs, once.
    bank.done.store(true, Ordering::SeqCst);
    let paid = c
        .request(
            "tools/call",
            retry(json!({"action": "accept"}), &forged["requestState"]),
        )
        .await
        .unwrap();
    assert_eq!(paid["content"][0]["text"], "paid", "{paid}");
    assert_eq!(bank.ran.load(Ordering::SeqCst), 1);
    let outcomes: Vec<String> = bank.outcomes().into_iter().map(|(_, o)| o).collect();
    assert_eq!(
        outcomes,
        [
            "awaiting_url",
            "not_approved",
            "awaiting_url",
            "not_approved",
            "awaiting_url",
            "served"
        ]
    );
}

#[tokio::test]
async fn the_read_seam_answers_32042_on_2025_11_25_and_refuses_elsewhere() {
    let bank = Bank::new();
    let read = json!({"uri": "bank://statement"});
    let mut c = TestClient::connect(&bank.server);
    c.initialize(json!({"elicitation": {"url": {}}}))
        .await
        .unwrap();
    let e = c.request("resources/read", read.clone()).await.unwrap_err();
    assert_eq!(e.code, -32042, "{e:?}");
    assert_eq!(e.data.as_ref().unwrap()["elicitations"][0]["url"], URL);

    let mut plain = TestClient::connect(&bank.server);
    plain.initialize(json!({})).await.unwrap();
    let e = plain
        .request("resources/read", read.clone())
        .await
        .unwrap_err();
    assert_eq!(e.code, -32090, "{e:?}");
    assert!(!format!("{e:?}").contains("bank.example"));

    let mut stateless = TestClient::connect(&bank.server);
    stateless.use_stateless(json!({"elicitation": {"url": {}}}));
    let e = stateless
        .request("resources/read", read.clone())
        .await
        .unwrap_err();
    assert_eq!(e.code, -32090, "never -32042 on 2026-07-28: {e:?}");
    assert!(
        e.data.as_ref().unwrap()["detail"]
            .as_str()
            .unwrap()
            .starts_with("url_step_unavailable"),
        "{e:?}"
    );

    bank.done.store(true, Ordering::SeqCst);
    let r = c.request("resources/read", read).await.unwrap();
    assert_eq!(r["contents"][0]["text"], "the statement");
}

#[tokio::test]
async fn a_url_step_outside_the_contract_is_a_deny() {
    for bad in [
        Decision::url("Confirm", "javascript:alert(1)", ID),
        Decision::url("Confirm", "https://bank.example/a b", ID),
        Decision::url("  ", URL, ID),
        Decision::url("Confirm", URL, ""),
        Decision::url("Confirm", "https://", ID),
    ] {
        let shown = format!("{bad:?}");
        let bank = Bank::with_step(move || bad.clone());
        let mut c = TestClient::connect(&bank.server);
        c.initialize(json!({"elicitation": {"url": {}}}))
            .await
            .unwrap();
        let r = c.request("tools/call", pay()).await.unwrap();
        assert_eq!(r["isError"], true, "{shown}: {r}");
        assert!(
            r.to_string().contains("authorizer_contract_violation"),
            "{shown}: {r}"
        );
        assert_eq!(bank.ran.load(Ordering::SeqCst), 0);
    }
}
