//! `#[tools]`: the `#[tool]` methods of one `impl` block, registered together from one value
//! (`ServerBuilder::tools_from`, or `tool_sets: [..]` in `server!`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ImplItem, ItemFn, ItemImpl, Meta};

use crate::common::Errors;
use crate::tool;

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.at(
            &attr,
            "#[tools] takes no options; put them on each #[tool] method",
        );
    }
    let mut block: ItemImpl = syn::parse2(item)?;
    if let Some((_, path, _)) = &block.trait_ {
        errors.at(
            path,
            "#[tools] goes on an inherent `impl` block (`impl MyTools { .. }`), not on a trait impl",
        );
    }
    if !block.generics.params.is_empty() {
        errors.at(
            &block.generics,
            "#[tools] cannot be used on a generic impl: each tool's input schema is generated at compile time",
        );
    }
    let mut tools = Vec::new();
    let mut seen = 0;
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(at) = method.attrs.iter().position(|a| a.path().is_ident("tool")) else {
            continue;
        };
        let attr = method.attrs.remove(at);
        seen += 1;
        let options = match &attr.meta {
            Meta::Path(_) => TokenStream::new(),
            Meta::List(list) => list.tokens.clone(),
            Meta::NameValue(nv) => {
                errors.at(nv, "write #[tool] or #[tool(options)]");
                continue;
            }
        };
        let mut func = ItemFn {
            attrs: method.attrs.clone(),
            vis: method.vis.clone(),
            sig: method.sig.clone(),
            block: Box::new(method.block.clone()),
        };
        match tool::analyze(options, &mut func, true) {
            Ok(t) => {
                method.sig = func.sig;
                tools.push(t);
            }
            Err(e) => errors.push(e),
        }
    }
    if seen == 0 {
        errors.at(
            &block.self_ty,
            "#[tools] found no #[tool] method in this impl block",
        );
    }
    errors.finish()?;
    let self_ty = &block.self_ty;
    let sensitivity = if tools.iter().any(|t| t.sensitive) {
        quote! { ::mcp::macros_support::NeedsAuthorizer }
    } else {
        quote! { ::mcp::macros_support::Harmless }
    };
    let names: Vec<&String> = tools.iter().map(|t| &t.name).collect();
    let defs = tools.iter().map(|t| {
        let (items, def) = (&t.items, &t.def);
        quote! {{
            #items
            #def
        }}
    });
    Ok(quote! {
        #block

        impl ::mcp::macros_support::ToolSet for #self_ty {
            const NAMES: &'static [&'static str] = &[#(#names),*];
            type Sensitivity = #sensitivity;

            fn tool_defs(self: ::std::sync::Arc<Self>) -> ::std::vec::Vec<::mcp::registry::ToolDef> {
                let __this = self;
                ::std::vec![#(#defs),*]
            }
        }
    })
}
