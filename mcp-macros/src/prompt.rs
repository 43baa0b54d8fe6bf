//! `#[prompt]`: an async function becomes a prompt whose arguments are its parameters.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{ItemFn, LitStr};

use crate::common::{
    Errors, Kind, ParamKind, check_signature, default_name, generic_inner, named_options,
    output_span, parse_items, required_description, take_params, unknown_option,
};

const OPTIONS: &[&str] = &["name", "title", "description", "icons"];

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let items = parse_items(attr)?;
    let mut func: ItemFn = syn::parse2(item)?;
    let mut errors = Errors::default();

    let (mut name, mut title, mut description): (Option<LitStr>, _, _) = (None, None, None);
    let mut icons = Vec::new();
    let hint = "unexpected value: #[prompt] takes options such as `name = \"...\"`";
    for opt in named_options(items, hint, &mut errors) {
        match opt.key().as_str() {
            "name" => name = opt.lit_str(&mut errors),
            "title" => title = opt.lit_str(&mut errors),
            "description" => description = opt.lit_str(&mut errors),
            "icons" => icons = opt.str_list(&mut errors),
            _ => unknown_option(&opt, Kind::Prompt, OPTIONS, &mut errors),
        }
    }
    check_signature(&func.sig, Kind::Prompt, &mut errors);
    let prompt_name = match &name {
        Some(n) => {
            if n.value().trim().is_empty() {
                errors.at(n, "a prompt name cannot be empty");
            }
            n.value()
        }
        None => default_name(&func.sig),
    };
    let description_text = required_description(
        description,
        &func.attrs,
        &func.sig,
        Kind::Prompt,
        &mut errors,
    );
    let params = take_params(&mut func.sig, Kind::Prompt, &mut errors);
    errors.finish()?;

    let fn_name = &func.sig.ident;
    let vis = &func.vis;
    let mut binds = Vec::new();
    let mut call_args = Vec::new();
    let mut arguments = Vec::new();
    for p in &params {
        match p {
            ParamKind::Ctx => call_args.push(quote! { ::core::clone::Clone::clone(&__ctx) }),
            ParamKind::Extract(e) => {
                binds.push(e.bind(&quote! { ::mcp::macros_support::rejected_prompt }));
                let local = e.local();
                call_args.push(quote! { #local });
            }
            ParamKind::Value(v) => {
                let ident = &v.ident;
                let ty = &v.ty;
                let wire = v.wire_name();
                let (reader, inner, required) = match generic_inner(ty, "Option") {
                    Some(inner) => (quote! { prompt_arg_opt }, inner, false),
                    None => (quote! { prompt_arg }, ty, true),
                };
                binds.push(quote_spanned! {inner.span()=>
                    let #ident: #ty = match ::mcp::macros_support::#reader::<#inner>(&__args, #wire) {
                        ::core::result::Result::Ok(v) => v,
                        ::core::result::Result::Err(e) => return ::core::result::Result::Err(e),
                    };
                });
                call_args.push(quote! { #ident });
                let desc = v.description().unwrap_or_default();
                arguments.push(quote! { .argument(#wire, #desc, #required) });
                if let Some(c) = &v.opts.complete {
                    arguments.push(quote_spanned! {c.span()=>
                        .complete(#wire, ::mcp::macros_support::completer(#c))
                    });
                }
            }
        }
    }
    let output_span = output_span(&func);
    let convert = quote_spanned! {output_span=>
        ::mcp::macros_support::into_prompt(#fn_name(#(#call_args),*).await)
    };
    let mut setters = crate::common::state_needs(&params);
    if let Some(t) = &title {
        setters.push(quote! { .title(#t) });
    }
    if !icons.is_empty() {
        setters.push(quote! { .icons(::mcp::macros_support::icons([#(#icons),*])) });
    }

    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis enum #fn_name {}

        const _: () = {
            impl ::mcp::macros_support::PromptFactory for #fn_name {
                const NAME: &'static str = #prompt_name;

                fn def() -> ::mcp::registry::PromptDef {
                    static DEF: ::std::sync::OnceLock<::mcp::registry::PromptDef> =
                        ::std::sync::OnceLock::new();
                    ::core::clone::Clone::clone(DEF.get_or_init(|| {
                        let handler = |__ctx: ::mcp::Ctx, __args: ::mcp::registry::PromptArgs| async move {
                            let _ = &__ctx;
                            let _ = &__args;
                            #(#binds)*
                            ::core::result::Result::Ok::<_, ::mcp::registry::PromptError>(#convert)
                        };
                        ::mcp::registry::PromptDef::new(#prompt_name, #description_text, handler)
                            #(#arguments)*
                            #(#setters)*
                    }))
                }
            }
        };
    })
}
