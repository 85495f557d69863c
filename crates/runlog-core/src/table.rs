//! The warehouse's tables and their columns, defined once. [`Table`] names every table;
//! [`ColumnDef`] says what one column holds (its name, its [`ColumnKind`], how it is stored).
//! A derived table (one the reducer fills) is declared by [`define_table!`] in
//! `reduce::rows`: its row struct and its columns in one list, in column order, from which
//! the macro makes the struct, [`Row::COLUMNS`] and [`Row::visit_columns`]. The `events`,
//! `rejects` and `files` tables, whose rows are made by ingest, have their columns here
//! ([`EVENTS_COLUMNS`], [`REJECTS_COLUMNS`], [`FILES_COLUMNS`]). [`Table::columns`] (beside
//! the rows, in `reduce::rows`) gives any table's columns; the store makes every Arrow schema,
//! Parquet setting and derived record batch from them.
//!
//! To add a column: add it to its table's definition (`reduce::rows` for a derived table)
//! and set it in the reducer rule that fills it. Nothing else lists a derived table's
//! columns. (The store's hand-written builders of the `events`, `rejects` and `files`
//! batches follow their columns' order too; a batch that does not match its schema is an
//! error on every write.) Columns are added, never renamed (docs/semantics.md §8 documents
//! each).

use std::fmt;
use std::str::FromStr;

/// A table of the warehouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Events,
    Intervals,
    Turns,
    Errors,
    ToolCalls,
    Callbacks,
    Runs,
    Rejects,
    Agents,
    Files,
}

impl Table {
    /// Every table, in the order they are written: the order they are declared in, so that
    /// `table as usize` is a table's index here.
    pub const ALL: [Table; 10] = [
        Table::Events,
        Table::Intervals,
        Table::Turns,
        Table::Errors,
        Table::ToolCalls,
        Table::Callbacks,
        Table::Runs,
        Table::Rejects,
        Table::Agents,
        Table::Files,
    ];

    /// Its name in SQL and in the warehouse (`NAME/part-*.parquet`).
    pub const fn name(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Intervals => "intervals",
            Table::Turns => "turns",
            Table::Errors => "errors",
            Table::ToolCalls => "tool_calls",
            Table::Callbacks => "callbacks",
            Table::Runs => "runs",
            Table::Rejects => "rejects",
            Table::Agents => "agents",
            Table::Files => "files",
        }
    }

    /// Whether the reducer fills it (one [`Row`] struct per row); the others are made by
    /// ingest.
    pub const fn is_derived(self) -> bool {
        !matches!(self, Table::Events | Table::Rejects | Table::Files)
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no table's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not a table")]
pub struct UnknownTable(pub String);

impl FromStr for Table {
    type Err = UnknownTable;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Table::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownTable(s.to_string()))
    }
}

/// What a column holds; `Opt*` columns may be NULL. Times are UTC microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Text,
    OptText,
    Int,
    OptInt,
    Bool,
    OptBool,
    Ts,
    OptTs,
}

impl ColumnKind {
    /// Whether the column may be NULL.
    pub const fn nullable(self) -> bool {
        matches!(
            self,
            ColumnKind::OptText | ColumnKind::OptInt | ColumnKind::OptBool | ColumnKind::OptTs
        )
    }
}

/// One column of a table: its name, what it holds, and how its values fall, which decides
/// how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: &'static str,
    pub kind: ColumnKind,
    /// Its values rarely repeat (ids, long texts, positions): stored without a dictionary,
    /// which would be built and then abandoned.
    pub distinct: bool,
    /// Min/max statistics of a row group would span nearly every value and prune nothing:
    /// not computed.
    pub unpruned: bool,
    /// Ascending within an agent: stored as packed differences.
    pub ascending: bool,
}

impl ColumnDef {
    pub const fn new(name: &'static str, kind: ColumnKind) -> Self {
        ColumnDef {
            name,
            kind,
            distinct: false,
            unpruned: false,
            ascending: false,
        }
    }

    /// This column, with [`ColumnDef::distinct`] set.
    pub const fn distinct(self) -> Self {
        ColumnDef {
            distinct: true,
            ..self
        }
    }

    /// This column, with [`ColumnDef::unpruned`] set.
    pub const fn unpruned(self) -> Self {
        ColumnDef {
            unpruned: true,
            ..self
        }
    }

    /// This column, with [`ColumnDef::ascending`] set.
    pub const fn ascending(self) -> Self {
        ColumnDef {
            ascending: true,
            ..self
        }
    }
}

/// Takes a derived table's columns one at a time, in column order: a method per kind,
/// given the column's name and its values, one per row. Generic, so that a visitor (the
/// store's record-batch builder) is compiled for each column's getter: no dynamic call and
/// no boxing per row.
pub trait ColumnVisitor<'a> {
    fn text(&mut self, name: &'static str, values: impl ExactSizeIterator<Item = &'a str> + Clone);
    fn opt_text(
        &mut self,
        name: &'static str,
        values: impl ExactSizeIterator<Item = Option<&'a str>> + Clone,
    );
    fn int(&mut self, name: &'static str, values: impl ExactSizeIterator<Item = i64> + Clone);
    fn opt_int(
        &mut self,
        name: &'static str,
        values: impl ExactSizeIterator<Item = Option<i64>> + Clone,
    );
    fn bool(&mut self, name: &'static str, values: impl ExactSizeIterator<Item = bool> + Clone);
    fn opt_bool(
        &mut self,
        name: &'static str,
        values: impl ExactSizeIterator<Item = Option<bool>> + Clone,
    );
    fn ts(&mut self, name: &'static str, values: impl ExactSizeIterator<Item = i64> + Clone);
    fn opt_ts(
        &mut self,
        name: &'static str,
        values: impl ExactSizeIterator<Item = Option<i64>> + Clone,
    );
}

/// A row of a derived table, declared by [`define_table!`].
pub trait Row: Sized {
    /// The table it is a row of.
    const TABLE: Table;
    /// The table's columns, in order.
    const COLUMNS: &'static [ColumnDef];
    /// Hands every column of `rows` to `v`, in [`Row::COLUMNS`] order.
    fn visit_columns<'a, V: ColumnVisitor<'a>>(rows: &'a [Self], v: &mut V);
}

/// Declares a derived table: its row struct and, in the same list and in column order,
/// each column's field, Rust type and [`ColumnKind`], with its storage hints in brackets
/// (`[distinct]`, see [`ColumnDef`]). Makes the struct (fields in column order) and its
/// [`Row`] impl. A text column's field is anything that is `AsRef<str>` (`Id`, `Data`,
/// `String`, `&'static str`), an `Opt*` column's an `Option` of it; a wrong type is a
/// compile error.
///
/// ```ignore
/// define_table! {
///     /// A row of `callbacks`.
///     #[derive(Debug, Clone, PartialEq)]
///     pub struct CallbackRow: Callbacks {
///         root: Id => Text [distinct],
///         open_seq: i64 => Int,
///         closed_by: Option<&'static str> => OptText,
///     }
/// }
/// ```
macro_rules! define_table {
    (
        $(#[$meta:meta])*
        pub struct $row:ident : $table:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident : $ty:ty => $kind:ident $([$($hint:ident),*])?,
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct $row {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl $crate::table::Row for $row {
            const TABLE: $crate::table::Table = $crate::table::Table::$table;
            const COLUMNS: &'static [$crate::table::ColumnDef] = &[$(
                $crate::table::ColumnDef::new(
                    stringify!($field),
                    $crate::table::ColumnKind::$kind,
                )$($(.$hint())*)?,
            )*];

            fn visit_columns<'a, V: $crate::table::ColumnVisitor<'a>>(rows: &'a [Self], v: &mut V) {
                $( $crate::table::define_table!(@visit $kind, v, rows, $field); )*
            }
        }
    };
    (@visit Text, $v:ident, $rows:ident, $f:ident) => {
        $v.text(stringify!($f), $rows.iter().map(|r| AsRef::<str>::as_ref(&r.$f)))
    };
    (@visit OptText, $v:ident, $rows:ident, $f:ident) => {
        $v.opt_text(stringify!($f), $rows.iter().map(|r| r.$f.as_ref().map(AsRef::<str>::as_ref)))
    };
    (@visit Int, $v:ident, $rows:ident, $f:ident) => {
        $v.int(stringify!($f), $rows.iter().map(|r| r.$f))
    };
    (@visit OptInt, $v:ident, $rows:ident, $f:ident) => {
        $v.opt_int(stringify!($f), $rows.iter().map(|r| r.$f))
    };
    (@visit Bool, $v:ident, $rows:ident, $f:ident) => {
        $v.bool(stringify!($f), $rows.iter().map(|r| r.$f))
    };
    (@visit OptBool, $v:ident, $rows:ident, $f:ident) => {
        $v.opt_bool(stringify!($f), $rows.iter().map(|r| r.$f))
    };
    (@visit Ts, $v:ident, $rows:ident, $f:ident) => {
        $v.ts(stringify!($f), $rows.iter().map(|r| r.$f))
    };
    (@visit OptTs, $v:ident, $rows:ident, $f:ident) => {
        $v.opt_ts(stringify!($f), $rows.iter().map(|r| r.$f))
    };
}
pub(crate) use define_table;

use ColumnKind::{Int, Text, Ts};

/// The `events` table's columns: a kept event per row, in `seq` order per agent
/// (docs/events.md). Sorted by root then seq, a row group holds thousands of agents, so the
/// min/max of every column but `root` and `ts` spans nearly every value (each agent's `seq`
/// starts low, and lines of every file are spread over it): those statistics pruned
/// nothing and cost ~1.5% of an ingest's CPU.
pub const EVENTS_COLUMNS: &[ColumnDef] = &[
    ColumnDef::new("root", Text),
    ColumnDef::new("session", Text).unpruned(),
    ColumnDef::new("turn", ColumnKind::OptText).unpruned(),
    ColumnDef::new("seq", Int).distinct().unpruned().ascending(),
    ColumnDef::new("ts", Ts).distinct().ascending(),
    ColumnDef::new("type", Text).unpruned(),
    ColumnDef::new("voice", Text).unpruned(),
    ColumnDef::new("file", Text).unpruned(),
    ColumnDef::new("line", Int)
        .distinct()
        .unpruned()
        .ascending(),
    ColumnDef::new("data", Text).distinct().unpruned(),
    ColumnDef::new("source", Text).unpruned(),
];

/// The `rejects` table's columns: a line that could not be kept, with why.
pub const REJECTS_COLUMNS: &[ColumnDef] = &[
    ColumnDef::new("file", Text),
    ColumnDef::new("line", Int).distinct(),
    ColumnDef::new("reason", Text).distinct(),
    ColumnDef::new("excerpt", Text).distinct().unpruned(),
];

/// The `files` table's columns: an input file's accounting and format.
pub const FILES_COLUMNS: &[ColumnDef] = &[
    ColumnDef::new("file", Text),
    ColumnDef::new("bytes", Int),
    ColumnDef::new("lines", Int),
    ColumnDef::new("blank", Int),
    ColumnDef::new("kept", Int),
    ColumnDef::new("duplicates", Int),
    ColumnDef::new("rejects", Int),
    ColumnDef::new("format", Text),
    ColumnDef::new("events", Int),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for (i, t) in Table::ALL.into_iter().enumerate() {
            assert_eq!(t as usize, i, "{t} is not at its index in Table::ALL");
            assert_eq!(t.name().parse::<Table>(), Ok(t));
            assert_eq!(t.to_string(), t.name());
        }
        assert_eq!(
            "interval".parse::<Table>(),
            Err(UnknownTable("interval".into()))
        );
    }

    #[test]
    fn every_table_has_unique_column_names() {
        for t in Table::ALL {
            let cols = t.columns();
            assert!(!cols.is_empty(), "{t}");
            for (i, c) in cols.iter().enumerate() {
                assert!(
                    cols[..i].iter().all(|d| d.name != c.name),
                    "{t}.{} twice",
                    c.name
                );
            }
        }
    }
}
