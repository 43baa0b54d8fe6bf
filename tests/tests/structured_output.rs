//! A tool that returns its own text beside `structuredContent` (`Structured<T>`) declares
//! an `outputSchema` generated from `T`, and what it returns on the wire fits that schema,
//! in both eras.

use mcp::prelude::*;
use mcp::testing::TestClient;
use mcp_tests::{validate_against, validate_server_message};
use serde_json::{Value, json};

/// Tomorrow's weather.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Forecast {
    /// Degrees Celsius.
    celsius: f64,
    /// Whether it rains.
    rain: bool,
}

/// Tomorrow's weather in a city, in words and as data.
#[tool(read_only)]
async fn forecast(city: String) -> Result<Structured<Forecast>, ToolError> {
    if city.is_empty() {
        return Err(ToolError::new("name a city"));
    }
    let f = Forecast {
        celsius: 21.5,
        rain: false,
    };
    Ok(Structured::new(format!("{city}: {} °C, dry", f.celsius), f))
}

mcp::server! {
    name: "structured",
    tools: [forecast],
    configure: |b| b.tool(
        ToolDef::from_fn("rain", "Whether it rains.", |_ctx, _a: NoArgs| async {
            Structured::with_content(
                vec![ContentBlock::text("Bring an umbrella."), ContentBlock::text("Really.")],
                Forecast { celsius: 12.0, rain: true },
            )
        })
        .output_type::<Forecast>(),
    ),
    main: false,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

async fn call(c: &mut TestClient, version: &str, name: &str, args: Value) -> Value {
    let message = c
        .request_message("tools/call", json!({"name": name, "arguments": args}))
        .await
        .unwrap();
    validate_server_message(version, &message, Some("tools/call"))
        .unwrap_or_else(|e| panic!("{e}"));
    message["result"].clone()
}

async fn output_schema(c: &mut TestClient, name: &str) -> Value {
    let tools = c.list_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == name).expect("listed");
    tool.output_schema
        .as_ref()
        .expect("an outputSchema")
        .to_value()
}

#[tokio::test]
async fn own_text_beside_structured_content_fits_the_declared_schema_in_both_eras() {
    let s = server();
    for version in ["2025-11-25", "2026-07-28"] {
        let mut c = TestClient::connect(&s);
        if version == "2026-07-28" {
            c.use_stateless(json!({}));
        } else {
            c.initialize(json!({})).await.unwrap();
        }
        let schema = output_schema(&mut c, "forecast").await;
        assert_eq!(schema["properties"]["rain"]["type"], "boolean");
        assert_eq!(
            schema["properties"]["celsius"]["description"],
            "Degrees Celsius."
        );

        let result = call(&mut c, version, "forecast", json!({"city": "Lyon"})).await;
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": "Lyon: 21.5 °C, dry"}])
        );
        assert_eq!(
            result["structuredContent"],
            json!({"celsius": 21.5, "rain": false})
        );
        validate_against(&schema, &result["structuredContent"]).unwrap_or_else(|e| panic!("{e}"));

        let error = call(&mut c, version, "forecast", json!({"city": ""})).await;
        assert_eq!(error["isError"], true);
        assert!(error.get("structuredContent").is_none());

        let schema = output_schema(&mut c, "rain").await;
        let result = call(&mut c, version, "rain", json!({})).await;
        assert_eq!(result["content"][1]["text"], "Really.");
        validate_against(&schema, &result["structuredContent"]).unwrap_or_else(|e| panic!("{e}"));
    }
}
