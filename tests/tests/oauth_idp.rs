//! The resource server against a real identity provider (tests/src/idp.rs) on loopback:
//! issuer discovery (RFC 8414 and OpenID Connect), JWKS caching, rotation, the unknown-kid
//! rate limit, outages within and past the stale bound, every supported algorithm, token
//! introspection with client authentication, revocation and caching, HTTPS end to end,
//! and all of it through the Streamable HTTP transport.

use std::time::Duration;

use jsonwebtoken::{EncodingKey, Header};
use mcp::auth::bearer::{
    ClientAuth, FetchOptions, IntrospectionVerifier, JwksVerifier, JwksVerifierBuilder,
    ProviderError, TokenError,
};
use mcp::transport::http::BearerAuth;
use mcp_tests::http::{HttpTestServer, fixture, plain_client, test_config};
use mcp_tests::idp::{CLIENT_ID, CLIENT_SECRET, Idp, IdpOptions, Kind, Outage, now};
use reqwest::StatusCode;
use serde_json::{Value, json};

const RESOURCE: &str = "https://mcp.example.test/mcp";

fn jwks(idp: &Idp) -> JwksVerifierBuilder {
    JwksVerifier::discover(idp.issuer(), RESOURCE).allow_http_loopback()
}

fn token(idp: &Idp, kid: &str) -> String {
    idp.sign(kid, &idp.claims("alice", RESOURCE, "mcp:use files:read"))
}

#[tokio::test]
async fn discovery_finds_the_keys_by_rfc_8414_and_every_supported_algorithm_verifies() {
    let idp = Idp::start().await;
    let v = jwks(&idp).build().unwrap();
    for kid in ["rsa-1", "rsa-ps", "ec-1", "ed-1"] {
        let p = v
            .verify_token(&token(&idp, kid))
            .await
            .unwrap_or_else(|e| panic!("{kid}: {e}"));
        assert_eq!(p.subject, "alice");
        assert_eq!(p.scopes, vec!["files:read", "mcp:use"]);
        assert_eq!(p.issuer.as_deref(), Some(idp.issuer().as_str()));
    }
    // RFC 8414's path answered, so OpenID Connect's was never asked; one key set fetch
    // served all four tokens.
    assert_eq!(idp.count(Kind::OauthMetadata), 1);
    assert_eq!(idp.count(Kind::OidcMetadata), 0);
    assert_eq!(idp.count(Kind::Jwks), 1);
}

#[tokio::test]
async fn an_issuer_with_a_path_is_found_by_openid_connect_when_rfc_8414_is_missing() {
    let idp = Idp::start_with(IdpOptions {
        issuer_path: "/tenant-a".into(),
        oauth_metadata: false,
        ..IdpOptions::default()
    })
    .await;
    assert!(idp.issuer().ends_with("/tenant-a"));
    let v = jwks(&idp).build().unwrap();
    assert_eq!(v.fetch_keys().await.unwrap(), 4);
    // Tried: the path-inserted RFC 8414 URL (404), the path-inserted OpenID URL (404),
    // then the appended OpenID URL.
    assert_eq!(idp.count(Kind::OauthMetadata), 1);
    assert_eq!(idp.count(Kind::OidcMetadata), 2);
    v.verify_token(&token(&idp, "ec-1")).await.unwrap();
}

#[tokio::test]
async fn forged_algorithms_and_foreign_tokens_are_refused() {
    let idp = Idp::start().await;
    let v = jwks(&idp).leeway(Duration::ZERO).build().unwrap();
    // HS256 "signed" with the RSA public key's bytes, naming the RSA key's kid: the
    // classic confusion attack.
    let public = std::fs::read(format!(
        "{}/fixtures/keys/rsa-public.pem",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some("rsa-1".into());
    let forged = jsonwebtoken::encode(
        &header,
        &idp.claims("mallory", RESOURCE, "mcp:use"),
        &EncodingKey::from_secret(&public).unwrap(),
    )
    .unwrap();
    assert!(
        matches!(v.verify_token(&forged).await, Err(TokenError::Invalid(m)) if m.contains("HS256"))
    );
    // alg none.
    let b64 =
        |s: &str| base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, s);
    let none = format!(
        "{}.{}.",
        b64(r#"{"alg":"none","typ":"JWT","kid":"rsa-1"}"#),
        b64(&idp.claims("mallory", RESOURCE, "mcp:use").to_string())
    );
    assert!(v.verify_token(&none).await.is_err());
    // An ES256 token naming the RSA key (another family) is refused.
    let mixed = idp.sign_as("ec-1", "rsa-1", &idp.claims("mallory", RESOURCE, "mcp:use"));
    assert!(matches!(
        v.verify_token(&mixed).await,
        Err(TokenError::Invalid(_))
    ));
    // A good signature on someone else's audience, issuer, or an expired token.
    let mut other = idp.claims("alice", "https://other.example.test/mcp", "mcp:use");
    assert!(matches!(
        v.verify_token(&idp.sign("rsa-1", &other)).await,
        Err(TokenError::Invalid(m)) if m.contains("another resource")
    ));
    other = idp.claims("alice", RESOURCE, "mcp:use");
    other["iss"] = json!("https://evil.example.test");
    assert!(v.verify_token(&idp.sign("rsa-1", &other)).await.is_err());
    let mut expired = idp.claims("alice", RESOURCE, "mcp:use");
    expired["exp"] = json!(now() - 5);
    assert_eq!(
        v.verify_token(&idp.sign("ed-1", &expired)).await,
        Err(TokenError::Expired)
    );
}

#[tokio::test]
async fn a_rotated_key_is_accepted_after_one_refresh_and_the_withdrawn_one_is_dropped() {
    let idp = Idp::start().await;
    let v = jwks(&idp)
        .refresh_interval(Duration::from_millis(200))
        .build()
        .unwrap();
    v.verify_token(&token(&idp, "rsa-1")).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 1);
    idp.rotate();
    // Still cached (max-age=300): the old key verifies without a fetch.
    v.verify_token(&token(&idp, "rsa-1")).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 1);
    // The new key's first token fetches the set once, and is accepted.
    tokio::time::sleep(Duration::from_millis(250)).await;
    v.verify_token(&token(&idp, "rsa-2")).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 2);
    v.verify_token(&token(&idp, "rsa-2")).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 2);
    // The refreshed set no longer has rsa-1.
    let r = v.verify_token(&token(&idp, "rsa-1")).await;
    assert!(matches!(r, Err(TokenError::Invalid(_))), "{r:?}");
}

#[tokio::test]
async fn a_flood_of_unknown_key_ids_costs_the_provider_one_fetch_per_interval() {
    let idp = Idp::start().await;
    let interval = Duration::from_secs(3);
    let v = jwks(&idp).refresh_interval(interval).build().unwrap();
    // Signed before the clock starts (signing is slow in debug builds; verifying a token
    // with an unknown kid does no signature work).
    let claims = idp.claims("mallory", RESOURCE, "mcp:use");
    let flood: Vec<String> = (0..200)
        .map(|i| idp.sign_as("ed-1", &format!("random-{i}"), &claims))
        .collect();
    let second: Vec<String> = (0..50)
        .map(|i| idp.sign_as("ed-1", &format!("again-{i}"), &claims))
        .collect();
    let good = token(&idp, "ec-1");

    v.fetch_keys().await.unwrap();
    let started = std::time::Instant::now();
    assert_eq!(idp.count(Kind::Jwks), 1);
    let mut tasks = Vec::new();
    for t in flood {
        let v = v.clone();
        tasks.push(tokio::spawn(async move { v.verify_token(&t).await }));
    }
    for t in tasks {
        assert!(matches!(t.await.unwrap(), Err(TokenError::Invalid(_))));
    }
    assert!(
        started.elapsed() < interval,
        "the flood outlasted the interval"
    );
    // fetch_keys counts as the interval's fetch: the whole flood within the interval
    // reaches the provider not once.
    assert_eq!(idp.count(Kind::Jwks), 1, "fetches for 200 unknown kids");
    // Good tokens are unaffected.
    v.verify_token(&good).await.unwrap();
    // After the interval, one more fetch is allowed, and only one.
    tokio::time::sleep(interval + Duration::from_millis(100)).await;
    for t in &second {
        assert!(v.verify_token(t).await.is_err());
    }
    assert_eq!(idp.count(Kind::Jwks), 2);
}

#[tokio::test]
async fn cache_headers_decide_when_the_keys_are_fetched_again() {
    let idp = Idp::start().await;
    idp.set_jwks_cache_control(Some("public, max-age=1"));
    let v = jwks(&idp)
        .cache_ttl_bounds(Duration::from_secs(1), Duration::from_secs(3600))
        .refresh_interval(Duration::from_millis(100))
        .build()
        .unwrap();
    let t = token(&idp, "rsa-1");
    v.verify_token(&t).await.unwrap();
    v.verify_token(&t).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 1);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    v.verify_token(&t).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 2, "max-age=1 expired");
    // max-age=0 is raised to the floor (1 s here), not fetched per token.
    idp.set_jwks_cache_control(Some("no-cache"));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    for _ in 0..20 {
        v.verify_token(&t).await.unwrap();
    }
    assert_eq!(idp.count(Kind::Jwks), 3);
}

#[tokio::test]
async fn stale_keys_verify_while_the_provider_is_down_within_the_bound_then_fail_closed() {
    let idp = Idp::start().await;
    idp.set_jwks_cache_control(Some("max-age=1"));
    let v = jwks(&idp)
        .cache_ttl_bounds(Duration::from_secs(1), Duration::from_secs(60))
        .refresh_interval(Duration::from_secs(1))
        .max_stale(Duration::from_secs(2))
        .build()
        .unwrap();
    let t = token(&idp, "ed-1");
    v.verify_token(&t).await.unwrap();
    idp.set_outage(Outage::Status500);
    // Past the cache lifetime, within the stale bound: the old keys still verify, though
    // the refresh failed.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    v.verify_token(&t).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 2, "one failed refresh");
    // Within the refresh interval, no new attempt.
    v.verify_token(&t).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 2);
    // Past lifetime + stale bound: refused as unavailable, naming the failure.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    match v.verify_token(&t).await {
        Err(TokenError::Unavailable(m)) => {
            assert!(m.contains("500"), "{m}");
            assert!(m.contains("refused until"), "{m}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    // The provider comes back: the next attempt (after the interval) recovers.
    idp.set_outage(Outage::None);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    v.verify_token(&t).await.unwrap();
}

#[tokio::test]
async fn a_provider_that_never_answers_times_out_and_one_that_is_gone_is_unavailable() {
    let idp = Idp::start().await;
    idp.set_outage(Outage::Hang);
    let v = jwks(&idp)
        .fetch_options(
            FetchOptions::new()
                .allow_http_loopback()
                .timeout(Duration::from_millis(300)),
        )
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let r = v.verify_token(&token(&idp, "rsa-1")).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        matches!(&r, Err(TokenError::Unavailable(m)) if m.contains("no complete answer")),
        "{r:?}"
    );

    let gone = Idp::start().await;
    let v = jwks(&gone).build().unwrap();
    gone.stop();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(matches!(
        v.verify_token(&token(&gone, "rsa-1")).await,
        Err(TokenError::Unavailable(_))
    ));
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused() {
    let idp = Idp::start().await;
    idp.set_metadata_issuer(Some("https://evil.example.test"));
    let v = jwks(&idp).build().unwrap();
    match v.fetch_keys().await {
        Err(ProviderError::Refused(m)) => assert!(m.contains("evil.example.test"), "{m}"),
        other => panic!("expected Refused, got {other:?}"),
    }
    assert!(matches!(
        v.verify_token(&token(&idp, "rsa-1")).await,
        Err(TokenError::Unavailable(m)) if m.contains("not the configured")
    ));
    assert_eq!(
        idp.count(Kind::Jwks),
        0,
        "keys from a wrong issuer's metadata are never fetched"
    );
    // A trailing slash is another issuer too: identical means identical.
    idp.set_metadata_issuer(Some(&format!("{}/", idp.issuer())));
    let v = jwks(&idp).build().unwrap();
    assert!(matches!(
        v.fetch_keys().await,
        Err(ProviderError::Refused(_))
    ));
}

#[tokio::test]
async fn plain_http_is_refused_without_the_loopback_opt_in() {
    let idp = Idp::start().await;
    match JwksVerifier::discover(idp.issuer(), RESOURCE).build() {
        Err(ProviderError::Config(m)) => assert!(m.contains("allow_http_loopback"), "{m}"),
        other => panic!("expected Config, got {other:?}"),
    }
    assert!(
        JwksVerifier::from_jwks_uri(idp.jwks_uri(), "https://as.example.test", RESOURCE)
            .build()
            .is_err()
    );
    assert!(
        IntrospectionVerifier::with_endpoint(idp.introspection_endpoint(), RESOURCE)
            .client_credentials(CLIENT_ID, CLIENT_SECRET, ClientAuth::Basic)
            .build()
            .is_err()
    );
    assert_eq!(idp.total(), 0, "nothing reached the provider");
}

#[tokio::test]
async fn https_end_to_end_with_a_custom_root() {
    let idp = Idp::start_with(IdpOptions {
        tls: true,
        ..IdpOptions::default()
    })
    .await;
    assert!(idp.issuer().starts_with("https://127.0.0.1:"));
    let v = JwksVerifier::discover(idp.issuer(), RESOURCE)
        .fetch_options(FetchOptions::new().root_certificate_pem(idp.cert_pem().as_bytes()))
        .build()
        .unwrap();
    v.verify_token(&token(&idp, "ec-1")).await.unwrap();
    assert_eq!(idp.count(Kind::Jwks), 1);
    // Without the root, the certificate is not trusted.
    let untrusting = JwksVerifier::discover(idp.issuer(), RESOURCE)
        .build()
        .unwrap();
    let r = untrusting.fetch_keys().await;
    assert!(
        matches!(&r, Err(ProviderError::Unavailable(m)) if m.to_lowercase().contains("certificate")),
        "{r:?}"
    );
    // Introspection over HTTPS as well.
    let i = IntrospectionVerifier::discover(idp.issuer(), RESOURCE)
        .client_credentials(CLIENT_ID, CLIENT_SECRET, ClientAuth::Basic)
        .fetch_options(FetchOptions::new().root_certificate_pem(idp.cert_pem().as_bytes()))
        .build()
        .unwrap();
    let opaque = idp.issue_opaque(json!({"sub": "bob", "scope": "mcp:use", "aud": RESOURCE}));
    assert_eq!(i.verify_token(&opaque).await.unwrap().subject, "bob");
}

fn introspection(idp: &Idp, auth: ClientAuth) -> IntrospectionVerifier {
    IntrospectionVerifier::discover(idp.issuer(), RESOURCE)
        .client_credentials(CLIENT_ID, CLIENT_SECRET, auth)
        .allow_http_loopback()
        .max_cache_ttl(Duration::from_secs(30))
        .negative_cache_ttl(Duration::from_millis(500))
        .build()
        .unwrap()
}

#[tokio::test]
async fn introspection_accepts_active_tokens_with_either_client_authentication() {
    let idp = Idp::start().await;
    for auth in [ClientAuth::Basic, ClientAuth::Post] {
        let v = introspection(&idp, auth);
        let t = idp.issue_opaque(json!({"sub": "carol", "scope": "mcp:use files:read",
            "aud": [RESOURCE], "iss": idp.issuer(), "exp": now() + 600}));
        let p = v.verify_token(&t).await.unwrap();
        assert_eq!(p.subject, "carol");
        assert_eq!(p.scopes, vec!["files:read", "mcp:use"]);
        assert_eq!(p.issuer.as_deref(), Some(idp.issuer().as_str()));
    }
    assert_eq!(idp.client_auth_seen(), vec!["basic", "post"]);
    // The endpoint came from discovery (once per verifier).
    assert_eq!(idp.count(Kind::OauthMetadata), 2);
    // Wrong credentials: the server cannot decide, so 503-style Unavailable, not a 401.
    let wrong = IntrospectionVerifier::with_endpoint(idp.introspection_endpoint(), RESOURCE)
        .client_credentials(CLIENT_ID, "not-the-secret", ClientAuth::Basic)
        .allow_http_loopback()
        .build()
        .unwrap();
    let t = idp.issue_opaque(json!({"sub": "carol"}));
    assert!(matches!(
        wrong.verify_token(&t).await,
        Err(TokenError::Unavailable(m)) if m.contains("client credentials")
    ));
    // Another audience, or another issuer, is refused.
    let v = introspection(&idp, ClientAuth::Basic);
    let other = idp.issue_opaque(json!({"sub": "carol", "aud": "https://other.example.test/mcp"}));
    assert!(
        matches!(v.verify_token(&other).await, Err(TokenError::Invalid(m)) if m.contains("another resource"))
    );
    let evil = idp.issue_opaque(json!({"sub": "carol", "iss": "https://evil.example.test"}));
    assert!(
        matches!(v.verify_token(&evil).await, Err(TokenError::Invalid(m)) if m.contains("issuer"))
    );
}

#[tokio::test]
async fn introspection_answers_are_cached_revocation_and_expiry_are_honoured() {
    let idp = Idp::start().await;
    let v = introspection(&idp, ClientAuth::Basic);
    let t = idp.issue_opaque(json!({"sub": "dave", "scope": "mcp:use", "exp": now() + 600}));
    for _ in 0..10 {
        v.verify_token(&t).await.unwrap();
    }
    assert_eq!(idp.count(Kind::Introspect), 1, "nine cache hits");
    // Revoked: the cached answer stands until its lifetime ends (max_cache_ttl); a fresh
    // verifier (or the end of the ttl) sees the revocation.
    idp.revoke(&t);
    let fresh = introspection(&idp, ClientAuth::Basic);
    assert!(matches!(
        fresh.verify_token(&t).await,
        Err(TokenError::Invalid(m)) if m.contains("not active")
    ));
    // Negative answers are cached briefly, then asked again.
    let before = idp.count(Kind::Introspect);
    assert!(fresh.verify_token(&t).await.is_err());
    assert_eq!(idp.count(Kind::Introspect), before);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(fresh.verify_token(&t).await.is_err());
    assert_eq!(idp.count(Kind::Introspect), before + 1);

    // An active token that expires soon is cached only until its exp (+ leeway).
    let short = IntrospectionVerifier::discover(idp.issuer(), RESOURCE)
        .client_credentials(CLIENT_ID, CLIENT_SECRET, ClientAuth::Basic)
        .allow_http_loopback()
        .leeway(Duration::ZERO)
        .max_cache_ttl(Duration::from_secs(60))
        .build()
        .unwrap();
    let soon = idp.issue_opaque(json!({"sub": "erin", "exp": now() + 2}));
    short.verify_token(&soon).await.unwrap();
    let asked = idp.count(Kind::Introspect);
    short.verify_token(&soon).await.unwrap();
    assert_eq!(idp.count(Kind::Introspect), asked, "cached while valid");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // Past exp the cache entry is gone; the provider still says active, but exp decides.
    assert_eq!(short.verify_token(&soon).await, Err(TokenError::Expired));
    assert_eq!(idp.count(Kind::Introspect), asked + 1);

    // The cache is bounded.
    let small = IntrospectionVerifier::discover(idp.issuer(), RESOURCE)
        .client_credentials(CLIENT_ID, CLIENT_SECRET, ClientAuth::Basic)
        .allow_http_loopback()
        .max_cache_entries(3)
        .build()
        .unwrap();
    for i in 0..10 {
        let t = idp.issue_opaque(json!({"sub": format!("user-{i}")}));
        small.verify_token(&t).await.unwrap();
    }
    assert_eq!(small.cached(), 3);
    // A provider that is down is never cached as a refusal.
    idp.set_outage(Outage::Status500);
    let t2 = "never-issued";
    assert!(matches!(
        small.verify_token(t2).await,
        Err(TokenError::Unavailable(_))
    ));
    idp.set_outage(Outage::None);
    assert!(matches!(
        small.verify_token(t2).await,
        Err(TokenError::Invalid(_))
    ));
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
    .to_string()
}

#[tokio::test]
async fn over_streamable_http_rotation_outage_and_metadata() {
    let idp = Idp::start().await;
    idp.set_jwks_cache_control(Some("max-age=1"));
    let verifier = jwks(&idp)
        .cache_ttl_bounds(Duration::from_secs(1), Duration::from_secs(60))
        .refresh_interval(Duration::from_millis(200))
        .max_stale(Duration::from_secs(1))
        .build()
        .unwrap();
    let auth = BearerAuth::new(verifier, RESOURCE).required_scopes(["mcp:use"]);
    let srv = HttpTestServer::start(fixture().server, test_config().bearer_auth(auth)).await;

    // The metadata names the verifier's issuer, with no authorization_server() call.
    let doc: Value = plain_client()
        .get(srv.url("/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["authorization_servers"], json!([idp.issuer()]));
    assert_eq!(doc["scopes_supported"], json!(["mcp:use"]));
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));

    let mut c = srv.client();
    c.token = Some(token(&idp, "rsa-1"));
    c.initialize("2025-11-25", json!({})).await;
    let listed = c.request(2, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    // A token from the rotated key is accepted on its first request.
    idp.rotate();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let mut c2 = srv.client();
    c2.token = Some(token(&idp, "rsa-2"));
    let r = c2.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    // A token with an unknown kid: 401 invalid_token with the usual challenge.
    let mut c3 = srv.client();
    c3.token = Some(idp.sign_as("rsa-1", "nobody", &idp.claims("a", RESOURCE, "mcp:use")));
    let r = c3.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(challenge.contains("resource_metadata=\"https://mcp.example.test/.well-known/oauth-protected-resource/mcp\""), "{challenge}");

    // The provider goes down: past the cache lifetime and the stale bound, 503 with
    // Retry-After, not 401 (the token may be fine).
    idp.set_outage(Outage::Status500);
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let r = c2.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().contains_key("retry-after"));
    idp.set_outage(Outage::None);
    tokio::time::sleep(Duration::from_millis(250)).await;
    let r = c2.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn over_streamable_http_a_revoked_opaque_token_is_refused() {
    let idp = Idp::start().await;
    let verifier = IntrospectionVerifier::discover(idp.issuer(), RESOURCE)
        .client_credentials(CLIENT_ID, CLIENT_SECRET, ClientAuth::Post)
        .allow_http_loopback()
        .max_cache_ttl(Duration::from_millis(300))
        .build()
        .unwrap();
    let auth = BearerAuth::new(verifier, RESOURCE).required_scopes(["mcp:use"]);
    let srv = HttpTestServer::start(fixture().server, test_config().bearer_auth(auth)).await;
    let opaque = idp.issue_opaque(json!({"sub": "frank", "scope": "mcp:use", "aud": RESOURCE}));
    let mut c = srv.client();
    c.token = Some(opaque.clone());
    c.initialize("2025-11-25", json!({})).await;
    idp.revoke(&opaque);
    tokio::time::sleep(Duration::from_millis(350)).await;
    let mut c2 = srv.client();
    c2.token = Some(opaque);
    let r = c2.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(challenge.contains("not active"), "{challenge}");
    // Lacking the scope: 403 insufficient_scope, as with JWTs.
    let weak = idp.issue_opaque(json!({"sub": "frank", "scope": "other"}));
    let mut c3 = srv.client();
    c3.token = Some(weak);
    let r = c3.post(initialize_body()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}
