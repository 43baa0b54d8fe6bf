//! `#[resource("uri")]`: an async function becomes a fixed resource, or, when the URI has
//! `{variables}`, a resource template whose variables bind to its parameters by name.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, ItemFn, Lit, LitStr};

use crate::common::{
    Errors, Item, Kind, ParamKind, check_signature, default_name, output_span, parse_items,
    required_description, take_params, unknown_option,
};

const OPTIONS: &[&str] = &[
    "name",
    "title",
    "description",
    "mime",
    "size",
    "icons",
    "list",
];

/// One `{var}` or `{+var}` of a template.
pub struct Variable {
    pub name: String,
    pub reserved: bool,
}

/// Parses a URI template with the same rules as `mcp::registry::UriTemplate`: RFC 6570
/// level 1 (`{var}`) plus reserved expansion (`{+var}`); no other operators, no adjacent
/// variables, no repeated names.
pub fn parse_template(template: &str) -> Result<Vec<Variable>, String> {
    let mut vars: Vec<Variable> = Vec::new();
    let mut rest = template;
    let mut last_was_var = false;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => break,
            Some(i) if rest.as_bytes()[i] == b'}' => return Err("unmatched '}'".into()),
            Some(i) => {
                if i > 0 {
                    last_was_var = false;
                }
                let close = rest[i..]
                    .find('}')
                    .map(|j| i + j)
                    .ok_or_else(|| "unclosed '{'".to_owned())?;
                let mut expr = &rest[i + 1..close];
                let reserved = expr.starts_with('+');
                if reserved {
                    expr = &expr[1..];
                }
                if expr.is_empty() {
                    return Err("empty variable name".into());
                }
                if let Some(op) = expr.chars().next().filter(|c| "#./;?&=,!@|".contains(*c)) {
                    return Err(format!(
                        "operator '{op}' is not supported (only {{var}} and {{+var}})"
                    ));
                }
                if !expr
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                {
                    return Err(format!(
                        "variable {expr:?} must use only letters, digits, '_' and '.'"
                    ));
                }
                if last_was_var {
                    return Err(
                        "two variables in a row cannot be told apart; put a literal between them"
                            .into(),
                    );
                }
                if vars.iter().any(|v| v.name == expr) {
                    return Err(format!("variable {expr:?} appears twice"));
                }
                vars.push(Variable {
                    name: expr.to_owned(),
                    reserved,
                });
                last_was_var = true;
                rest = &rest[close + 1..];
            }
        }
    }
    Ok(vars)
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let items = parse_items(attr)?;
    let mut func: ItemFn = syn::parse2(item)?;
    let mut errors = Errors::default();

    let mut uri: Option<LitStr> = None;
    let (mut name, mut title, mut description, mut mime) = (None, None, None, None);
    let mut size = None;
    let mut icons = Vec::new();
    let mut list: Option<Expr> = None;
    for item in items {
        match item {
            Item::Positional(Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            })) if uri.is_none() => uri = Some(s),
            Item::Positional(e) => errors.at(
                e,
                "expected the URI first, as a string: #[resource(\"file:///readme\")] or #[resource(\"greeting://{name}\")]",
            ),
            Item::Opt(opt) => match opt.key().as_str() {
                "name" => name = opt.lit_str(&mut errors),
                "title" => title = opt.lit_str(&mut errors),
                "description" => description = opt.lit_str(&mut errors),
                "mime" | "mime_type" => mime = opt.lit_str(&mut errors),
                "size" => size = opt.u64(&mut errors),
                "icons" => icons = opt.str_list(&mut errors),
                "list" => list = opt.expr(&mut errors),
                _ => unknown_option(&opt, Kind::Resource, OPTIONS, &mut errors),
            },
        }
    }
    check_signature(&func.sig, Kind::Resource, &mut errors);
    let Some(uri) = uri else {
        errors.span(
            proc_macro2::Span::call_site(),
            "#[resource] needs its URI first: #[resource(\"file:///readme\")] or, for a template, #[resource(\"greeting://{name}\")]",
        );
        return Err(errors.finish().expect_err("an error was pushed"));
    };
    let uri_text = uri.value();
    if !uri_text.contains(':') {
        errors.at(
            &uri,
            format!("the URI {uri_text:?} needs a scheme, such as file:// or app://"),
        );
    }
    let vars = match parse_template(&uri_text) {
        Ok(v) => v,
        Err(reason) => {
            errors.at(&uri, format!("invalid URI template {uri_text:?}: {reason}"));
            return Err(errors.finish().expect_err("an error was pushed"));
        }
    };
    let is_template = uri_text.contains('{');
    let resource_name = name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| default_name(&func.sig));
    let description_text = required_description(
        description,
        &func.attrs,
        &func.sig,
        Kind::Resource,
        &mut errors,
    );
    let params = take_params(&mut func.sig, Kind::Resource, &mut errors);

    // Every variable binds a parameter of the same name, and every value parameter is a
    // variable.
    for p in &params {
        let ParamKind::Value(v) = p else { continue };
        let pname = v.ident.unraw().to_string();
        if !is_template {
            errors.at(
                &v.ident,
                format!(
                    "parameter `{pname}` has nothing to bind to: the URI {uri_text:?} is fixed (it has no {{variables}}). A fixed resource takes no parameters except `Ctx`; for a template, write the variable into the URI, e.g. \"{}{{{pname}}}\"",
                    uri_text.trim_end_matches('/').to_owned() + "/"
                ),
            );
        } else if !vars.iter().any(|var| var.name == pname) {
            errors.at(
                &v.ident,
                format!(
                    "parameter `{pname}` is not a variable of the URI template {uri_text:?}: add `{{{pname}}}` to the template, or remove the parameter (only `Ctx` may be added freely)"
                ),
            );
        }
        if v.opts.complete.is_some() && !is_template {
            errors.at(&v.ident, "`complete` applies to template variables only");
        }
    }
    for var in &vars {
        let bound = params
            .iter()
            .any(|p| matches!(p, ParamKind::Value(v) if v.ident.unraw() == var.name));
        if !bound {
            let plus = if var.reserved { "+" } else { "" };
            errors.at(
                &uri,
                format!(
                    "URI template variable `{{{plus}{}}}` has no parameter: add `{}: String` (or any `FromStr` type) to `{}`'s parameters; each variable binds the parameter of the same name",
                    var.name,
                    var.name,
                    func.sig.ident.unraw()
                ),
            );
        }
    }
    if list.is_some() && !is_template {
        errors.at(
            &uri,
            "`list` applies to templates: a fixed resource is listed already",
        );
    }
    errors.finish()?;

    let fn_name = &func.sig.ident;
    let vis = &func.vis;
    let mut binds = Vec::new();
    let mut call_args = Vec::new();
    let mut completers = Vec::new();
    for p in &params {
        match p {
            ParamKind::Ctx => call_args.push(quote! { ::core::clone::Clone::clone(&__ctx) }),
            ParamKind::Extract(e) => {
                binds.push(e.bind(&quote! { ::mcp::macros_support::rejected_resource }));
                let local = e.local();
                call_args.push(quote! { #local });
            }
            ParamKind::Value(v) => {
                let ident = &v.ident;
                let ty = &v.ty;
                let var = ident.unraw().to_string();
                binds.push(quote_spanned! {ty.span()=>
                    let #ident: #ty = match ::mcp::macros_support::template_var::<#ty>(&__request.vars, #var) {
                        ::core::result::Result::Ok(v) => v,
                        ::core::result::Result::Err(e) => return ::core::result::Result::Err(e),
                    };
                });
                call_args.push(quote! { #ident });
                if let Some(c) = &v.opts.complete {
                    completers.push(quote_spanned! {c.span()=>
                        .complete(#var, ::mcp::macros_support::completer(#c))
                    });
                }
            }
        }
    }
    let output_span = output_span(&func);
    let convert = quote_spanned! {output_span=>
        ::mcp::macros_support::into_resource(#fn_name(#(#call_args),*).await)
    };
    let mut setters = vec![quote! { .description(#description_text) }];
    setters.extend(crate::common::state_needs(&params));
    if let Some(t) = &title {
        setters.push(quote! { .title(#t) });
    }
    if let Some(m) = &mime {
        setters.push(quote! { .mime_type(#m) });
    }
    if let Some(s) = size {
        if is_template {
            errors.at(&uri, "`size` applies to fixed resources");
        } else {
            setters.push(quote! { .size(#s) });
        }
    }
    if !icons.is_empty() {
        setters.push(quote! { .icons(::mcp::macros_support::icons([#(#icons),*])) });
    }
    if let Some(l) = &list {
        setters.push(quote_spanned! {l.span()=> .list_with(::mcp::macros_support::lister(#l)) });
    }
    errors.finish()?;

    let handler = quote! {
        |__ctx: ::mcp::Ctx, __request: ::mcp::registry::ResourceRequest| async move {
            let _ = &__ctx;
            let _ = &__request;
            #(#binds)*
            ::core::result::Result::Ok::<_, ::mcp::registry::ResourceError>(#convert)
        }
    };
    let build = if is_template {
        quote! {
            ::mcp::macros_support::ResourceEntry::Template(
                ::mcp::registry::ResourceTemplateDef::new(#uri, #resource_name, #handler)
                    .expect("the URI template was checked by #[resource] at compile time")
                    #(#setters)*
                    #(#completers)*
            )
        }
    } else {
        quote! {
            ::mcp::macros_support::ResourceEntry::Fixed(
                ::mcp::registry::ResourceDef::new(#uri, #resource_name, #handler)
                    #(#setters)*
            )
        }
    };

    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis enum #fn_name {}

        const _: () = {
            impl ::mcp::macros_support::ResourceFactory for #fn_name {
                const URI: &'static str = #uri;
                const NAME: &'static str = #resource_name;

                fn def() -> ::mcp::macros_support::ResourceEntry {
                    static DEF: ::std::sync::OnceLock<::mcp::macros_support::ResourceEntry> =
                        ::std::sync::OnceLock::new();
                    ::core::clone::Clone::clone(DEF.get_or_init(|| #build))
                }
            }
        };
    })
}
