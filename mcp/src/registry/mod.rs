//! The registry: tools, resources, resource templates and prompts, registered at start-up
//! or at run time.
//!
//! Reads never take a lock: every request sees an immutable [`Snapshot`] (swapped atomically
//! on change), and each entry's listing JSON is serialized once, when it is registered.
//! Lists come out in a deterministic order (by name, URI or template) and page with opaque
//! cursors.

mod arguments;
mod completion;
mod needs;
mod output;
mod prompt;
mod resource;
mod template;
mod tool;
mod tool_set;
mod unknown;

use foldhash::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use arc_swap::ArcSwap;
use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::value::RawValue;

pub use crate::schema::{input_schema_for, output_schema_for};
pub(crate) use arguments::{ArgsSchema, Decoded, json_text};
pub use arguments::{ArgumentError, ToolArgs};
pub use completion::{Completer, CompletionRequest, complete_from, prefix_matches};
pub use output::{
    IntoPromptResult, IntoResourceContents, IntoToolFailure, IntoToolResult, Json, PromptError,
    ProtocolError, ResourceError, Structured, ToolError,
};
pub use prompt::{PromptArgs, PromptDef, PromptHandler};
pub use resource::{
    ResourceDef, ResourceHandler, ResourceLister, ResourceRequest, ResourceTemplateDef,
};
pub use template::{TemplateError, TemplateVars, UriTemplate, percent_decode};
pub use tool::{ToolDef, ToolDefError, ToolHandler, ToolProblem, validate_tool_name};
pub use tool_set::{Harmless, NeedsAuthorizer, ToolSet};

pub(crate) use tool::Listed;

/// A boxed, sendable future: what handlers return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

pub use crate::protocol::methods::ListKind;

/// Why a registration was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// The tool definition is invalid.
    InvalidTool(ToolDefError),
    /// Something with this name (or URI) is already registered.
    Duplicate {
        /// "tool", "resource", "resource template" or "prompt".
        kind: &'static str,
        /// The clashing name or URI.
        name: String,
    },
    /// A resource or prompt definition is invalid.
    Invalid {
        /// What kind of entry.
        kind: &'static str,
        /// Its name or URI.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::InvalidTool(e) => write!(f, "invalid {e}"),
            RegistryError::Duplicate { kind, name } => write!(
                f,
                "a {kind} named {name:?} is already registered; names must be unique (remove the old one first, or use replace_{})",
                kind.replace(' ', "_")
            ),
            RegistryError::Invalid { kind, name, reason } => {
                write!(f, "invalid {kind} {name:?}: {reason}")
            }
        }
    }
}

impl std::error::Error for RegistryError {}

type ToolEntry = Arc<Listed<ToolDef>>;

/// What deciding whether a caller may see a tool reads, kept densely beside the snapshot's
/// ordered entries: a listing behind an authorizer then reads one small record per tool
/// instead of each tool's definition (a cache miss per tool at thousands of tools).
#[derive(Clone, Debug)]
pub(crate) struct ToolFacts {
    /// The tool's name.
    pub(crate) name: Arc<str>,
    /// What its entry adds to a page ([`PageLimit::cost`]).
    pub(crate) cost: usize,
    /// [`ToolDef::is_sensitive`].
    pub(crate) sensitive: bool,
    /// Whether it requires scopes.
    pub(crate) scoped: bool,
}

impl ToolFacts {
    fn of(name: &Arc<str>, entry: &Listed<ToolDef>) -> Self {
        ToolFacts {
            name: Arc::clone(name),
            cost: PageLimit::cost(entry),
            sensitive: entry.def.is_sensitive(),
            scoped: !entry.def.required_scopes().is_empty(),
        }
    }
}
type ResourceEntry = Arc<Listed<ResourceDef>>;
type TemplateEntry = Arc<Listed<ResourceTemplateDef>>;
type PromptEntry = Arc<Listed<PromptDef>>;

/// An immutable view of the registry, as one request sees it.
#[derive(Clone, Default)]
pub struct Snapshot {
    tools: HashMap<Arc<str>, ToolEntry>,
    tool_order: Vec<ToolEntry>,
    /// What deciding a tool's visibility reads, in `tool_order`'s order.
    tool_facts: Vec<ToolFacts>,
    resources: HashMap<Arc<str>, ResourceEntry>,
    resource_order: Vec<ResourceEntry>,
    templates: Vec<TemplateEntry>,
    template_match_order: Vec<TemplateEntry>,
    prompts: HashMap<Arc<str>, PromptEntry>,
    prompt_order: Vec<PromptEntry>,
}

impl Snapshot {
    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.get(name).map(|e| &e.def)
    }

    /// Every tool, ordered by name.
    pub fn tools(&self) -> impl Iterator<Item = &ToolDef> {
        self.tool_order.iter().map(|e| &e.def)
    }

    /// A fixed resource by URI.
    pub fn resource(&self, uri: &str) -> Option<&ResourceDef> {
        self.resources.get(uri).map(|e| &e.def)
    }

    /// Every fixed resource, ordered by URI.
    pub fn resources(&self) -> impl Iterator<Item = &ResourceDef> {
        self.resource_order.iter().map(|e| &e.def)
    }

    /// Every template, ordered by template text.
    pub fn templates(&self) -> impl Iterator<Item = &ResourceTemplateDef> {
        self.templates.iter().map(|e| &e.def)
    }

    /// A template by its exact text.
    pub fn template(&self, uri_template: &str) -> Option<&ResourceTemplateDef> {
        self.templates
            .iter()
            .map(|e| &e.def)
            .find(|t| t.uri_template() == uri_template)
    }

    /// The template a concrete URI belongs to (the most specific match) and its variables.
    pub fn match_template(&self, uri: &str) -> Option<(&ResourceTemplateDef, TemplateVars)> {
        self.template_match_order
            .iter()
            .find_map(|e| e.def.parsed.matches(uri).map(|vars| (&e.def, vars)))
    }

    /// A prompt by name.
    pub fn prompt(&self, name: &str) -> Option<&PromptDef> {
        self.prompts.get(name).map(|e| &e.def)
    }

    /// Every prompt, ordered by name.
    pub fn prompts(&self) -> impl Iterator<Item = &PromptDef> {
        self.prompt_order.iter().map(|e| &e.def)
    }

    pub(crate) fn tool_entries(&self) -> &[ToolEntry] {
        &self.tool_order
    }

    /// The facts of [`Snapshot::tool_entries`], in the same order.
    pub(crate) fn tool_facts(&self) -> &[ToolFacts] {
        &self.tool_facts
    }

    /// A tool and its facts, by name.
    pub(crate) fn tool_with_facts(&self, name: &str) -> Option<(&ToolDef, &ToolFacts)> {
        let at = self
            .tool_facts
            .binary_search_by(|f| (*f.name).cmp(name))
            .ok()?;
        Some((&self.tool_order[at].def, &self.tool_facts[at]))
    }

    pub(crate) fn resource_entries(&self) -> &[ResourceEntry] {
        &self.resource_order
    }

    pub(crate) fn template_entries(&self) -> &[TemplateEntry] {
        &self.templates
    }

    pub(crate) fn prompt_entries(&self) -> &[PromptEntry] {
        &self.prompt_order
    }

    fn reorder(&mut self) {
        let mut tools: Vec<(&Arc<str>, &ToolEntry)> = self.tools.iter().collect();
        tools.sort_unstable_by(|a, b| a.0.cmp(b.0));
        self.tool_facts = tools
            .iter()
            .map(|(name, e)| ToolFacts::of(name, e))
            .collect();
        self.tool_order = tools.into_iter().map(|(_, e)| Arc::clone(e)).collect();
        self.resource_order = sorted(self.resources.values(), |e| e.def.uri().to_owned());
        self.templates
            .sort_by(|a, b| a.def.uri_template().cmp(b.def.uri_template()));
        self.template_match_order = self.templates.clone();
        // Most literal characters first: `file:///docs/{name}` wins over `file:///{+path}`.
        self.template_match_order
            .sort_by_key(|e| std::cmp::Reverse(e.def.parsed.literal_len()));
        self.prompt_order = sorted(self.prompts.values(), |e| e.def.name().to_owned());
    }
}

fn sorted<'a, T: 'a>(
    entries: impl Iterator<Item = &'a Arc<T>>,
    key: impl Fn(&T) -> String,
) -> Vec<Arc<T>> {
    let mut v: Vec<Arc<T>> = entries.cloned().collect();
    v.sort_by_cached_key(|e| key(e));
    v
}

type Notifier = Arc<dyn Fn(ListKind) + Send + Sync>;

/// The registry of a server. Cheap to read from any number of tasks at once.
pub struct Registry {
    current: ArcSwap<Snapshot>,
    write: Mutex<()>,
    notifier: Mutex<Option<Notifier>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.snapshot();
        f.debug_struct("Registry")
            .field("tools", &s.tools.len())
            .field("resources", &s.resources.len())
            .field("templates", &s.templates.len())
            .field("prompts", &s.prompts.len())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry {
            current: ArcSwap::from_pointee(Snapshot::default()),
            write: Mutex::new(()),
            notifier: Mutex::new(None),
        }
    }

    /// The current snapshot. Holding it never blocks writers.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    pub(crate) fn set_notifier(&self, notifier: Notifier) {
        *self.notifier.lock() = Some(notifier);
    }

    fn update<R>(
        &self,
        kinds: &[ListKind],
        f: impl FnOnce(&mut Snapshot) -> Result<R, RegistryError>,
    ) -> Result<R, RegistryError> {
        let result = {
            let _guard = self.write.lock();
            let mut next = Snapshot::clone(&self.current.load());
            let r = f(&mut next)?;
            next.reorder();
            self.current.store(Arc::new(next));
            r
        };
        let notifier = self.notifier.lock().clone();
        if let Some(notify) = notifier {
            for kind in kinds {
                notify(*kind);
            }
        }
        Ok(result)
    }

    /// Registers a tool. Refuses an invalid definition or a duplicate name.
    pub fn register_tool(&self, def: ToolDef) -> Result<(), RegistryError> {
        self.register_all(vec![def], vec![], vec![], vec![])
    }

    /// Registers a tool, replacing any tool of the same name.
    pub fn replace_tool(&self, def: ToolDef) -> Result<(), RegistryError> {
        def.validate().map_err(RegistryError::InvalidTool)?;
        self.update(&[ListKind::Tools], |s| {
            insert_tool(s, def);
            Ok(())
        })
    }

    /// Removes a tool; `true` if it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.remove(ListKind::Tools, |s| s.tools.remove(name).is_some())
    }

    /// Registers a fixed resource. Refuses a duplicate URI.
    pub fn register_resource(&self, def: ResourceDef) -> Result<(), RegistryError> {
        self.register_all(vec![], vec![def], vec![], vec![])
    }

    /// Removes a fixed resource; `true` if it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.remove(ListKind::Resources, |s| s.resources.remove(uri).is_some())
    }

    /// Registers a resource template. Refuses a duplicate template.
    pub fn register_template(&self, def: ResourceTemplateDef) -> Result<(), RegistryError> {
        self.register_all(vec![], vec![], vec![def], vec![])
    }

    /// Removes a template; `true` if it existed.
    pub fn remove_template(&self, uri_template: &str) -> bool {
        self.remove(ListKind::Resources, |s| {
            let before = s.templates.len();
            s.templates.retain(|t| t.def.uri_template() != uri_template);
            before != s.templates.len()
        })
    }

    /// Registers a prompt. Refuses a duplicate name.
    pub fn register_prompt(&self, def: PromptDef) -> Result<(), RegistryError> {
        self.register_all(vec![], vec![], vec![], vec![def])
    }

    /// Removes a prompt; `true` if it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.remove(ListKind::Prompts, |s| s.prompts.remove(name).is_some())
    }

    fn remove(&self, kind: ListKind, f: impl FnOnce(&mut Snapshot) -> bool) -> bool {
        let mut removed = false;
        let _ = self.update(&[], |s| {
            removed = f(s);
            Ok(())
        });
        if removed && let Some(notify) = self.notifier.lock().clone() {
            notify(kind);
        }
        removed
    }

    /// Registers a batch atomically: either every entry is valid and new, and all are
    /// added with one notification per changed list, or nothing changes.
    pub fn register_all(
        &self,
        tools: Vec<ToolDef>,
        resources: Vec<ResourceDef>,
        templates: Vec<ResourceTemplateDef>,
        prompts: Vec<PromptDef>,
    ) -> Result<(), RegistryError> {
        for t in &tools {
            t.validate().map_err(RegistryError::InvalidTool)?;
        }
        for r in &resources {
            validate_named("resource", r.uri(), &r.resource.name)?;
        }
        for t in &templates {
            validate_named("resource template", t.uri_template(), &t.template.name)?;
        }
        for p in &prompts {
            if p.name().trim().is_empty() {
                return Err(RegistryError::Invalid {
                    kind: "prompt",
                    name: p.name().to_owned(),
                    reason: "the name is empty".into(),
                });
            }
        }
        let mut kinds = Vec::new();
        if !tools.is_empty() {
            kinds.push(ListKind::Tools);
        }
        if !resources.is_empty() || !templates.is_empty() {
            kinds.push(ListKind::Resources);
        }
        if !prompts.is_empty() {
            kinds.push(ListKind::Prompts);
        }
        self.update(&kinds, |s| {
            for t in tools {
                if s.tools.contains_key(t.name()) {
                    return Err(duplicate("tool", t.name()));
                }
                insert_tool(s, t);
            }
            for r in resources {
                if s.resources.contains_key(r.uri()) {
                    return Err(duplicate("resource", r.uri()));
                }
                let wire = r.resource.clone();
                s.resources
                    .insert(Arc::from(r.uri()), Arc::new(Listed::new(r, &wire)));
            }
            for t in templates {
                if s.templates
                    .iter()
                    .any(|e| e.def.uri_template() == t.uri_template())
                {
                    return Err(duplicate("resource template", t.uri_template()));
                }
                let wire = t.template.clone();
                s.templates.push(Arc::new(Listed::new(t, &wire)));
            }
            for p in prompts {
                if s.prompts.contains_key(p.name()) {
                    return Err(duplicate("prompt", p.name()));
                }
                let wire = p.prompt.clone();
                s.prompts
                    .insert(Arc::from(p.name()), Arc::new(Listed::new(p, &wire)));
            }
            Ok(())
        })
    }
}

fn insert_tool(s: &mut Snapshot, def: ToolDef) {
    let wire = def.tool.clone();
    s.tools
        .insert(Arc::from(def.name()), Arc::new(Listed::new(def, &wire)));
}

fn duplicate(kind: &'static str, name: &str) -> RegistryError {
    RegistryError::Duplicate {
        kind,
        name: name.to_owned(),
    }
}

fn validate_named(kind: &'static str, uri: &str, name: &str) -> Result<(), RegistryError> {
    let invalid = |reason: &str| RegistryError::Invalid {
        kind,
        name: uri.to_owned(),
        reason: reason.to_owned(),
    };
    if uri.is_empty() {
        return Err(invalid("the URI is empty"));
    }
    if !uri.contains(':') {
        return Err(invalid("the URI needs a scheme, such as file:// or app://"));
    }
    if name.trim().is_empty() {
        return Err(invalid("the name is empty"));
    }
    Ok(())
}

/// Opaque list cursors: the sort key of the last entry of the previous page. Keys are
/// unique and ordered, so a cursor stays meaningful when entries come and go between pages.
pub(crate) mod cursor {
    use super::*;

    pub(crate) fn encode(key: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.as_bytes())
    }

    /// The key a cursor names, or `None` if it is not one of ours.
    pub(crate) fn decode(cursor: &str) -> Option<String> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(cursor.as_bytes())
            .ok()?;
        String::from_utf8(bytes).ok()
    }
}

/// One page of a list: the entries' JSON and, when more follow, the cursor for the next page.
pub(crate) struct Page<'a> {
    pub(crate) items: Vec<&'a RawValue>,
    pub(crate) next_cursor: Option<String>,
}

impl Page<'_> {
    /// How long the page's members are as JSON text (an upper bound: the cursor's
    /// characters never need escaping, and a little room is left for its quotes).
    pub(crate) fn members_len(&self, key: &str) -> usize {
        let items: usize = self.items.iter().map(|i| i.get().len() + 1).sum();
        let cursor = self.next_cursor.as_ref().map_or(0, |c| c.len() + 16);
        key.len() + 8 + items + cursor
    }

    /// Appends the page's members, `"<key>":[...]` and `,"nextCursor":"..."` when more
    /// follow, straight to `out` (the reply's frame): the entries' JSON is copied once.
    pub(crate) fn write_members(&self, key: &str, out: &mut String) {
        out.push('"');
        out.push_str(key);
        out.push_str("\":[");
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(item.get());
        }
        out.push(']');
        if let Some(cursor) = &self.next_cursor {
            out.push_str(",\"nextCursor\":");
            crate::protocol::json_str::push_json_str(out, cursor);
        }
    }
}

/// Why a cursor could not be used.
#[derive(Debug)]
pub(crate) struct BadCursor;

/// Where the page after `cursor` starts in `entries`.
pub(crate) fn page_start<T>(
    entries: &[Arc<Listed<T>>],
    key: impl Fn(&T) -> &str,
    cursor: Option<&str>,
) -> Result<usize, BadCursor> {
    Ok(match cursor {
        None | Some("") => 0,
        Some(c) => {
            let after = cursor::decode(c).ok_or(BadCursor)?;
            entries.partition_point(|e| key(&e.def) <= after.as_str())
        }
    })
}

/// How much one page of a list holds: at most `items` entries, and no more entries than
/// fit in `bytes` bytes of JSON (a page always holds at least one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageLimit {
    pub(crate) items: usize,
    pub(crate) bytes: usize,
}

impl PageLimit {
    /// Whether an entry of `len` bytes of JSON still goes on a page that holds `count`
    /// entries of `bytes` bytes so far.
    pub(crate) fn admits(&self, count: usize, bytes: usize, len: usize) -> bool {
        count < self.items.max(1) && (count == 0 || bytes.saturating_add(len) <= self.bytes)
    }

    /// How many more entries a page holding `count` may take, plus the one past them that
    /// tells whether another page follows: as far as a listing needs visibility decided.
    pub(crate) fn room_after(&self, count: usize) -> usize {
        self.items.max(1).saturating_sub(count) + 1
    }

    /// What an entry adds to a page: its JSON and the comma before it.
    pub(crate) fn cost<T>(entry: &Listed<T>) -> usize {
        entry.json.get().len() + 1
    }
}

/// Cuts a page out of `entries` (sorted by `key`), starting after the cursor's key and
/// keeping only entries `visible` accepts.
pub(crate) fn page<'a, T>(
    entries: &'a [Arc<Listed<T>>],
    key: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    limit: PageLimit,
    visible: impl FnMut(usize, &T) -> bool,
) -> Result<Page<'a>, BadCursor> {
    let start = page_start(entries, &key, cursor)?;
    Ok(page_from(entries, key, start, limit, visible))
}

/// [`page`], from an index [`page_start`] found.
pub(crate) fn page_from<'a, T>(
    entries: &'a [Arc<Listed<T>>],
    key: impl Fn(&T) -> &str,
    start: usize,
    limit: PageLimit,
    mut visible: impl FnMut(usize, &T) -> bool,
) -> Page<'a> {
    // One allocation: growing it push by push cost more than the page (allocator
    // consolidation dominated a 10,000-tool listing under callgrind).
    let mut items = Vec::with_capacity(limit.items.min(entries.len().saturating_sub(start)));
    let mut bytes = 0;
    let mut last = None;
    let mut next_cursor = None;
    for (index, e) in entries.iter().enumerate().skip(start) {
        if !visible(index, &e.def) {
            continue;
        }
        let cost = PageLimit::cost(e);
        if !limit.admits(items.len(), bytes, cost) {
            // Another entry this caller may see follows: only those make another page (a
            // cursor in front of hidden entries alone would reveal that they exist).
            next_cursor = last.map(|d| cursor::encode(key(d)));
            break;
        }
        items.push(&*e.json);
        bytes += cost;
        last = Some(&e.def);
    }
    Page { items, next_cursor }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CallToolResult;
    use serde_json::json;

    fn tool(name: &str) -> ToolDef {
        ToolDef::new(name, "d", json!({"type": "object"}), |_c, _a| async {
            CallToolResult::text("x")
        })
    }

    #[test]
    fn registers_lists_in_order_and_refuses_duplicates() {
        let r = Registry::new();
        r.register_tool(tool("b")).unwrap();
        r.register_tool(tool("a")).unwrap();
        let err = r.register_tool(tool("a")).unwrap_err();
        assert!(err.to_string().contains("already registered"), "{err}");
        let names: Vec<_> = r.snapshot().tools().map(|t| t.name().to_owned()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(r.remove_tool("a"));
        assert!(!r.remove_tool("a"));
        r.replace_tool(tool("b")).unwrap();
    }

    #[test]
    fn validation_collects_problems_in_order() {
        let bad = ToolDef::new("bad name", " ", json!({"type": "string"}), |_c, _a| async {
            CallToolResult::text("x")
        });
        let RegistryError::InvalidTool(e) = Registry::new().register_tool(bad).unwrap_err() else {
            panic!()
        };
        assert!(matches!(e.problems[0], ToolProblem::InvalidName(_)));
        assert_eq!(e.problems[1], ToolProblem::MissingDescription);
        assert!(matches!(e.problems[2], ToolProblem::InvalidInputSchema(_)));
        assert!(validate_tool_name(&"x".repeat(129)).is_err());
        assert!(validate_tool_name("a.b-c_D9").is_ok());
    }

    #[test]
    fn batches_are_all_or_nothing() {
        let r = Registry::new();
        let err = r.register_all(vec![tool("ok"), tool("ok")], vec![], vec![], vec![]);
        assert!(err.is_err());
        assert_eq!(r.snapshot().tools().count(), 0);
    }

    /// A registry of tools with these names.
    fn registry_of(names: &[&str]) -> Registry {
        let r = Registry::new();
        for n in names {
            r.register_tool(tool(n)).unwrap();
        }
        r
    }

    /// A limit of `n` entries, whatever their size.
    fn items(n: usize) -> PageLimit {
        PageLimit {
            items: n,
            bytes: usize::MAX,
        }
    }

    #[test]
    fn a_page_ends_before_the_entry_that_would_take_it_past_its_bytes() {
        let s = registry_of(&["a", "b", "c", "d", "e"]).snapshot();
        let entries = s.tool_entries();
        let one = PageLimit::cost(&entries[0]);
        // Room for two entries and a bit: pages of two, every entry listed once.
        let limit = PageLimit {
            items: 100,
            bytes: 2 * one + one / 2,
        };
        let mut cursor: Option<String> = None;
        let mut listed = Vec::new();
        loop {
            let p = page(entries, |t| t.name(), cursor.as_deref(), limit, |_, _| true).unwrap();
            assert!(p.items.len() <= 2, "{} entries", p.items.len());
            listed.extend(p.items.iter().map(|i| i.get().to_owned()));
            match p.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(listed.len(), 5);
        // An entry larger than the whole budget still makes a page of its own.
        let tiny = PageLimit {
            items: 100,
            bytes: 1,
        };
        let p = page(entries, |t| t.name(), None, tiny, |_, _| true).unwrap();
        assert_eq!(p.items.len(), 1);
        assert!(p.next_cursor.is_some());
    }

    #[test]
    fn pages_with_cursors() {
        let s = registry_of(&["a", "b", "c", "d", "e"]).snapshot();
        let p1 = page(s.tool_entries(), |t| t.name(), None, items(2), |_, _| true).unwrap();
        assert_eq!(p1.items.len(), 2);
        let c = p1.next_cursor.unwrap();
        let p2 = page(
            s.tool_entries(),
            |t| t.name(),
            Some(&c),
            items(2),
            |_, _| true,
        )
        .unwrap();
        assert!(p2.items[0].get().contains("\"c\""));
        let p3 = page(
            s.tool_entries(),
            |t| t.name(),
            p2.next_cursor.as_deref(),
            items(2),
            |_, _| true,
        )
        .unwrap();
        assert_eq!(p3.items.len(), 1);
        assert!(p3.next_cursor.is_none());
        assert!(
            page(
                s.tool_entries(),
                |t| t.name(),
                Some("!!"),
                items(2),
                |_, _| true
            )
            .is_err()
        );
    }

    #[test]
    fn no_cursor_in_front_of_hidden_entries_only() {
        let s = registry_of(&["a", "b", "x", "y"]).snapshot();
        let shown = |_: usize, t: &ToolDef| !matches!(t.name(), "x" | "y");
        let p = page(s.tool_entries(), |t| t.name(), None, items(2), shown).unwrap();
        assert_eq!(p.items.len(), 2);
        assert!(p.next_cursor.is_none());
        let some_hidden = |_: usize, t: &ToolDef| t.name() != "x";
        let p = page(s.tool_entries(), |t| t.name(), None, items(2), some_hidden).unwrap();
        assert!(p.next_cursor.is_some());
    }

    #[test]
    fn notifies_on_change() {
        let r = Registry::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = Arc::clone(&seen);
        r.set_notifier(Arc::new(move |k| s2.lock().push(k)));
        r.register_tool(tool("a")).unwrap();
        r.remove_tool("a");
        r.remove_tool("a");
        assert_eq!(*seen.lock(), vec![ListKind::Tools, ListKind::Tools]);
    }
}
