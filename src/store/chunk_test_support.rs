//! What the tests of the hand-written column chunks ([`super::dictionary_chunk`],
//! [`super::plain_chunk`]) share: a one-column Parquet file around a chunk, the texts read
//! back from it, and a bare column of a given repetition.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::arrow::ArrowSchemaConverter;
use datafusion::parquet::basic::Repetition;
use datafusion::parquet::column::writer::ColumnCloseResult;
use datafusion::parquet::errors::Result;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::file::writer::SerializedFileWriter;
use datafusion::parquet::schema::types::{ColumnDescPtr, SchemaDescriptor, Type};

/// The bytes of a file of one row group whose one text column `c` is the chunk `encode`
/// writes for it into the buffer it is given (which holds a previous chunk's bytes: the
/// encoders must clear it).
pub fn one_column_file(
    nullable: bool,
    encode: impl FnOnce(ColumnDescPtr, &mut Vec<u8>) -> Result<ColumnCloseResult>,
) -> Bytes {
    let schema = Schema::new(vec![Field::new("c", DataType::Utf8, nullable)]);
    let parquet_schema = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let mut out = Vec::new();
    let mut w = SerializedFileWriter::new(
        &mut out,
        parquet_schema.root_schema_ptr(),
        Arc::new(WriterProperties::default()),
    )
    .unwrap();
    let mut rg = w.next_row_group().unwrap();
    let mut sink = b"a previous chunk".to_vec();
    let close = encode(parquet_schema.column(0), &mut sink).unwrap();
    rg.append_column(&super::dictionary_chunk::ChunkBytes(&sink), close)
        .unwrap();
    rg.close().unwrap();
    w.close().unwrap();
    Bytes::from(out)
}

/// Every row of the text column of the file `reader` reads, `None` for null.
pub fn texts(reader: ParquetRecordBatchReaderBuilder<Bytes>) -> Vec<Option<String>> {
    let mut texts = Vec::new();
    for b in reader.build().unwrap() {
        let b = b.unwrap();
        let a = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        texts.extend((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i).to_string())));
    }
    texts
}

/// A byte-array column `c` of the given repetition.
pub fn byte_array_column(repetition: Repetition) -> ColumnDescPtr {
    let column = Type::primitive_type_builder("c", datafusion::parquet::basic::Type::BYTE_ARRAY)
        .with_repetition(repetition)
        .build()
        .unwrap();
    let root = Type::group_type_builder("schema")
        .with_fields(vec![Arc::new(column)])
        .build()
        .unwrap();
    SchemaDescriptor::new(Arc::new(root)).column(0)
}
