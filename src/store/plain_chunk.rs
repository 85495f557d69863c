//! Plain-encoded Parquet column chunks of required text, written straight from the rows.
//!
//! The `events` table's `data` column holds every event's payload: most of an ingest's
//! bytes. Through the Arrow writer each payload was copied three times before Snappy saw it
//! (into a `StringBuilder`, into the encoder's page buffer, regrown by doubling, and into the
//! codec's zero-filled output buffer). Here each page is built once, from the rows, in a
//! buffer reused from page to page, and compressed from there. The pages are what the
//! Arrow writer writes for such a column with dictionary and statistics off: version 1 data
//! pages, `PLAIN`, Snappy, cut at 1 MiB or 20,000 rows, with an offset index. The chunk goes
//! into the file with `SerializedRowGroupWriter::append_column`, as
//! [`super::dictionary_chunk`]'s do.

use datafusion::parquet::basic::{Compression, Encoding, EncodingMask};
use datafusion::parquet::column::page::PageWriter;
use datafusion::parquet::column::writer::ColumnCloseResult;
use datafusion::parquet::errors::{ParquetError, Result};
use datafusion::parquet::file::metadata::ColumnChunkMetaData;
use datafusion::parquet::file::page_index::offset_index::PageLocation;
use datafusion::parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use datafusion::parquet::schema::types::ColumnDescPtr;

use super::dictionary_chunk::{data_page, finished};

/// Rows per data page at most (the Arrow writer's default page row limit).
const PAGE_ROWS: usize = 20_000;

/// Uncompressed bytes per data page: a page is cut once it holds this many (the Arrow
/// writer's default page size limit).
const PAGE_BYTES: usize = 1024 * 1024;

/// Writes the chunk of a required text column whose rows are `rows` (dictionary pages none,
/// statistics none) into `sink`, cleared first: its data pages with headers. Returns what
/// `append_column` needs to know of it (offsets from the start of `sink`).
pub fn encode<'a>(
    descr: ColumnDescPtr,
    rows: impl IntoIterator<Item = &'a str>,
    sink: &mut Vec<u8>,
) -> Result<ColumnCloseResult> {
    if descr.max_def_level() > 0 || descr.max_rep_level() > 0 {
        return Err(ParquetError::General(format!(
            "plain chunk of the optional or repeated column {}",
            descr.path()
        )));
    }
    sink.clear();
    let mut tracked = TrackedWrite::new(&mut *sink);
    let mut uncompressed = 0u64;
    let mut page_locations = Vec::new();
    let mut row_count = 0usize;
    {
        let mut pages = SerializedPageWriter::new(&mut tracked);
        let mut snappy = snap::raw::Encoder::new();
        let mut buf: Vec<u8> = Vec::with_capacity(PAGE_BYTES + PAGE_BYTES / 4);
        let mut page_rows = 0usize;
        let mut flush = |buf: &mut Vec<u8>, page_rows: usize, first_row: usize| -> Result<()> {
            let spec = pages.write_page(data_page(&mut snappy, buf, page_rows, Encoding::PLAIN))?;
            page_locations.push(PageLocation {
                offset: spec.offset as i64,
                compressed_page_size: spec.bytes_written as i32,
                first_row_index: first_row as i64,
            });
            uncompressed += spec.uncompressed_size as u64;
            buf.clear();
            Ok(())
        };
        for text in rows {
            let len = u32::try_from(text.len()).map_err(|_| {
                ParquetError::General(format!("a value of {} over 4 GiB", descr.path()))
            })?;
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(text.as_bytes());
            page_rows += 1;
            row_count += 1;
            if page_rows == PAGE_ROWS || buf.len() >= PAGE_BYTES {
                flush(&mut buf, page_rows, row_count - page_rows)?;
                page_rows = 0;
            }
        }
        // An empty chunk still has one (empty) page, as the Arrow writer's does.
        if page_rows > 0 || row_count == 0 {
            flush(&mut buf, page_rows, row_count - page_rows)?;
        }
        pages.close()?;
    }
    tracked.into_inner()?;
    let meta = ColumnChunkMetaData::builder(descr.clone())
        .set_compression(Compression::SNAPPY)
        .set_encodings_mask(EncodingMask::new_from_encodings(
            [Encoding::PLAIN, Encoding::RLE].iter(),
        ))
        .set_num_values(row_count as i64)
        .set_total_compressed_size(sink.len() as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_data_page_offset(0);
    finished(sink.len(), row_count, meta.build()?, page_locations)
}

#[cfg(test)]
mod tests {
    use super::super::chunk_test_support::{byte_array_column, one_column_file, texts};
    use super::*;

    /// Writes `rows` as the one (required) column of a file and reads it back, with the
    /// number of pages the file's offset index lists.
    fn round_trip(rows: &[String]) -> (Vec<String>, usize) {
        use datafusion::parquet::arrow::arrow_reader::{
            ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
        };
        use datafusion::parquet::file::metadata::PageIndexPolicy;

        let file = one_column_file(false, |descr, sink| {
            encode(descr, rows.iter().map(String::as_str), sink)
        });
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
        let reader = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options).unwrap();
        let pages = reader.metadata().offset_index().unwrap()[0][0]
            .page_locations()
            .len();
        assert_eq!(
            reader.metadata().file_metadata().num_rows(),
            rows.len() as i64
        );
        let texts = texts(reader)
            .into_iter()
            .map(|t| t.expect("a required column has no nulls"))
            .collect();
        (texts, pages)
    }

    #[test]
    fn a_chunk_reads_back_as_written() {
        // Short rows: pages cut at 20,000 rows (45,000 rows, three pages).
        let short: Vec<String> = (0..45_000).map(|i| format!("{{\"n\":{i}}}")).collect();
        assert_eq!(round_trip(&short), (short.clone(), 3));
        // Long rows: pages cut at 1 MiB (3,000 rows of 1,000 bytes and a length: the
        // 1,045th row fills the first page).
        let long: Vec<String> = (0..3_000)
            .map(|i| format!("{i:>8}{}", "é".repeat(496)))
            .collect();
        assert_eq!(long[0].len(), 1_000);
        assert_eq!(round_trip(&long), (long.clone(), 3));
        // Empty texts, a page of one row, and no rows at all.
        let empty = vec![String::new(); 5];
        assert_eq!(round_trip(&empty), (empty.clone(), 1));
        assert_eq!(round_trip(&["x".to_string()]), (vec!["x".to_string()], 1));
        assert_eq!(round_trip(&[]), (vec![], 1));
    }

    #[test]
    fn an_optional_column_is_refused() {
        let descr = byte_array_column(datafusion::parquet::basic::Repetition::OPTIONAL);
        assert!(encode(descr, ["a"], &mut Vec::new()).is_err());
    }
}
