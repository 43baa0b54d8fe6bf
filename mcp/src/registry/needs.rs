//! The states a handler takes, so that `build()` can refuse a server that lacks one.

use std::any::TypeId;

/// A state type a handler takes as `State<T>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Need {
    pub(crate) id: TypeId,
    pub(crate) type_name: &'static str,
}

impl Need {
    /// The need of a `State<T>` parameter.
    pub(crate) fn of<T: 'static>() -> Self {
        Need {
            id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

/// Adds the need of a `State<T>` parameter to `needs`, once.
pub(crate) fn add<T: 'static>(needs: &mut Vec<Need>) {
    let need = Need::of::<T>();
    if !needs.contains(&need) {
        needs.push(need);
    }
}
