//! The benchmark server on rmcp, written as rmcp's documentation shows: a tool router, a
//! prompt router, and the resource methods of `ServerHandler` by hand. Served on rmcp's
//! fastest transports: `stdio_pipes()` (epoll on FIFOs, rmcp's blocking handles otherwise) and
//! `StreamableHttpService` on hyper's HTTP/1 with keep-alive, JSON responses where rmcp offers
//! them.
//!
//! ```text
//! rmcp-server [--transport stdio|http] [--bind 127.0.0.1:8080]
//! ```

mod growth;

use std::net::SocketAddr;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Implementation, ListResourcesResult, PaginatedRequestParams, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt, prompt, prompt_handler, prompt_router, tool,
    tool_handler, tool_router,
};

const ABOUT_URI: &str = "bench://about";
const ABOUT_TEXT: &str = "The benchmark server: echo, add, this resource and one prompt.";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Clone)]
struct Bench {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

#[tool_router]
impl Bench {
    fn new() -> Self {
        let mut tool_router = Self::tool_router();
        growth::add_generated(&mut tool_router);
        Bench {
            tool_router,
            prompt_router: Self::prompt_router(),
        }
    }

    /// Returns its argument unchanged.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true))]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    /// Adds two integers.
    #[tool(annotations(read_only_hint = true, idempotent_hint = true))]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }
}

#[prompt_router]
impl Bench {
    /// Asks for a greeting.
    #[prompt]
    async fn greet(
        &self,
        Parameters(GreetArgs { name }): Parameters<GreetArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("Say hello to {name}."),
        )]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("bench-rmcp", env!("CARGO_PKG_VERSION")))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(ABOUT_URI, "about")
                .with_description("A short text about this server.")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != ABOUT_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::text(ABOUT_TEXT, ABOUT_URI)]).into())
    }
}

fn main() {
    let mut transport = "stdio".to_owned();
    let mut bind: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--transport" => transport = args.next().expect("--transport needs a value"),
            "--bind" => {
                bind = args
                    .next()
                    .and_then(|a| a.parse().ok())
                    .expect("--bind needs an address")
            }
            other => panic!("unknown argument {other}"),
        }
    }
    // The runtime rmcp's examples use (`#[tokio::main]`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        match transport.as_str() {
            "stdio" => serve_stdio().await,
            #[cfg(feature = "http")]
            "http" => serve_http(bind).await,
            #[cfg(not(feature = "http"))]
            "http" => panic!("built without the http feature; cannot listen on {bind}"),
            other => panic!("unknown transport {other}"),
        }
    });
}

async fn serve_stdio() {
    let service = Bench::new()
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .expect("stdio handshake");
    let _ = service.waiting().await;
}

#[cfg(feature = "http")]
async fn serve_http(bind: SocketAddr) {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };

    // Sessions for the handshake era (rmcp's default); JSON responses where rmcp allows them
    // (stateless 2026-07-28 requests).
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let service: StreamableHttpService<Bench, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Bench::new()), Default::default(), config);
    let listener = tokio::net::TcpListener::bind(bind).await.expect("bind");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
