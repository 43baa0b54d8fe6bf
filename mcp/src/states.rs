//! The application's states of one server, by type: the map behind `State<T>`,
//! `Ctx::state`, `AuthContext::state` and a layer's `Request::state`. It sits below every
//! room that reads it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;

type Entries = HashMap<TypeId, (Arc<dyn Any + Send + Sync>, &'static str)>;

/// The states of one server, by type. Read on every extraction without a lock; written
/// rarely (at build, or by a start-up hook), by replacing the whole map.
#[derive(Default)]
pub(crate) struct StateMap {
    entries: ArcSwap<Entries>,
}

impl StateMap {
    /// Adds (or replaces) the state of type `T`.
    pub(crate) fn insert<T: Send + Sync + 'static>(&self, value: Arc<T>) {
        self.entries.rcu(|entries| {
            let mut next = Entries::clone(entries);
            next.insert(
                TypeId::of::<T>(),
                (
                    value.clone() as Arc<dyn Any + Send + Sync>,
                    std::any::type_name::<T>(),
                ),
            );
            next
        });
    }

    /// The state of type `T`, made by `make` if there is none yet (two callers racing keep
    /// the first one stored).
    pub(crate) fn get_or_insert_with<T: Send + Sync + 'static>(
        &self,
        make: impl FnOnce() -> T,
    ) -> Arc<T> {
        if let Some(found) = self.get::<T>() {
            return found;
        }
        let fresh = Arc::new(make());
        self.entries.rcu(|entries| {
            if entries.contains_key(&TypeId::of::<T>()) {
                Arc::clone(entries)
            } else {
                let mut next = Entries::clone(entries);
                next.insert(
                    TypeId::of::<T>(),
                    (
                        fresh.clone() as Arc<dyn Any + Send + Sync>,
                        std::any::type_name::<T>(),
                    ),
                );
                Arc::new(next)
            }
        });
        self.get::<T>().unwrap_or(fresh)
    }

    /// The state of type `T`, if the server has one.
    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let entries = self.entries.load();
        let (value, _) = entries.get(&TypeId::of::<T>())?;
        value.clone().downcast::<T>().ok()
    }

    /// The state of the type `id`, untyped (what `Ctx` reaches through its host).
    pub(crate) fn get_any(&self, id: TypeId) -> Option<Arc<dyn Any + Send + Sync>> {
        self.entries.load().get(&id).map(|(value, _)| value.clone())
    }

    /// Whether a state of this type is present.
    pub(crate) fn contains(&self, id: TypeId) -> bool {
        self.entries.load().contains_key(&id)
    }

    /// The type names of the states present, for messages.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.entries.load().values().map(|(_, n)| *n).collect();
        names.sort_unstable();
        names
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_found_by_type_and_replaced_whole() {
        let map = StateMap::default();
        assert!(map.get::<u32>().is_none());
        map.insert(Arc::new(7u32));
        map.insert(Arc::new(String::from("pool")));
        assert_eq!(*map.get::<u32>().unwrap(), 7);
        assert_eq!(map.get::<String>().unwrap().as_str(), "pool");
        map.insert(Arc::new(8u32));
        assert_eq!(*map.get::<u32>().unwrap(), 8);
        assert!(map.contains(TypeId::of::<String>()));
        assert_eq!(map.names(), vec!["alloc::string::String", "u32"]);
        assert!(map.get_any(TypeId::of::<u32>()).is_some());
    }
}
