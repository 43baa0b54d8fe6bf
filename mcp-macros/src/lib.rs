//! Procedural macros for the `mcp` framework: `#[tool]`, `#[resource]`, `#[prompt]` and
//! `server!`.
//!
//! Use them through the `mcp` crate (`mcp::tool`, `mcp::prelude::*`), which documents them
//! with examples; the code they generate names `::mcp`.

mod common;
mod prompt;
mod resource;
mod server;
mod tool;
mod tools;

use proc_macro::TokenStream;

fn emit(result: syn::Result<proc_macro2::TokenStream>) -> TokenStream {
    result.unwrap_or_else(syn::Error::into_compile_error).into()
}

/// Turns an `async fn` into an MCP tool. Documented with examples at `mcp::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    emit(tool::expand(attr.into(), item.into()))
}

/// Registers the `#[tool]` methods of an `impl` block together. Documented with examples
/// at `mcp::tools`.
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    emit(tools::expand(attr.into(), item.into()))
}

/// Turns an `async fn` into an MCP resource or resource template. Documented with examples
/// at `mcp::resource`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    emit(resource::expand(attr.into(), item.into()))
}

/// Turns an `async fn` into an MCP prompt. Documented with examples at `mcp::prompt`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    emit(prompt::expand(attr.into(), item.into()))
}

/// Declares a server: its entries, its policies and the binary's `main`. Documented with
/// examples at `mcp::server`.
#[proc_macro]
pub fn server(input: TokenStream) -> TokenStream {
    server::expand(input.into()).into()
}
