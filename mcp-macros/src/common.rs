//! Parsing shared by the attribute macros: option lists, doc comments, signatures and
//! parameters, and error collection.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt as _;
use syn::parse::{Parse, ParseStream, Parser as _};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Ident, Lit, LitStr, Pat, PathArguments,
    Signature, Token, Type,
};

/// Collects every error so the user sees all of them in one build.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub fn at(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn span(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    pub fn finish(&mut self) -> syn::Result<()> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One entry of an attribute's option list: `flag`, `key = value`, `key(a, b)`, or a bare
/// value (a string literal such as a resource's URI).
pub enum Item {
    Positional(Expr),
    Opt(Opt),
}

pub struct Opt {
    pub name: Ident,
    pub value: OptValue,
}

pub enum OptValue {
    Flag,
    Value(Expr),
    List(Punctuated<Expr, Token![,]>),
}

impl Parse for Item {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(Lit) {
            return Ok(Item::Positional(input.parse()?));
        }
        let name = Ident::parse_any(input)?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            OptValue::Value(input.parse()?)
        } else if input.peek(syn::token::Paren) {
            let content;
            syn::parenthesized!(content in input);
            OptValue::List(content.parse_terminated(Expr::parse, Token![,])?)
        } else {
            OptValue::Flag
        };
        Ok(Item::Opt(Opt { name, value }))
    }
}

/// The `name = value` options of an attribute; a bare value is reported with `hint`.
pub fn named_options(items: Vec<Item>, hint: &str, errors: &mut Errors) -> Vec<Opt> {
    items
        .into_iter()
        .filter_map(|item| match item {
            Item::Opt(o) => Some(o),
            Item::Positional(e) => {
                errors.at(e, hint);
                None
            }
        })
        .collect()
}

/// Where to point errors about what a function returns: its return type, or its name when
/// it has none.
pub fn output_span(func: &syn::ItemFn) -> proc_macro2::Span {
    match &func.sig.output {
        syn::ReturnType::Default => func.sig.ident.span(),
        syn::ReturnType::Type(_, ty) => syn::spanned::Spanned::span(&**ty),
    }
}

pub fn parse_items(tokens: TokenStream) -> syn::Result<Vec<Item>> {
    let parser = Punctuated::<Item, Token![,]>::parse_terminated;
    Ok(parser.parse2(tokens)?.into_iter().collect())
}

impl Opt {
    pub fn key(&self) -> String {
        self.name.unraw().to_string()
    }

    /// `flag` or `flag = true|false`.
    pub fn flag(&self, errors: &mut Errors) -> bool {
        match &self.value {
            OptValue::Flag => true,
            OptValue::Value(Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            })) => b.value,
            _ => {
                errors.at(
                    &self.name,
                    format!("`{}` is a flag: write `{0}` or `{0} = false`", self.key()),
                );
                false
            }
        }
    }

    pub fn lit_str(&self, errors: &mut Errors) -> Option<LitStr> {
        match &self.value {
            OptValue::Value(Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            })) => Some(s.clone()),
            _ => {
                errors.at(
                    &self.name,
                    format!("`{}` takes a string: `{0} = \"...\"`", self.key()),
                );
                None
            }
        }
    }

    pub fn expr(&self, errors: &mut Errors) -> Option<Expr> {
        match &self.value {
            OptValue::Value(e) => Some(e.clone()),
            _ => {
                errors.at(
                    &self.name,
                    format!("`{}` takes a value: `{0} = ...`", self.key()),
                );
                None
            }
        }
    }

    pub fn u64(&self, errors: &mut Errors) -> Option<u64> {
        match &self.value {
            OptValue::Value(Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            })) => match i.base10_parse() {
                Ok(v) => Some(v),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
            _ => {
                errors.at(
                    &self.name,
                    format!("`{}` takes a whole number: `{0} = 5000`", self.key()),
                );
                None
            }
        }
    }

    /// `key("a", "b")`: string literals.
    pub fn str_list(&self, errors: &mut Errors) -> Vec<LitStr> {
        let OptValue::List(items) = &self.value else {
            errors.at(
                &self.name,
                format!(
                    "`{}` takes a list of strings: `{0}(\"a\", \"b\")`",
                    self.key()
                ),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            match item {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => out.push(s.clone()),
                other => errors.at(other, format!("`{}` takes string literals", self.key())),
            }
        }
        out
    }
}

/// The text of `///` comments (`#[doc = "..."]` attributes), with the one space after `///`
/// removed from each line, trimmed; `None` when there is none.
pub fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            for line in s.value().lines() {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Which macro is checking, for messages.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Resource,
    Prompt,
}

impl Kind {
    pub fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "#[tool]",
            Kind::Resource => "#[resource]",
            Kind::Prompt => "#[prompt]",
        }
    }

    fn why_concrete(self) -> &'static str {
        match self {
            Kind::Tool => {
                "a tool's arguments are decoded from JSON and its input schema is generated at compile time, so every parameter needs one concrete type"
            }
            Kind::Resource => {
                "a template's variables are parsed from the URI, so every parameter needs one concrete type"
            }
            Kind::Prompt => {
                "a prompt's arguments are parsed from strings, so every parameter needs one concrete type"
            }
        }
    }
}

/// Rejects what no handler can be: a non-async, generic, const or unsafe function.
pub fn check_signature(sig: &Signature, kind: Kind, errors: &mut Errors) {
    let what = kind.attr();
    let name = sig.ident.unraw();
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            format!(
                "{what} needs an `async fn`: handlers run on the async runtime. Write `async fn {name}(...)`"
            ),
        );
    }
    if let Some(c) = &sig.constness {
        errors.at(c, format!("{what} cannot be used on a `const fn`"));
    }
    if let Some(u) = &sig.unsafety {
        errors.at(
            u,
            format!("{what} cannot be used on an `unsafe fn`: a client could call it at any time"),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.at(
            abi,
            format!("{what} cannot be used on an `extern` function"),
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            format!(
                "{what} cannot be used on a generic function: {}. Replace the type parameters with concrete types",
                kind.why_concrete()
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, format!("{what} cannot be used on a variadic function"));
    }
}

/// Options of one parameter: `#[arg(...)]`, plus `#[args]` for a tool's whole-object struct.
#[derive(Default)]
pub struct ArgOpts {
    pub default: Option<Expr>,
    pub rename: Option<LitStr>,
    pub description: Option<LitStr>,
    pub complete: Option<Expr>,
    pub whole: Option<Span>,
}

pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub docs: Option<String>,
    pub opts: ArgOpts,
}

impl Param {
    /// The name clients use: `rename`, else the identifier without `r#`.
    pub fn wire_name(&self) -> String {
        match &self.opts.rename {
            Some(r) => r.value(),
            None => self.ident.unraw().to_string(),
        }
    }

    /// The description: `#[arg(description)]`, else the doc comment.
    pub fn description(&self) -> Option<String> {
        self.opts
            .description
            .as_ref()
            .map(LitStr::value)
            .or_else(|| self.docs.clone())
    }
}

pub enum ParamKind {
    Ctx,
    Value(Box<Param>),
    /// A parameter derived from the call (`State<T>`, or marked `#[extract]`), never an
    /// argument.
    Extract(Box<Extract>),
}

/// A parameter an extractor (`mcp::extract::FromCtx`) fills.
pub struct Extract {
    pub ident: syn::Ident,
    pub ty: Type,
    /// `T` of a `State<T>` parameter: the server must hold that state.
    pub state: Option<Type>,
}

impl Extract {
    /// `let ident: Ty = <extracted>;`, returning `reject(rejection)` from the handler when
    /// extraction fails.
    pub fn bind(&self, reject: &TokenStream) -> TokenStream {
        let (ident, ty) = (self.local(), &self.ty);
        quote::quote_spanned! {ty.span()=>
            let #ident: #ty = match <#ty as ::mcp::extract::FromCtx>::from_ctx(&__ctx).await {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(e) => return #reject(e),
            };
        }
    }
}

impl Extract {
    /// The local the value is bound to: not the parameter's own name, which may be the
    /// handler's (a parameter `tenant` of `fn tenant` would shadow the function).
    pub fn local(&self) -> syn::Ident {
        quote::format_ident!("__mcp_extracted_{}", self.ident.unraw())
    }
}

/// `.requires_state::<T>()` for every `State<T>` parameter.
pub fn state_needs(params: &[ParamKind]) -> Vec<TokenStream> {
    params
        .iter()
        .filter_map(|p| match p {
            ParamKind::Extract(e) => e.state.as_ref(),
            _ => None,
        })
        .map(|t| quote::quote_spanned! {t.span()=> .requires_state::<#t>() })
        .collect()
}

/// Reads and strips the parameters' attributes (doc comments and `#[arg]` are not allowed
/// on parameters of the emitted function), classifying each as the injected `Ctx` or a value.
pub fn take_params(sig: &mut Signature, kind: Kind, errors: &mut Errors) -> Vec<ParamKind> {
    let what = kind.attr();
    let mut out = Vec::new();
    for input in sig.inputs.iter_mut() {
        let typed = match input {
            FnArg::Receiver(r) => {
                errors.at(
                    &*r,
                    format!(
                        "{what} works on free `async fn`s, not methods: mark the `impl` block #[tools] to register its #[tool] methods together, or take shared state as a `State<T>` parameter (ServerBuilder::state)"
                    ),
                );
                continue;
            }
            FnArg::Typed(t) => t,
        };
        let docs = doc_text(&typed.attrs);
        let mut opts = ArgOpts::default();
        let mut extract = None;
        let mut kept = Vec::new();
        for attr in std::mem::take(&mut typed.attrs) {
            if attr.path().is_ident("doc") {
                continue;
            }
            if attr.path().is_ident("args") {
                if kind != Kind::Tool {
                    errors.at(
                        &attr,
                        format!("`#[args]` is for #[tool] parameters, not {what}"),
                    );
                } else if !matches!(attr.meta, syn::Meta::Path(_)) {
                    errors.at(&attr, "`#[args]` takes no options");
                }
                opts.whole = Some(attr.span());
                continue;
            }
            if attr.path().is_ident("arg") {
                parse_arg_attr(&attr, kind, &mut opts, errors);
                continue;
            }
            if attr.path().is_ident("extract") {
                if !matches!(attr.meta, syn::Meta::Path(_)) {
                    errors.at(&attr, "`#[extract]` takes no options");
                }
                extract = Some(attr.span());
                continue;
            }
            kept.push(attr);
        }
        typed.attrs = kept;

        let ident = match &*typed.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            other => {
                errors.at(
                    other,
                    format!(
                        "{what} parameters must be plain names, because each one is a named argument; name it (`point: Point`) and destructure inside the body"
                    ),
                );
                continue;
            }
        };
        if is_ctx(&typed.ty) {
            out.push(ParamKind::Ctx);
            continue;
        }
        let state = generic_inner(&typed.ty, "State").cloned();
        if extract.is_some() || state.is_some() {
            if opts.whole.is_some() {
                errors.at(
                    &typed.ty,
                    "a parameter is either `#[args]` or extracted, not both",
                );
            }
            out.push(ParamKind::Extract(Box::new(Extract {
                ident,
                ty: (*typed.ty).clone(),
                state,
            })));
            continue;
        }
        if let Some(bad) = find_impl_trait(&typed.ty) {
            errors.at(
                bad,
                format!(
                    "`impl Trait` parameters are not supported in {what}: {}. Use a concrete type such as `String`, `i64` or your own struct",
                    kind.why_concrete()
                ),
            );
            continue;
        }
        if let Type::Reference(r) = &*typed.ty {
            let hint = if is_ctx(&r.elem) {
                "take `Ctx` by value (it is cheap to clone)".to_owned()
            } else {
                "take an owned type instead (`String` rather than `&str`)".to_owned()
            };
            errors.at(
                &typed.ty,
                format!(
                    "reference parameters are not supported in {what}: the value is decoded fresh for each call, so there is nothing to borrow from; {hint}"
                ),
            );
            continue;
        }
        out.push(ParamKind::Value(Box::new(Param {
            ident,
            ty: (*typed.ty).clone(),
            docs,
            opts,
        })));
    }
    out
}

fn parse_arg_attr(attr: &Attribute, kind: Kind, opts: &mut ArgOpts, errors: &mut Errors) {
    let items = match attr.meta.require_list() {
        Ok(list) => match parse_items(list.tokens.clone()) {
            Ok(items) => items,
            Err(e) => {
                errors.push(e);
                return;
            }
        },
        Err(_) => {
            errors.at(attr, "write `#[arg(option = value, ...)]`");
            return;
        }
    };
    let allowed: &[&str] = match kind {
        Kind::Tool => &["default", "rename", "description"],
        Kind::Resource => &["complete"],
        Kind::Prompt => &["rename", "description", "complete"],
    };
    for item in items {
        let opt = match item {
            Item::Opt(o) => o,
            Item::Positional(e) => {
                errors.at(e, "expected `option = value`");
                continue;
            }
        };
        let key = opt.key();
        if !allowed.contains(&key.as_str()) {
            errors.at(
                &opt.name,
                format!(
                    "unknown option `{key}` for a {} parameter; expected one of: {}",
                    kind.attr(),
                    allowed.join(", ")
                ),
            );
            continue;
        }
        match key.as_str() {
            "default" => opts.default = opt.expr(errors),
            "rename" => opts.rename = opt.lit_str(errors),
            "description" => opts.description = opt.lit_str(errors),
            "complete" => opts.complete = opt.expr(errors),
            _ => unreachable!("checked against the allowed list"),
        }
    }
}

/// `Ctx`, `mcp::Ctx`, `mcp::context::Ctx`: any path ending in `Ctx` without generics.
pub fn is_ctx(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Ctx" && s.arguments.is_none()),
        Type::Group(g) => is_ctx(&g.elem),
        _ => false,
    }
}

fn find_impl_trait(ty: &Type) -> Option<&Type> {
    match ty {
        Type::ImplTrait(_) => Some(ty),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                GenericArgument::Type(t) => find_impl_trait(t),
                _ => None,
            }),
            _ => None,
        }),
        Type::Tuple(t) => t.elems.iter().find_map(find_impl_trait),
        Type::Array(a) => find_impl_trait(&a.elem),
        Type::Slice(s) => find_impl_trait(&s.elem),
        Type::Paren(p) => find_impl_trait(&p.elem),
        Type::Group(g) => find_impl_trait(&g.elem),
        _ => None,
    }
}

/// `Some(T)` for a type written `Name<T>` whose last path segment is `name`.
pub fn generic_inner<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let Type::Path(p) = ty else {
        return match ty {
            Type::Group(g) => generic_inner(&g.elem, name),
            Type::Paren(p) => generic_inner(&p.elem, name),
            _ => None,
        };
    };
    let last = p.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    match &last.arguments {
        PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// The fn's name as clients see it by default (without `r#`).
pub fn default_name(sig: &Signature) -> String {
    sig.ident.unraw().to_string()
}

/// The description: the `description` option, else the doc comment; an error pointing at
/// the function's name when there is neither.
pub fn required_description(
    option: Option<LitStr>,
    attrs: &[Attribute],
    sig: &Signature,
    kind: Kind,
    errors: &mut Errors,
) -> String {
    if let Some(d) = option {
        if d.value().trim().is_empty() {
            errors.at(&d, "the description is empty");
        }
        return d.value();
    }
    match doc_text(attrs) {
        Some(d) => d,
        None => {
            let noun = match kind {
                Kind::Tool => "tool",
                Kind::Resource => "resource",
                Kind::Prompt => "prompt",
            };
            errors.at(
                &sig.ident,
                format!(
                    "{noun} `{}` has no description, and the model needs one to know when to use it: add a doc comment (`/// What it does.`) above {} or write `{}(description = \"...\")]`",
                    sig.ident.unraw(),
                    kind.attr(),
                    kind.attr().trim_end_matches(']')
                ),
            );
            String::new()
        }
    }
}

/// The `where` of an unknown option.
pub fn unknown_option(opt: &Opt, kind: Kind, known: &[&str], errors: &mut Errors) {
    errors.at(
        &opt.name,
        format!(
            "unknown {} option `{}`; expected one of: {}",
            kind.attr(),
            opt.key(),
            known.join(", ")
        ),
    );
}
