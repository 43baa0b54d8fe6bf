//! `server!`: wires tools, resources and prompts into a server, checks at compile time what
//! can be checked, and generates the binary's `main`.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Expr, Ident, LitBool, LitStr, Path, Token};

use crate::common::Errors;

const KEYS: &[&str] = &[
    "name",
    "version",
    "title",
    "description",
    "instructions",
    "tools",
    "resources",
    "prompts",
    "authorizer",
    "read_authorizer",
    "layers",
    "state",
    "tool_sets",
    "transport",
    "configure",
    "main",
];

enum Value {
    Expr(Expr),
    List(Punctuated<Path, Token![,]>),
    /// `layers: [...]`: expressions, not names.
    Exprs(Punctuated<Expr, Token![,]>),
}

struct Entry {
    key: Ident,
    value: Value,
}

struct Input(Vec<Entry>);

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut entries = Vec::new();
        while !input.is_empty() {
            let key = Ident::parse_any(input)?;
            input.parse::<Token![:]>().map_err(|e| {
                syn::Error::new(e.span(), format!("expected `:` after `{}`", key.unraw()))
            })?;
            let value = if (key == "layers" || key == "state" || key == "tool_sets")
                && input.peek(syn::token::Bracket)
            {
                let content;
                syn::bracketed!(content in input);
                Value::Exprs(content.parse_terminated(Expr::parse, Token![,])?)
            } else if input.peek(syn::token::Bracket) {
                let content;
                syn::bracketed!(content in input);
                Value::List(content.parse_terminated(Path::parse_mod_style, Token![,])?)
            } else {
                Value::Expr(input.parse()?)
            };
            entries.push(Entry { key, value });
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(Input(entries))
    }
}

#[derive(Default)]
struct Spec {
    name: Option<LitStr>,
    version: Option<Expr>,
    title: Option<Expr>,
    description: Option<Expr>,
    instructions: Option<Expr>,
    tools: Vec<Path>,
    resources: Vec<Path>,
    prompts: Vec<Path>,
    authorizer: Option<Expr>,
    read_authorizer: Option<Expr>,
    layers: Vec<Expr>,
    state: Vec<Expr>,
    tool_sets: Vec<Expr>,
    transport: Option<TokenStream>,
    configure: Option<Expr>,
    main: bool,
}

fn path_text(p: &Path) -> String {
    p.to_token_stream().to_string().replace(' ', "")
}

/// The expansion, or its errors with a stand-in `main` (unless the input says `main:
/// false`): without one, every mistake in server! would come with a second error, "`main`
/// function not found", that only distracts.
pub fn expand(input: TokenStream) -> TokenStream {
    let writes_main = !says_main_false(&input);
    match expand_checked(input) {
        Ok(tokens) => tokens,
        Err(errors) => {
            let errors = errors.into_compile_error();
            let main = writes_main.then(|| quote! { fn main() {} });
            quote! { #errors #main }
        }
    }
}

/// Whether the input holds `main: false` at its top level (read from the tokens, so it
/// works on input that does not parse).
fn says_main_false(input: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = input.clone().into_iter().collect();
    tokens.windows(3).any(|w| match w {
        [
            TokenTree::Ident(key),
            TokenTree::Punct(colon),
            TokenTree::Ident(value),
        ] => key == "main" && colon.as_char() == ':' && value == "false",
        _ => false,
    })
}

fn expand_checked(input: TokenStream) -> syn::Result<TokenStream> {
    let Input(entries) = syn::parse2(input)?;
    let mut errors = Errors::default();
    let mut spec = Spec {
        main: true,
        ..Spec::default()
    };
    let mut seen: Vec<String> = Vec::new();
    for Entry { key, value } in entries {
        let k = key.unraw().to_string();
        if seen.contains(&k) {
            errors.at(&key, format!("`{k}` is given twice"));
            continue;
        }
        seen.push(k.clone());
        let list_key = matches!(k.as_str(), "tools" | "resources" | "prompts");
        match (value, list_key) {
            (Value::Exprs(items), _) if k == "state" => spec.state = items.into_iter().collect(),
            (Value::Exprs(items), _) if k == "tool_sets" => {
                spec.tool_sets = items.into_iter().collect()
            }
            (Value::Expr(e), _) if k == "tool_sets" => errors.at(
                e,
                "`tool_sets` takes a list of values whose impl is marked #[tools]: `tool_sets: [Files::new()]`",
            ),
            (Value::Exprs(items), _) => spec.layers = items.into_iter().collect(),
            (Value::Expr(e), _) if k == "state" => errors.at(
                e,
                "`state` takes a list of values, one per type: `state: [Config::load(), Db::new()]`",
            ),
            (Value::Expr(e), _) if k == "layers" => errors.at(
                e,
                "`layers` takes a list of layers: `layers: [mcp::layers::Timing, ...]`",
            ),
            (Value::List(items), true) => {
                let items: Vec<Path> = items.into_iter().collect();
                match k.as_str() {
                    "tools" => spec.tools = items,
                    "resources" => spec.resources = items,
                    _ => spec.prompts = items,
                }
            }
            (Value::List(list), false) => errors.span(
                list.span(),
                format!("`{k}` takes a single value, not a list"),
            ),
            (Value::Expr(e), true) => errors.at(
                e,
                format!("`{k}` takes a list of function names: `{k}: [a, b]`"),
            ),
            (Value::Expr(e), false) => match k.as_str() {
                "name" => match &e {
                    Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => {
                        if s.value().trim().is_empty() {
                            errors.at(s, "the server's name cannot be empty");
                        }
                        spec.name = Some(s.clone());
                    }
                    _ => errors.at(e, "`name` takes a string literal: `name: \"files\"`"),
                },
                "version" => spec.version = Some(e),
                "title" => spec.title = Some(e),
                "description" => spec.description = Some(e),
                "instructions" => spec.instructions = Some(e),
                "authorizer" => spec.authorizer = Some(e),
                "read_authorizer" => spec.read_authorizer = Some(e),
                "configure" => spec.configure = Some(e),
                "transport" => {
                    let word = match &e {
                        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                        _ => None,
                    };
                    match word.as_deref() {
                        Some("stdio") => {
                            spec.transport = Some(quote! { ::mcp::Transport::Stdio })
                        }
                        Some("http") => spec.transport = Some(quote! { ::mcp::Transport::Http }),
                        Some("sse") => spec.transport = Some(quote! { ::mcp::Transport::Sse }),
                        _ => errors.at(
                            e,
                            "unknown transport: expected `stdio`, `http` or `sse` (the binary's --transport flag overrides it)",
                        ),
                    }
                }
                "main" => match &e {
                    Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Bool(LitBool { value, .. }),
                        ..
                    }) => spec.main = *value,
                    _ => errors.at(e, "`main` takes `true` or `false`"),
                },
                _ => errors.at(
                    &key,
                    format!(
                        "unknown server! option `{k}`; expected one of: {}",
                        KEYS.join(", ")
                    ),
                ),
            },
        }
    }
    let Some(name) = spec.name.clone() else {
        errors.span(
            Span::call_site(),
            "server! needs a name: `server! { name: \"my-server\", tools: [...] }`",
        );
        return Err(errors.finish().expect_err("an error was pushed"));
    };
    errors.finish()?;

    let mut checks = Vec::new();
    // Listed twice, or two entries claiming the same name / URI.
    pair_checks(
        &spec.tools,
        "tools",
        quote! { ToolFactory },
        quote! { NAME },
        |a, b| {
            format!(
                "tools `{a}` and `{b}` have the same name, and a client could not tell them apart: give one of them another name with #[tool(name = \"...\")]"
            )
        },
        &mut checks,
    );
    pair_checks(
        &spec.resources,
        "resources",
        quote! { ResourceFactory },
        quote! { URI },
        |a, b| {
            format!(
                "resources `{a}` and `{b}` have the same URI (or URI template): change one of them in its #[resource(\"...\")]"
            )
        },
        &mut checks,
    );
    pair_checks(
        &spec.prompts,
        "prompts",
        quote! { PromptFactory },
        quote! { NAME },
        |a, b| {
            format!(
                "prompts `{a}` and `{b}` have the same name: give one of them another name with #[prompt(name = \"...\")]"
            )
        },
        &mut checks,
    );
    if spec.authorizer.is_none() {
        for t in &spec.tools {
            let text = path_text(t);
            let fix = "add `authorizer: mcp::auth::ask_before_sensitive()` to server! to ask the user before it runs, or opt out explicitly with `authorizer: mcp::auth::allow_all()`";
            let destructive = format!(
                "tool `{text}` is destructive (#[tool(destructive)]) but server! has no `authorizer:` to guard it; {fix}"
            );
            let sensitive = format!(
                "tool `{text}` is sensitive (#[tool(sensitive)]) but server! has no `authorizer:` to guard it; {fix}"
            );
            checks.push(quote_spanned! {t.span()=>
                const _: () = {
                    if <#t as ::mcp::macros_support::ToolFactory>::DESTRUCTIVE {
                        ::core::panic!(#destructive);
                    } else if <#t as ::mcp::macros_support::ToolFactory>::SENSITIVE {
                        ::core::panic!(#sensitive);
                    }
                };
            });
        }
    }

    let version = spec
        .version
        .as_ref()
        .map(|v| v.to_token_stream())
        .unwrap_or_else(|| quote! { ::core::env!("CARGO_PKG_VERSION") });
    let mut steps = Vec::new();
    if let Some(t) = &spec.title {
        steps.push(quote! { let builder = builder.title(#t); });
    }
    if let Some(d) = &spec.description {
        steps.push(quote! { let builder = builder.description(#d); });
    }
    if let Some(i) = &spec.instructions {
        steps.push(quote! { let builder = builder.instructions(#i); });
    }
    for t in &spec.tools {
        steps.push(quote_spanned! {t.span()=>
            let builder = builder.tool(<#t as ::mcp::macros_support::ToolFactory>::def());
        });
    }
    for r in &spec.resources {
        steps.push(quote_spanned! {r.span()=>
            let builder = ::mcp::macros_support::add_resource(
                builder,
                <#r as ::mcp::macros_support::ResourceFactory>::def(),
            );
        });
    }
    for p in &spec.prompts {
        steps.push(quote_spanned! {p.span()=>
            let builder = builder.prompt(<#p as ::mcp::macros_support::PromptFactory>::def());
        });
    }
    if let Some(a) = &spec.authorizer {
        steps.push(quote_spanned! {a.span()=> let builder = builder.authorizer(#a); });
    }
    if let Some(a) = &spec.read_authorizer {
        steps.push(quote_spanned! {a.span()=> let builder = builder.read_authorizer(#a); });
    }
    let add = if spec.authorizer.is_some() {
        quote! { add_tool_set }
    } else {
        quote! { add_unguarded_tool_set }
    };
    for t in &spec.tool_sets {
        steps.push(quote_spanned! {t.span()=>
            let builder = ::mcp::macros_support::#add(builder, #t);
        });
    }
    for s in &spec.state {
        steps.push(quote_spanned! {s.span()=> let builder = builder.state(#s); });
    }
    for l in &spec.layers {
        steps.push(quote_spanned! {l.span()=> let builder = builder.layer(#l); });
    }
    if let Some(c) = &spec.configure {
        steps.push(quote_spanned! {c.span()=>
            let builder = ::mcp::macros_support::configure(builder, #c);
        });
    }
    let transport = spec
        .transport
        .clone()
        .unwrap_or_else(|| quote! { ::mcp::Transport::Stdio });
    let about = match (&spec.description, &spec.title) {
        (Some(d), _) => quote! { ::core::option::Option::Some(#d) },
        (None, Some(t)) => quote! { ::core::option::Option::Some(#t) },
        (None, None) => quote! { ::core::option::Option::None },
    };
    let main = spec.main.then(|| {
        quote! {
            /// Runs the server with the command line of `mcp::cli` (`--help` lists it).
            fn main() -> ::std::process::ExitCode {
                ::mcp::cli::main(
                    ::mcp::cli::App {
                        name: #name,
                        version: #version,
                        about: #about,
                        transport: #transport,
                    },
                    server_builder,
                )
            }
        }
    });

    Ok(quote! {
        #(#checks)*

        /// The server's builder, with every entry and policy `server!` lists: add to it
        /// (audit hooks, limits, run-time entries) before `build()`.
        #[allow(dead_code)]
        pub fn server_builder() -> ::mcp::ServerBuilder {
            let builder = ::mcp::Server::builder(#name, #version);
            #(#steps)*
            builder
        }

        /// The server `server!` describes, ready to serve or to test in memory.
        ///
        /// Everything else that could make building fail was checked at compile time; a
        /// handler taking a `State<T>` that `state: [..]` does not give makes it panic with
        /// the builder's message (give the state here, or to `server_builder()`).
        #[allow(dead_code)]
        pub fn server() -> ::mcp::Server {
            match server_builder().build() {
                ::core::result::Result::Ok(server) => server,
                ::core::result::Result::Err(e) => ::core::panic!("server! {:?}: {}", #name, e),
            }
        }

        #main
    })
}

/// For a list of entries: an error for one listed twice, and a compile-time comparison of
/// the names (or URIs) of every other pair, reported at the later entry.
fn pair_checks(
    items: &[Path],
    key: &str,
    factory: TokenStream,
    constant: TokenStream,
    message: impl Fn(&str, &str) -> String,
    out: &mut Vec<TokenStream>,
) {
    for (j, b) in items.iter().enumerate() {
        for a in &items[..j] {
            let (ta, tb) = (path_text(a), path_text(b));
            if ta == tb {
                let msg = format!("`{tb}` is listed twice in `{key}:`; remove one");
                out.push(quote_spanned! {b.span()=> ::core::compile_error!(#msg); });
                break;
            }
            let msg = message(&ta, &tb);
            out.push(quote_spanned! {b.span()=>
                const _: () = {
                    if ::mcp::macros_support::str_eq(
                        <#a as ::mcp::macros_support::#factory>::#constant,
                        <#b as ::mcp::macros_support::#factory>::#constant,
                    ) {
                        ::core::panic!(#msg);
                    }
                };
            });
        }
    }
}
