//! The OAuth 2.1 resource server over real sockets: Protected Resource Metadata, 401 and
//! 403 challenges, JWT verification (HS256, RS256, ES256, JWKS), the verified principal
//! reaching authorizers and tools, per-tool scopes end to end, and sessions bound to their
//! principal.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use mcp::Server;
use mcp::auth::bearer::{JwtVerifier, TokenError, verifier_fn};
use mcp::auth::{Decision, Principal, policy};
use mcp::registry::ToolDef;
use mcp::transport::http::{BearerAuth, HttpConfig};
use mcp_tests::http::StatelessHttp;
use mcp_tests::http::{HttpTestServer, McpHttp, fixture, plain_client, test_config};
use reqwest::StatusCode;
use serde_json::{Value, json};

const SECRET: &[u8] = b"test-secret-test-secret-test-secret!";
const ISSUER: &str = "https://auth.example.test";
const RESOURCE: &str = "https://mcp.example.test/mcp";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(sub: &str, scope: &str) -> Value {
    json!({"sub": sub, "iss": ISSUER, "aud": RESOURCE, "exp": now() + 300, "scope": scope})
}

fn hs_token(claims: &Value) -> String {
    encode(
        &Header::default(),
        claims,
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap()
}

fn key(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/fixtures/keys/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn auth(verifier: impl mcp::auth::bearer::TokenVerifier) -> BearerAuth {
    BearerAuth::new(verifier, RESOURCE)
        .authorization_server(ISSUER)
        .scopes_supported(["mcp:use", "files:write"])
        .required_scopes(["mcp:use"])
        .resource_name("Test MCP server")
}

fn config() -> HttpConfig {
    test_config().bearer_auth(auth(JwtVerifier::hs256(SECRET, ISSUER, RESOURCE).unwrap()))
}

async fn started() -> HttpTestServer {
    HttpTestServer::start(fixture().server, config()).await
}

fn challenge(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate challenge")
        .to_str()
        .unwrap()
        .to_owned()
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
    .to_string()
}

#[tokio::test]
async fn protected_resource_metadata_is_served_at_both_well_known_paths() {
    let srv = started().await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = plain_client().get(srv.url(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["resource"], RESOURCE);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!(["mcp:use", "files:write"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["resource_name"], "Test MCP server");
    }
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401_with_the_metadata_url() {
    let srv = started().await;
    let metadata =
        "resource_metadata=\"https://mcp.example.test/.well-known/oauth-protected-resource/mcp\"";
    let c = srv.client();
    let r = c.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let header = challenge(&r);
    assert!(header.starts_with("Bearer "), "{header}");
    assert!(header.contains(metadata), "{header}");
    assert!(header.contains("scope=\"mcp:use\""), "{header}");
    assert!(
        !header.contains("error="),
        "no error code without a token: {header}"
    );
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Unauthorized")
    );

    let bad_signature = encode(
        &Header::default(),
        &claims("alice", "mcp:use"),
        &EncodingKey::from_secret(b"another-secret-another-secret-another").unwrap(),
    )
    .unwrap();
    let mut expired = claims("alice", "mcp:use");
    expired["exp"] = json!(now() - 3600);
    let mut other_audience = claims("alice", "mcp:use");
    other_audience["aud"] = json!("https://other.example.test/mcp");
    let mut other_issuer = claims("alice", "mcp:use");
    other_issuer["iss"] = json!("https://evil.example.test");
    for (token, why) in [
        (bad_signature, "signature"),
        (hs_token(&expired), "expired"),
        (hs_token(&other_audience), "another resource"),
        (hs_token(&other_issuer), "issuer"),
        ("not-a-jwt".to_owned(), "malformed"),
    ] {
        let mut c = srv.client();
        c.token = Some(token);
        let r = c.post(initialize_body()).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{why}");
        let header = challenge(&r);
        assert!(
            header.contains("error=\"invalid_token\""),
            "{why}: {header}"
        );
        assert!(header.contains(why), "{why}: {header}");
        assert!(header.contains(metadata), "{header}");
    }
    // Another scheme is no token at all.
    let r = plain_client()
        .post(srv.url("/mcp"))
        .header("authorization", "Basic YWxpY2U6cHc=")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize_body())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn tokens_in_the_query_string_are_refused() {
    let srv = started().await;
    let token = hs_token(&claims("alice", "mcp:use"));
    let mut c = McpHttp::new(format!("{}?access_token={token}", srv.url("/mcp")));
    c.token = Some(token);
    let r = c.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(challenge(&r).contains("invalid_request"));
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("query string")
    );
}

#[tokio::test]
async fn a_token_without_the_required_scope_gets_403_insufficient_scope() {
    let srv = started().await;
    let mut c = srv.client();
    c.token = Some(hs_token(&claims("alice", "files:write")));
    let r = c.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let header = challenge(&r);
    assert!(header.contains("error=\"insufficient_scope\""), "{header}");
    assert!(header.contains("scope=\"mcp:use\""), "{header}");
    assert!(header.contains("resource_metadata="), "{header}");
}

#[tokio::test]
async fn the_verified_principal_reaches_tools_and_authorizers_and_per_tool_scopes_apply() {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let server = Server::builder("scoped", "1.0.0")
        .tool(ToolDef::from_fn(
            "whoami",
            "Names the caller.",
            |ctx: mcp::Ctx, _: serde_json::Map<String, Value>| async move {
                let p = ctx.principal().expect("a principal");
                format!(
                    "{} [{}] from {}",
                    p.subject,
                    p.scopes.join(" "),
                    p.issuer.clone().unwrap_or_default()
                )
            },
        ))
        .tool(
            ToolDef::from_fn(
                "write_files",
                "Writes files.",
                |_ctx, _: serde_json::Map<String, Value>| async { "written" },
            )
            .scopes(["files:write"]),
        )
        .authorizer(policy(move |req| {
            seen2
                .lock()
                .unwrap()
                .push(req.context().principal().map(|p| p.subject.clone()));
            Decision::Allow
        }))
        .read_authorizer(mcp::auth::allow_all())
        .build()
        .unwrap();
    let srv = HttpTestServer::start(server, config()).await;

    let mut alice = srv.client();
    alice.token = Some(hs_token(&claims("alice", "mcp:use")));
    // What the client says about itself changes nothing.
    alice
        .initialize("2025-11-25", json!({"experimental": {"principal": "root"}}))
        .await;
    let who = alice
        .request(1, "tools/call", json!({"name": "whoami", "arguments": {}}))
        .await;
    assert_eq!(
        who["result"]["content"][0]["text"],
        format!("alice [mcp:use] from {ISSUER}")
    );
    assert!(seen.lock().unwrap().contains(&Some("alice".to_owned())));

    // Without files:write the tool is hidden, and calling it is a 403 step-up challenge
    // naming every scope needed.
    let tools = alice.request(2, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["whoami"]);
    let ex = alice
        .exchange(
            json!(3),
            "tools/call",
            json!({"name": "write_files", "arguments": {}}),
        )
        .await;
    assert_eq!(ex.status, StatusCode::FORBIDDEN);
    assert!(
        ex.response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("insufficient_scope")
    );
    let r = alice
        .post(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "write_files", "arguments": {}}}).to_string())
        .send()
        .await
        .unwrap();
    let header = challenge(&r);
    assert!(header.contains("error=\"insufficient_scope\""), "{header}");
    assert!(header.contains("scope=\"mcp:use files:write\""), "{header}");

    // With a token carrying the scope (same subject), the same session lists and runs it.
    alice.token = Some(hs_token(&claims("alice", "mcp:use files:write")));
    let tools = alice.request(5, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 2);
    let done = alice
        .request(
            6,
            "tools/call",
            json!({"name": "write_files", "arguments": {}}),
        )
        .await;
    assert_eq!(done["result"]["content"][0]["text"], "written");
}

#[tokio::test]
async fn stateless_requests_get_the_same_challenges_and_carry_the_verified_principal() {
    let srv = started().await;
    let mut c: StatelessHttp = srv.stateless();
    let who = json!({"name": "whoami", "arguments": {}});
    let r = c
        .post(json!(1), "tools/call", who.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&r).contains("resource_metadata="));
    c.token = Some(hs_token(&claims("bob", "files:write")));
    let r = c
        .post(json!(2), "tools/call", who.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    c.token = Some(hs_token(&claims("bob", "mcp:use")));
    let me = c.request(json!(3), "tools/call", who.clone()).await;
    assert_eq!(me["result"]["content"][0]["text"], "bob [mcp:use]");
    // What a caller sees depends on its token: private to it.
    let listed = c.request(json!(4), "tools/list", json!({})).await;
    assert_eq!(listed["result"]["cacheScope"], "private");
    // A tool needing more scopes is a step-up challenge, before anything runs.
    let write = json!({"name": "write_files", "arguments": {}});
    let r = c
        .post(json!(5), "tools/call", write.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let header = challenge(&r);
    assert!(header.contains("error=\"insufficient_scope\""), "{header}");
    assert!(header.contains("scope=\"mcp:use files:write\""), "{header}");
    c.token = Some(hs_token(&claims("bob", "mcp:use files:write")));
    let done = c.request(json!(6), "tools/call", write).await;
    assert_eq!(done["result"]["content"][0]["text"], "written");
}

#[tokio::test]
async fn a_session_belongs_to_the_principal_that_created_it() {
    let srv = started().await;
    let mut alice = srv.client();
    alice.token = Some(hs_token(&claims("alice", "mcp:use")));
    alice.initialize("2025-11-25", json!({})).await;
    let mut mallory = alice.clone();
    mallory.token = Some(hs_token(&claims("mallory", "mcp:use")));
    let ex = mallory.exchange(json!(1), "ping", json!({})).await;
    assert_eq!(ex.status, StatusCode::NOT_FOUND);
    assert_eq!(
        mallory.get().send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        mallory.delete().send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        alice.request(2, "ping", json!({})).await["result"],
        json!({})
    );
}

#[tokio::test]
async fn without_bearer_auth_scoped_tools_are_denied_to_network_callers() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let tools = c.request(1, "tools/list", json!({})).await;
    assert!(
        !tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "write_files")
    );
    let r = c
        .request(
            2,
            "tools/call",
            json!({"name": "write_files", "arguments": {}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true);
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("insufficient_scope") && text.contains("files:write"),
        "{text}"
    );
    let who = c
        .request(3, "tools/call", json!({"name": "whoami", "arguments": {}}))
        .await;
    assert_eq!(who["result"]["content"][0]["text"], "anonymous");
}

async fn accepts_with(verifier: JwtVerifier, alg: Algorithm, kid: Option<&str>, private: &str) {
    let srv =
        HttpTestServer::start(fixture().server, test_config().bearer_auth(auth(verifier))).await;
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    let pem = key(private);
    let signing = match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem).unwrap(),
        _ => EncodingKey::from_ec_pem(&pem).unwrap(),
    };
    let mut c = srv.client();
    c.token = Some(encode(&header, &claims("carol", "mcp:use"), &signing).unwrap());
    c.initialize("2025-11-25", json!({})).await;
    let who = c
        .request(1, "tools/call", json!({"name": "whoami", "arguments": {}}))
        .await;
    assert_eq!(who["result"]["content"][0]["text"], "carol [mcp:use]");
    // An HS256 token (the algorithm-confusion attack) is refused.
    let mut forged = srv.client();
    forged.token = Some(hs_token(&claims("carol", "mcp:use")));
    assert_eq!(
        forged
            .post(initialize_body())
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn rs256_es256_and_jwks_keys_verify_tokens() {
    let rs = JwtVerifier::rs256_pem(&key("rsa-public.pem"), ISSUER, RESOURCE).unwrap();
    accepts_with(rs, Algorithm::RS256, None, "rsa-private.pem").await;
    let es = JwtVerifier::es256_pem(&key("ec-public.pem"), ISSUER, RESOURCE).unwrap();
    accepts_with(es, Algorithm::ES256, None, "ec-private.pem").await;
    let path = format!("{}/fixtures/keys/jwks.json", env!("CARGO_MANIFEST_DIR"));
    accepts_with(
        JwtVerifier::jwks_file(&path, ISSUER, RESOURCE).unwrap(),
        Algorithm::RS256,
        Some("rsa-1"),
        "rsa-private.pem",
    )
    .await;
    accepts_with(
        JwtVerifier::jwks_file(&path, ISSUER, RESOURCE).unwrap(),
        Algorithm::ES256,
        Some("ec-1"),
        "ec-private.pem",
    )
    .await;

    // A kid that names the wrong key fails.
    let jwks = JwtVerifier::jwks_file(&path, ISSUER, RESOURCE).unwrap();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("rsa-1".into());
    let token = encode(
        &header,
        &claims("carol", "mcp:use"),
        &EncodingKey::from_ec_pem(&key("ec-private.pem")).unwrap(),
    )
    .unwrap();
    assert!(jwks.verify_now(&token).is_err());
}

#[tokio::test]
async fn an_unavailable_verifier_answers_503_not_401() {
    let verifier = verifier_fn(|token: String| async move {
        if token == "good" {
            Ok(Principal::new("dave", vec!["mcp:use".into()]))
        } else {
            Err(TokenError::Unavailable(
                "introspection endpoint down".into(),
            ))
        }
    });
    let srv =
        HttpTestServer::start(fixture().server, test_config().bearer_auth(auth(verifier))).await;
    let mut c = srv.client();
    c.token = Some("flaky".into());
    let r = c.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    c.token = Some("good".into());
    c.initialize("2025-11-25", json!({})).await;
}

#[tokio::test]
async fn the_legacy_sse_routes_need_a_token_too() {
    let srv = HttpTestServer::start_sse(fixture().server, config()).await;
    let r = plain_client()
        .get(srv.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&r).contains("resource_metadata="));
    let r = plain_client()
        .get(srv.url("/sse"))
        .header("accept", "text/event-stream")
        .bearer_auth(hs_token(&claims("erin", "mcp:use")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // The metadata is public.
    let r = plain_client()
        .get(srv.url("/.well-known/oauth-protected-resource"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}
