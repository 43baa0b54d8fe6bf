//! Arguments a tool does not know, found in the same pass that decodes the known ones.
//!
//! serde skips members a type does not name, so a decode alone cannot tell `{"a": 1}` from
//! `{"a": 1, "typo": 2}`. This wraps the deserializer around the top-level object only: each
//! member name is read once (borrowed from the text, no allocation), compared with the names
//! the input schema lists, and handed on to the type's own decoding. Nested objects decode
//! untouched, and nothing is parsed twice.

use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

/// Decodes `T` from the deserializer, collecting into `unknown` every top-level member whose
/// name is not one of `known`.
pub(super) fn deserialize_checked<'de, D, T>(
    de: D,
    known: &[Box<str>],
    unknown: &mut Vec<String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: de::Deserialize<'de>,
{
    T::deserialize(Checked {
        de,
        names: Names { known, unknown },
    })
}

/// Where member names are compared and the strangers kept.
struct Names<'n> {
    known: &'n [Box<str>],
    unknown: &'n mut Vec<String>,
}

impl Names<'_> {
    fn see(&mut self, name: &str) {
        // A tool takes a handful of arguments: a scan beats hashing.
        if !self.known.iter().any(|k| **k == *name) {
            self.unknown.push(name.to_owned());
        }
    }
}

/// The top-level deserializer: objects (as a struct, a map or anything) go through
/// [`CheckedVisitor`]; every other request is passed on as it is.
struct Checked<'n, D> {
    de: D,
    names: Names<'n>,
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Checked<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_any(CheckedVisitor {
            visitor,
            names: self.names,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_map(CheckedVisitor {
            visitor,
            names: self.names,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_struct(
            name,
            fields,
            CheckedVisitor {
                visitor,
                names: self.names,
            },
        )
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_newtype_struct(
            name,
            CheckedVisitor {
                visitor,
                names: self.names,
            },
        )
    }

    forward! {
        deserialize_bool(), deserialize_i8(), deserialize_i16(), deserialize_i32(),
        deserialize_i64(), deserialize_i128(), deserialize_u8(), deserialize_u16(),
        deserialize_u32(), deserialize_u64(), deserialize_u128(), deserialize_f32(),
        deserialize_f64(), deserialize_char(), deserialize_str(), deserialize_string(),
        deserialize_bytes(), deserialize_byte_buf(), deserialize_option(), deserialize_unit(),
        deserialize_seq(), deserialize_identifier(), deserialize_ignored_any(),
        deserialize_unit_struct(name: &'static str),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// The type's own visitor, with its map access wrapped. Only objects reach it with a map
/// (the arguments are checked to be an object before decoding), so the other inputs fall to
/// the default answers, which describe the type through its own `expecting`.
struct CheckedVisitor<'n, V> {
    visitor: V,
    names: Names<'n>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for CheckedVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<V::Value, M::Error> {
        self.visitor.visit_map(CheckedMap {
            map,
            names: self.names,
        })
    }

    fn visit_newtype_struct<E: Deserializer<'de>>(self, de: E) -> Result<V::Value, E::Error> {
        self.visitor.visit_newtype_struct(Checked {
            de,
            names: self.names,
        })
    }
}

struct CheckedMap<'n, M> {
    map: M,
    names: Names<'n>,
}

impl<'de, M: MapAccess<'de>> MapAccess<'de> for CheckedMap<'_, M> {
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        let Some(name) = self.map.next_key_seed(PhantomData::<Name<'de>>)? else {
            return Ok(None);
        };
        match name {
            Name::Borrowed(name) => {
                self.names.see(name);
                seed.deserialize(BorrowedStrDeserializer::new(name))
                    .map(Some)
            }
            Name::Owned(name) => {
                self.names.see(&name);
                seed.deserialize(StringDeserializer::new(name)).map(Some)
            }
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, M::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A member name: borrowed from the text unless it had escapes to undo.
enum Name<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> de::Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an argument name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Name<'de>, E> {
                Ok(Name::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name<'de>, E> {
                Ok(Name::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Name<'de>, E> {
                Ok(Name::Owned(v))
            }
        }
        de.deserialize_str(NameVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn check<T: for<'de> Deserialize<'de>>(text: &str, known: &[&str]) -> (T, Vec<String>) {
        let known: Vec<Box<str>> = known.iter().map(|k| Box::from(*k)).collect();
        let mut unknown = Vec::new();
        let mut de = serde_json::Deserializer::from_str(text);
        let value = deserialize_checked(&mut de, &known, &mut unknown).unwrap();
        de.end().unwrap();
        (value, unknown)
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Point {
        x: i64,
        #[serde(default)]
        y: i64,
    }

    #[test]
    fn members_outside_the_known_names_are_collected_in_order() {
        let known = ["x", "y"];
        let (p, unknown) = check::<Point>(r#"{"x": 1, "zed": true, "y": 2, "a\"b": {}}"#, &known);
        assert_eq!(p, Point { x: 1, y: 2 });
        assert_eq!(unknown, ["zed", "a\"b"]);
    }

    #[test]
    fn known_members_pass_and_nested_objects_are_not_checked() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Outer {
            p: Point,
        }
        let known = ["p"];
        let (o, unknown) = check::<Outer>(r#"{"p": {"x": 3, "extra": 1}}"#, &known);
        assert_eq!(
            o,
            Outer {
                p: Point { x: 3, y: 0 }
            }
        );
        assert!(unknown.is_empty(), "{unknown:?}");
    }

    #[test]
    fn maps_newtypes_and_flattened_structs_are_checked_too() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Wrapped(Point);
        #[derive(Debug, Deserialize, PartialEq)]
        struct Flat {
            #[serde(flatten)]
            p: Point,
        }
        let known = ["x"];
        let (_, unknown) = check::<Wrapped>(r#"{"x": 1, "w": 0}"#, &known);
        assert_eq!(unknown, ["w"]);
        let (f, unknown) = check::<Flat>(r#"{"x": 1, "f": 0}"#, &known);
        assert_eq!(f.p.x, 1);
        assert_eq!(unknown, ["f"]);
        let (m, unknown) =
            check::<std::collections::BTreeMap<String, i64>>(r#"{"x": 1, "m": 2}"#, &known);
        assert_eq!(m.len(), 2);
        assert_eq!(unknown, ["m"]);
    }

    #[test]
    fn without_known_names_every_member_is_unknown() {
        #[derive(Deserialize)]
        struct Empty {}
        let (_, unknown) = check::<Empty>(r#"{"a": 1}"#, &[]);
        assert_eq!(unknown, ["a"]);
    }
}
