//! How options given in two places become one: the command line's value over the campaign
//! file's. Every option is an `Option` (the later source wins where it says anything) or a list
//! that adds up (`--header`, `--show-header`: the file's lines first). [`options!`] writes a
//! group's struct once and derives its [`Combine`] from the fields, so that no option is ever
//! copied by hand.

/// Two values of one option: `self` laid over `under`.
pub trait Combine {
    /// `self` where it is given, else `under`; lists add up.
    #[must_use]
    fn combine(self, under: Self) -> Self;
}

impl<T> Combine for Option<T> {
    fn combine(self, under: Self) -> Self {
        self.or(under)
    }
}

impl<T> Combine for Vec<T> {
    fn combine(self, mut under: Self) -> Self {
        under.extend(self);
        under
    }
}

/// A group of options, declared once: the struct (clap `Args` and serde `Deserialize` through
/// the derives given) and its [`Combine`], field by field.
macro_rules! options {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$field_meta:meta])* pub $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$field_meta])* pub $field: $ty, )*
        }

        impl $crate::config::combine::Combine for $name {
            fn combine(self, under: Self) -> Self {
                Self {
                    $( $field: $crate::config::combine::Combine::combine(self.$field, under.$field), )*
                }
            }
        }
    };
}

pub(crate) use options;

#[cfg(test)]
mod tests {
    use super::Combine;

    #[test]
    fn the_later_value_wins_and_lists_add_up() {
        assert_eq!(Some(2).combine(Some(1)), Some(2));
        assert_eq!(None.combine(Some(1)), Some(1));
        assert_eq!(None::<u32>.combine(None), None);
        assert_eq!(vec!["b"].combine(vec!["a"]), vec!["a", "b"]);
    }
}
