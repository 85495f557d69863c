//! Named, typed access to the columns of a query result: each column is cast once to the
//! type the exporter reads it as (text, 64-bit integer, boolean; timestamps as microseconds),
//! so the readers of `read.rs` take cells by name and row without caring how DataFusion
//! typed the column (dictionary, view or plain strings).

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};

use crate::error::{Error, Result};

/// The columns of one batch, cast for reading.
pub struct Columns {
    names: Vec<String>,
    cols: Vec<ArrayRef>,
    rows: usize,
}

impl Columns {
    /// Casts every column of `batch`: strings to `Utf8`, integers and timestamps to `Int64`
    /// (microseconds for the tables' timestamps), booleans as they are.
    pub fn of(batch: &RecordBatch) -> Result<Columns> {
        let schema = batch.schema();
        let mut names = Vec::with_capacity(batch.num_columns());
        let mut cols = Vec::with_capacity(batch.num_columns());
        for (field, col) in schema.fields().iter().zip(batch.columns()) {
            let to = match field.data_type() {
                DataType::Boolean => DataType::Boolean,
                DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
                | DataType::UInt64
                | DataType::Timestamp(..) => DataType::Int64,
                _ => DataType::Utf8,
            };
            names.push(field.name().clone());
            cols.push(cast(col, &to)?);
        }
        Ok(Columns {
            names,
            cols,
            rows: batch.num_rows(),
        })
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    fn col(&self, name: &str) -> Result<&ArrayRef> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| &self.cols[i])
            .ok_or_else(|| Error::Invalid(format!("export: the query has no column {name}")))
    }

    /// A text column.
    pub fn text(&self, name: &str) -> Result<TextCol<'_>> {
        let c = self.col(name)?;
        c.as_string_opt::<i32>()
            .map(TextCol)
            .ok_or_else(|| Error::Invalid(format!("export: column {name} is not text")))
    }

    /// An integer (or timestamp, in microseconds) column.
    pub fn int(&self, name: &str) -> Result<IntCol<'_>> {
        let c = self.col(name)?;
        c.as_primitive_opt::<Int64Type>()
            .map(IntCol)
            .ok_or_else(|| Error::Invalid(format!("export: column {name} is not an integer")))
    }

    /// A boolean column.
    pub fn bool(&self, name: &str) -> Result<BoolCol<'_>> {
        let c = self.col(name)?;
        c.as_boolean_opt()
            .map(BoolCol)
            .ok_or_else(|| Error::Invalid(format!("export: column {name} is not a boolean")))
    }
}

/// A text column of a [`Columns`].
pub struct TextCol<'a>(&'a datafusion::arrow::array::StringArray);

impl TextCol<'_> {
    /// The cell, `None` when NULL.
    pub fn get(&self, i: usize) -> Option<&str> {
        (!self.0.is_null(i)).then(|| self.0.value(i))
    }

    /// The cell as an owned string, `None` when NULL.
    pub fn owned(&self, i: usize) -> Option<String> {
        self.get(i).map(str::to_string)
    }

    /// The cell, `""` when NULL.
    pub fn or_empty(&self, i: usize) -> String {
        self.get(i).unwrap_or_default().to_string()
    }
}

/// An integer column of a [`Columns`].
pub struct IntCol<'a>(&'a datafusion::arrow::array::Int64Array);

impl IntCol<'_> {
    /// The cell, `None` when NULL.
    pub fn get(&self, i: usize) -> Option<i64> {
        (!self.0.is_null(i)).then(|| self.0.value(i))
    }
}

/// A boolean column of a [`Columns`].
pub struct BoolCol<'a>(&'a datafusion::arrow::array::BooleanArray);

impl BoolCol<'_> {
    /// The cell, `None` when NULL.
    pub fn get(&self, i: usize) -> Option<bool> {
        (!self.0.is_null(i)).then(|| self.0.value(i))
    }
}
