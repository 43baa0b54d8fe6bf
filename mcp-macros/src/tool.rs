//! `#[tool]`: an async function becomes a tool with a generated input schema.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{ItemFn, LitStr, ReturnType, Type};

use crate::common::{
    Errors, Kind, ParamKind, check_signature, default_name, generic_inner, named_options,
    output_span, parse_items, required_description, state_needs, take_params, unknown_option,
};

const OPTIONS: &[&str] = &[
    "name",
    "title",
    "description",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "sensitive",
    "icons",
    "scopes",
    "timeout_ms",
    "task",
    "escalate_after_ms",
    "meta",
    "allow_unknown_arguments",
    "trace_content",
];

/// The tool-name rule of the specification: 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a tool name cannot be empty".into());
    }
    if name.chars().count() > 128 {
        return Err(format!(
            "the tool name is {} characters long; at most 128 are allowed",
            name.chars().count()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "invalid tool name {name:?}: {bad:?} is not allowed; use only A-Z, a-z, 0-9, '_', '-' and '.' (1 to 128 characters)"
        ));
    }
    Ok(())
}

/// A tool made from a function or a method: the items its definition needs (the argument
/// struct, default functions) and the expression that builds its `ToolDef`.
pub struct Tool {
    pub name: String,
    pub items: TokenStream,
    pub def: TokenStream,
    pub destructive: bool,
    pub sensitive: bool,
}

/// `#[tool]` on a free `async fn`: the function, and a type of the same name implementing
/// `ToolFactory`.
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut func: ItemFn = syn::parse2(item)?;
    let tool = analyze(attr, &mut func, false)?;
    let (fn_name, vis) = (&func.sig.ident, &func.vis);
    let Tool {
        name,
        items,
        def,
        destructive,
        sensitive,
    } = tool;
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis enum #fn_name {}

        const _: () = {
            #items

            impl ::mcp::macros_support::ToolFactory for #fn_name {
                const NAME: &'static str = #name;
                const DESTRUCTIVE: bool = #destructive;
                const SENSITIVE: bool = #sensitive;

                fn def() -> ::mcp::registry::ToolDef {
                    static DEF: ::std::sync::OnceLock<::mcp::registry::ToolDef> =
                        ::std::sync::OnceLock::new();
                    ::core::clone::Clone::clone(DEF.get_or_init(|| #def))
                }
            }
        };
    })
}

/// Reads a tool's options and signature; strips the parameters' attributes from `func`.
/// `method`: `func` is a method of a `#[tools]` impl taking `&self`, and the definition
/// calls it on the `Arc<Self>` named `__this` in scope where `def` is evaluated.
pub fn analyze(attr: TokenStream, func: &mut ItemFn, method: bool) -> syn::Result<Tool> {
    let items = parse_items(attr)?;
    let mut errors = Errors::default();

    let mut name: Option<LitStr> = None;
    let mut title: Option<LitStr> = None;
    let mut description: Option<LitStr> = None;
    let (mut read_only, mut destructive, mut idempotent, mut open_world, mut sensitive) =
        (false, false, false, false, false);
    let mut allow_unknown_arguments = false;
    let mut trace_content = false;
    let mut icons = Vec::new();
    let mut scopes = Vec::new();
    let mut timeout_ms = None;
    let mut task: Option<LitStr> = None;
    let mut escalate_after_ms = None;
    let mut meta = None;
    let hint = "unexpected value: #[tool] takes options such as `name = \"...\"` or `read_only`";
    for opt in named_options(items, hint, &mut errors) {
        match opt.key().as_str() {
            "name" => name = opt.lit_str(&mut errors),
            "title" => title = opt.lit_str(&mut errors),
            "description" => description = opt.lit_str(&mut errors),
            "read_only" => read_only = opt.flag(&mut errors),
            "destructive" => destructive = opt.flag(&mut errors),
            "idempotent" => idempotent = opt.flag(&mut errors),
            "open_world" => open_world = opt.flag(&mut errors),
            "sensitive" => sensitive = opt.flag(&mut errors),
            "icons" => icons = opt.str_list(&mut errors),
            "scopes" => scopes = opt.str_list(&mut errors),
            "timeout_ms" => timeout_ms = opt.u64(&mut errors),
            "task" => task = opt.lit_str(&mut errors),
            "escalate_after_ms" => escalate_after_ms = opt.u64(&mut errors),
            "meta" => meta = opt.expr(&mut errors),
            "allow_unknown_arguments" => allow_unknown_arguments = opt.flag(&mut errors),
            "trace_content" => trace_content = opt.flag(&mut errors),
            _ => unknown_option(&opt, Kind::Tool, OPTIONS, &mut errors),
        }
    }

    let task_variant = task.as_ref().and_then(|lit| match lit.value().as_str() {
        "forbidden" => Some(quote! { Forbidden }),
        "optional" => Some(quote! { Optional }),
        "required" => Some(quote! { Required }),
        other => {
            errors.at(
                lit,
                format!(
                    "unknown task support {other:?}: use task = \"optional\" (a task when the client allows it) or task = \"required\" (only ever a task)"
                ),
            );
            None
        }
    });
    if escalate_after_ms.is_some() && task.is_none() {
        errors.at(
            &func.sig.ident,
            "escalate_after_ms needs task = \"optional\" or task = \"required\"",
        );
    }
    check_signature(&func.sig, Kind::Tool, &mut errors);
    let tool_name = match &name {
        Some(lit) => {
            if let Err(e) = check_tool_name(&lit.value()) {
                errors.at(lit, e);
            }
            lit.value()
        }
        None => {
            let n = default_name(&func.sig);
            if let Err(e) = check_tool_name(&n) {
                errors.at(
                    &func.sig.ident,
                    format!("{e}; name the tool with #[tool(name = \"...\")]"),
                );
            }
            n
        }
    };
    let description_text =
        required_description(description, &func.attrs, &func.sig, Kind::Tool, &mut errors);
    let receiver = if method {
        take_receiver(&mut func.sig, &mut errors)
    } else {
        None
    };
    let params = take_params(&mut func.sig, Kind::Tool, &mut errors);
    if let Some(r) = receiver {
        func.sig.inputs.insert(0, r);
    }

    // One struct argument marked #[args], or plain parameters collected into a hidden struct.
    let values: Vec<_> = params
        .iter()
        .filter_map(|p| match p {
            ParamKind::Value(v) => Some(v),
            ParamKind::Ctx | ParamKind::Extract(_) => None,
        })
        .collect();
    let whole = values.iter().find(|v| v.opts.whole.is_some());
    if let Some(w) = whole {
        if values.len() > 1 {
            errors.span(
                w.opts.whole.unwrap_or_else(Span::call_site),
                "`#[args]` takes the whole argument object, so it must be the only parameter besides `Ctx`",
            );
        }
        if w.opts.default.is_some() || w.opts.rename.is_some() || w.opts.description.is_some() {
            errors.at(
                &w.ident,
                "`#[arg(...)]` options do not apply to an `#[args]` struct; put serde and schemars attributes on its fields",
            );
        }
    }
    errors.finish()?;

    let fn_name = &func.sig.ident;
    let args_ty = format_ident!("__McpArgs_{}", syn::ext::IdentExt::unraw(fn_name));
    let mut defaults = Vec::new();
    let args_decl = match whole {
        Some(w) => {
            let ty = &w.ty;
            quote! {
                #[allow(non_camel_case_types)]
                type #args_ty = #ty;
            }
        }
        None => {
            let mut fields = Vec::new();
            for v in &values {
                let ident = &v.ident;
                let ty = &v.ty;
                let mut attrs = Vec::new();
                if let Some(d) = v.description() {
                    attrs.push(quote! { #[doc = #d] });
                }
                if let Some(r) = &v.opts.rename {
                    attrs.push(quote! { #[serde(rename = #r)] });
                }
                if let Some(default) = &v.opts.default {
                    let f = format_ident!("__mcp_default_{}", syn::ext::IdentExt::unraw(ident));
                    let path = LitStr::new(&f.to_string(), Span::call_site());
                    defaults.push(quote_spanned! {default.span()=>
                        fn #f() -> #ty { #default }
                    });
                    attrs.push(quote! { #[serde(default = #path)] });
                }
                fields.push(quote! { #(#attrs)* #ident: #ty });
            }
            quote! {
                #[allow(non_camel_case_types)]
                #[derive(::mcp::macros_support::serde::Deserialize, ::mcp::macros_support::schemars::JsonSchema)]
                #[serde(crate = "::mcp::macros_support::serde")]
                #[schemars(crate = "::mcp::macros_support::schemars")]
                struct #args_ty { #(#fields,)* }
            }
        }
    };
    let call_args: Vec<TokenStream> = params
        .iter()
        .map(|p| match p {
            ParamKind::Ctx => quote! { ::core::clone::Clone::clone(&__ctx) },
            ParamKind::Extract(e) => {
                let local = e.local();
                quote! { #local }
            }
            ParamKind::Value(v) if v.opts.whole.is_some() => quote! { __args },
            ParamKind::Value(v) => {
                let ident = &v.ident;
                quote! { __args.#ident }
            }
        })
        .collect();

    let output_span = output_span(func);
    let callee = if method {
        quote! { __this.#fn_name }
    } else {
        quote! { #fn_name }
    };
    let convert = quote_spanned! {output_span=>
        ::mcp::macros_support::into_tool_result(#callee(#(#call_args),*).await)
    };

    let reject = quote! { ::mcp::macros_support::rejected_tool };
    let binds: Vec<TokenStream> = params
        .iter()
        .filter_map(|p| match p {
            ParamKind::Extract(e) => Some(e.bind(&reject)),
            _ => None,
        })
        .collect();
    let mut setters = state_needs(&params);
    if let Some(t) = &title {
        setters.push(quote! { .title(#t) });
    }
    for (on, method) in [
        (read_only, "read_only"),
        (destructive, "destructive"),
        (idempotent, "idempotent"),
        (open_world, "open_world"),
        (sensitive, "sensitive"),
        (allow_unknown_arguments, "allow_unknown_arguments"),
        (trace_content, "trace_content"),
    ] {
        if on {
            let m = format_ident!("{method}");
            setters.push(quote! { .#m() });
        }
    }
    if !icons.is_empty() {
        setters.push(quote! { .icons(::mcp::macros_support::icons([#(#icons),*])) });
    }
    if !scopes.is_empty() {
        setters.push(quote! { .scopes([#(#scopes),*]) });
    }
    if let Some(ms) = timeout_ms {
        setters.push(quote! { .timeout(::std::time::Duration::from_millis(#ms)) });
    }
    if let Some(v) = &task_variant {
        setters.push(quote! { .task_support(::mcp::tasks::TaskSupport::#v) });
    }
    if let Some(ms) = escalate_after_ms {
        setters.push(quote! {
            .task_policy(::mcp::tasks::TaskPolicy::EscalateAfter(::std::time::Duration::from_millis(#ms)))
        });
    }
    if let Some(m) = &meta {
        setters.push(quote_spanned! {m.span()=> .meta(::mcp::macros_support::meta(#m)) });
    }
    if let Some(out) = json_output(&func.sig.output) {
        setters.push(quote_spanned! {out.span()=>
            .output_schema(::mcp::registry::output_schema_for::<#out>())
        });
    }
    let handler = if method {
        quote! {{
            let __this = ::std::sync::Arc::clone(&__this);
            move |__ctx: ::mcp::Ctx, __args: #args_ty| {
                let __this = ::std::sync::Arc::clone(&__this);
                async move {
                    let _ = &__args;
                    let _ = &__ctx;
                    #(#binds)*
                    #convert
                }
            }
        }}
    } else {
        quote! {
            |__ctx: ::mcp::Ctx, __args: #args_ty| async move {
                let _ = &__args;
                let _ = &__ctx;
                #(#binds)*
                #convert
            }
        }
    };
    Ok(Tool {
        name: tool_name.clone(),
        items: quote! {
            #args_decl
            #(#defaults)*
        },
        def: quote! {
            ::mcp::registry::ToolDef::from_fn(#tool_name, #description_text, #handler)
                #(#setters)*
        },
        destructive,
        sensitive: destructive || sensitive,
    })
}

/// Takes the `&self` receiver off a `#[tools]` method's signature (put back after the
/// parameters are read).
fn take_receiver(sig: &mut syn::Signature, errors: &mut Errors) -> Option<syn::FnArg> {
    let first = sig.inputs.first()?;
    let syn::FnArg::Receiver(r) = first else {
        errors.at(
            &sig.ident,
            "a #[tool] method of a #[tools] impl takes `&self` first",
        );
        return None;
    };
    if r.reference.is_none() || r.mutability.is_some() {
        errors.at(
            r,
            "a #[tool] method takes `&self`: calls run concurrently on one shared value (keep mutable state behind a Mutex or an atomic)",
        );
    }
    let inputs = std::mem::take(&mut sig.inputs);
    let mut pairs = inputs.into_pairs();
    let receiver = pairs.next().map(|p| p.into_value());
    sig.inputs = pairs.collect();
    receiver
}

/// `T` when the function returns `Json<T>` or `Structured<T>`, alone or as the `Ok` of a
/// `Result`: its output schema.
fn json_output(output: &ReturnType) -> Option<&Type> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    let structured = |ty| generic_inner(ty, "Json").or_else(|| generic_inner(ty, "Structured"));
    structured(ty).or_else(|| generic_inner(ty, "Result").and_then(structured))
}
