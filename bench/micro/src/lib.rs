//! The benchmark tool set as a library (no `main`), for in-process micro-benchmarks, and a
//! server with many tools for the list benchmark.

use mcp::prelude::*;

#[path = "../../servers/ours/src/entries.rs"]
mod entries;

use entries::*;

mcp::server! {
    name: "bench-ours",
    tools: [echo, add],
    resources: [about],
    prompts: [greet],
    main: false,
}

/// The benchmark server plus `n` more tools (`tool_0` .. `tool_{n-1}`), each with a
/// two-argument schema like `add`'s.
pub fn server_with_tools(n: usize) -> Server {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// The first addend.
        a: i64,
        /// The second addend.
        b: i64,
    }
    let mut builder = server_builder().page_size(n + 10);
    for i in 0..n {
        builder = builder.tool(
            ToolDef::from_fn::<Args, _, _, _>(
                format!("tool_{i}"),
                "Adds two integers.",
                |_ctx, args: Args| async move { args.a + args.b },
            )
            .read_only(),
        );
    }
    builder.build().expect("server")
}

/// The benchmark server behind three layers (timing, a rate limit that never trips, a size
/// limit that never trips): what middleware costs per call.
pub fn server_with_layers() -> Server {
    use mcp::layers::{RateLimit, SizeLimit, Timing};
    server_builder()
        .layer(Timing::new())
        .layer(RateLimit::per_principal(u32::MAX, 1e12))
        .layer(SizeLimit::new(1 << 20))
        .build()
        .expect("server")
}

/// Telemetry as with export on, to an exporter that drops what it is given.
#[cfg(feature = "otel")]
pub mod telemetry {
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

    /// Takes spans and forgets them.
    #[derive(Debug)]
    struct Drop;

    impl SpanExporter for Drop {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            std::hint::black_box(batch);
            Ok(())
        }
    }

    /// Installs tracing and metrics pipelines (the SDK's batch span processor, a periodic
    /// metric reader) as the process's subscriber, and returns them.
    pub fn install() -> mcp::telemetry::Telemetry {
        use tracing_subscriber::layer::SubscriberExt as _;
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(Drop)
            .build();
        let metrics = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
        let meter = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics).build())
            .build();
        let telemetry = mcp::telemetry::Telemetry::new(tracer, meter);
        let subscriber = tracing_subscriber::registry().with(telemetry.install());
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        telemetry
    }
}
