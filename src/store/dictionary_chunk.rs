//! Dictionary-encoded Parquet column chunks written from keys the caller already has.
//!
//! The Parquet writer's own dictionary encoder hashes every row's text to find its key: for
//! the seven id columns of `events` (root, session, turn, type, voice, file, source) that
//! was ~14% of an ingest's instructions (callgrind, generated log). The store finds the
//! keys of those columns with a pointer comparison per row (ids are shared pointers), so
//! it writes their chunks here: one dictionary page of the distinct texts (PLAIN) and data
//! pages of keys in the RLE / bit-packing hybrid, as the Parquet format specifies for
//! dictionary-encoded columns (`PLAIN` dictionary page, `RLE_DICTIONARY` data pages), in
//! version 1 data pages, as the Arrow writer writes them.
//! The chunk goes into the file with `SerializedRowGroupWriter::append_column`.

use std::collections::HashMap;

use bytes::Bytes;
use datafusion::parquet::basic::{Compression, Encoding, EncodingMask};
use datafusion::parquet::column::page::{CompressedPage, Page, PageWriter};
use datafusion::parquet::column::writer::ColumnCloseResult;
use datafusion::parquet::data_type::ByteArray;
use datafusion::parquet::errors::{ParquetError, Result};
use datafusion::parquet::file::metadata::ColumnChunkMetaData;
use datafusion::parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use datafusion::parquet::file::reader::{ChunkReader, Length};
use datafusion::parquet::file::statistics::Statistics;
use datafusion::parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use datafusion::parquet::schema::types::ColumnDescPtr;

/// Rows per data page (the Arrow writer's default page row limit).
const PAGE_ROWS: usize = 20_000;

/// Bit-packed groups of eight values per run header at most (the Arrow writer's limit, a
/// one-byte header).
const MAX_GROUPS: usize = 63;

/// A column chunk to write: every row's key into `texts` (`None` for null), the texts
/// (possibly listing the same text twice: they are merged), and whether to record min/max
/// statistics.
pub struct DictionaryColumn<'a> {
    pub keys: &'a [Option<u32>],
    pub texts: &'a [&'a str],
    pub statistics: bool,
}

/// Writes the chunk's bytes (dictionary page, then data pages, Snappy-compressed, with
/// headers) into `sink`, cleared first; returns what `append_column` needs to know of it
/// (offsets are from the start of `sink`).
pub fn encode(
    descr: ColumnDescPtr,
    col: &DictionaryColumn,
    sink: &mut Vec<u8>,
) -> Result<ColumnCloseResult> {
    let nullable = descr.max_def_level() > 0;
    if descr.max_rep_level() > 0 {
        return Err(ParquetError::General(format!(
            "dictionary chunk of repeated column {}",
            descr.path()
        )));
    }
    // Merge equal texts: each distinct text once, in first-seen order.
    let mut distinct: Vec<&str> = Vec::with_capacity(col.texts.len());
    let mut at: HashMap<&str, u32> = HashMap::with_capacity(col.texts.len());
    let remap: Vec<u32> = col
        .texts
        .iter()
        .map(|t| {
            *at.entry(t).or_insert_with(|| {
                distinct.push(t);
                (distinct.len() - 1) as u32
            })
        })
        .collect();
    let mut used = vec![false; distinct.len()];
    let mut nulls = 0u64;
    let keys: Vec<Option<u32>> = col
        .keys
        .iter()
        .map(|k| {
            let k = k.map(|k| remap[k as usize]);
            match k {
                Some(k) => used[k as usize] = true,
                None => nulls += 1,
            }
            k
        })
        .collect();
    if !nullable && nulls > 0 {
        return Err(ParquetError::General(format!(
            "null in the required column {}",
            descr.path()
        )));
    }

    sink.clear();
    let mut tracked = TrackedWrite::new(&mut *sink);
    let mut uncompressed = 0u64;
    let mut data_page_offset = None;
    let mut page_locations = Vec::new();
    {
        let mut pages = SerializedPageWriter::new(&mut tracked);
        let mut snappy = snap::raw::Encoder::new();
        let mut dict = Vec::new();
        for t in &distinct {
            dict.extend_from_slice(&(t.len() as u32).to_le_bytes());
            dict.extend_from_slice(t.as_bytes());
        }
        let dict_page = Page::DictionaryPage {
            buf: snappy_bytes(&mut snappy, &dict),
            num_values: distinct.len() as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let spec = pages.write_page(CompressedPage::new(dict_page, dict.len()))?;
        uncompressed += spec.uncompressed_size as u64;
        let width = bit_width(distinct.len().saturating_sub(1) as u64);
        let mut values = Vec::with_capacity(PAGE_ROWS);
        for page in keys.chunks(PAGE_ROWS) {
            let mut buf = Vec::new();
            if nullable {
                let levels: Vec<u32> = page.iter().map(|k| u32::from(k.is_some())).collect();
                let mut enc = Vec::new();
                rle_hybrid(&levels, 1, &mut enc);
                buf.extend_from_slice(&(enc.len() as u32).to_le_bytes());
                buf.extend_from_slice(&enc);
            }
            values.clear();
            values.extend(page.iter().flatten());
            buf.push(width);
            rle_hybrid(&values, width, &mut buf);
            let spec = pages.write_page(data_page(
                &mut snappy,
                &buf,
                page.len(),
                Encoding::RLE_DICTIONARY,
            ))?;
            data_page_offset.get_or_insert(spec.offset);
            page_locations.push(PageLocation {
                offset: spec.offset as i64,
                compressed_page_size: spec.bytes_written as i32,
                first_row_index: (page_locations.len() * PAGE_ROWS) as i64,
            });
            uncompressed += spec.uncompressed_size as u64;
        }
        pages.close()?;
    }
    tracked.into_inner()?;
    let mut meta = ColumnChunkMetaData::builder(descr.clone())
        .set_compression(Compression::SNAPPY)
        .set_encodings_mask(EncodingMask::new_from_encodings(
            [Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY].iter(),
        ))
        .set_num_values(keys.len() as i64)
        .set_total_compressed_size(sink.len() as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_dictionary_page_offset(Some(0))
        .set_data_page_offset(data_page_offset.unwrap_or(0) as i64);
    if col.statistics {
        let mut live = distinct
            .iter()
            .zip(&used)
            .filter(|(_, &u)| u)
            .map(|(t, _)| *t);
        let first = live.next();
        let (min, max) = live.fold((first, first), |(lo, hi), t| {
            (lo.min(Some(t)), hi.max(Some(t)))
        });
        meta = meta.set_statistics(Statistics::byte_array(
            min.map(|t| ByteArray::from(t.as_bytes().to_vec())),
            max.map(|t| ByteArray::from(t.as_bytes().to_vec())),
            None,
            Some(nulls),
            false,
        ));
    }
    finished(sink.len(), keys.len(), meta.build()?, page_locations)
}

/// What `append_column` needs to know of a written chunk (`bytes` long, of `rows` rows):
/// its metadata and its offset index (no column index, no bloom filter).
pub(super) fn finished(
    bytes: usize,
    rows: usize,
    metadata: ColumnChunkMetaData,
    page_locations: Vec<PageLocation>,
) -> Result<ColumnCloseResult> {
    let close = ColumnCloseResult {
        bytes_written: bytes as u64,
        rows_written: rows as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        // The file's other columns have one, and a file has one for every column or none.
        offset_index: Some(OffsetIndexMetaData {
            page_locations,
            unencoded_byte_array_data_bytes: None,
        }),
    };
    Ok(close)
}

/// The bytes of a chunk written into a buffer, as `append_column` reads them: the buffer is
/// the caller's, reused from chunk to chunk. (A new buffer per chunk was grown page by page
/// and faulted in again for every chunk; reused, a 188 MB ingest took ~100K page faults
/// instead of ~102K, and a 1.9 GB one 1.4 % less CPU, with no measurable wall-time change.)
pub struct ChunkBytes<'a>(pub &'a [u8]);

impl Length for ChunkBytes<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl<'a> ChunkReader for ChunkBytes<'a> {
    type T = &'a [u8];

    fn get_read(&self, start: u64) -> Result<&'a [u8]> {
        self.0
            .get(start as usize..)
            .ok_or_else(|| ParquetError::EOF(format!("chunk read at {start}")))
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        let start = start as usize;
        start
            .checked_add(length)
            .and_then(|end| self.0.get(start..end))
            .map(Bytes::copy_from_slice)
            .ok_or_else(|| ParquetError::EOF(format!("chunk read of {length} at {start}")))
    }
}

/// `buf` compressed with `snappy`. (The encoder is reused for its tables; compressing into
/// a reused buffer and copying out took more instructions than `compress_vec`'s new buffer.)
fn snappy_bytes(snappy: &mut snap::raw::Encoder, buf: &[u8]) -> Bytes {
    Bytes::from(
        snappy
            .compress_vec(buf)
            .expect("snappy compresses any input of this size"),
    )
}

/// A version 1 data page of `num_values` values of a flat column: `buf` (the definition
/// levels if any, then the values in `encoding`) compressed with `snappy`.
pub(super) fn data_page(
    snappy: &mut snap::raw::Encoder,
    buf: &[u8],
    num_values: usize,
    encoding: Encoding,
) -> CompressedPage {
    let page = Page::DataPage {
        buf: snappy_bytes(snappy, buf),
        num_values: num_values as u32,
        encoding,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    CompressedPage::new(page, buf.len())
}

/// Bits to write `max` (at least one).
fn bit_width(max: u64) -> u8 {
    (64 - max.leading_zeros()).max(1) as u8
}

/// `v` as a ULEB128 varint.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `values` (each below 2^`width`) in Parquet's RLE / bit-packing hybrid: runs of
/// eight or more equal values as RLE runs, the rest bit-packed in groups of eight (the
/// last group padded with zeros, which the reader ignores past the page's value count).
pub fn rle_hybrid(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let value_bytes = usize::from(width).div_ceil(8);
    let run_at = |i: usize| -> usize {
        let v = values[i];
        values[i..].iter().take_while(|&&x| x == v).count()
    };
    let mut i = 0;
    while i < values.len() {
        let run = run_at(i);
        if run >= 8 {
            varint((run as u64) << 1, out);
            out.extend_from_slice(&values[i].to_le_bytes()[..value_bytes]);
            i += run;
            continue;
        }
        // Bit-packed groups until a run of eight or more starts at a group's boundary.
        let mut groups = 0;
        let start = i;
        while groups < MAX_GROUPS && i < values.len() && (groups == 0 || run_at(i) < 8) {
            i = (i + 8).min(values.len());
            groups += 1;
        }
        varint(((groups as u64) << 1) | 1, out);
        let mut acc: u64 = 0;
        let mut bits = 0u32;
        for k in 0..groups * 8 {
            let v = values.get(start + k).copied().unwrap_or(0);
            acc |= u64::from(v) << bits;
            bits += u32::from(width);
            while bits >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                bits -= 8;
            }
        }
        debug_assert_eq!(bits, 0, "eight values fill whole bytes");
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunk_test_support::{byte_array_column, one_column_file, texts};
    use super::*;

    /// Reads the hybrid back (a plain reading of the format, for the tests).
    fn read_hybrid(mut b: &[u8], width: u8, n: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let value_bytes = usize::from(width).div_ceil(8);
        while out.len() < n {
            let mut header = 0u64;
            let mut shift = 0;
            loop {
                let c = b[0];
                b = &b[1..];
                header |= u64::from(c & 0x7f) << shift;
                shift += 7;
                if c & 0x80 == 0 {
                    break;
                }
            }
            if header & 1 == 0 {
                let mut v = [0u8; 4];
                v[..value_bytes].copy_from_slice(&b[..value_bytes]);
                b = &b[value_bytes..];
                for _ in 0..header >> 1 {
                    out.push(u32::from_le_bytes(v));
                }
            } else {
                let count = (header >> 1) as usize * 8;
                let bytes = count * usize::from(width) / 8;
                let (packed, rest) = b.split_at(bytes);
                b = rest;
                let mut acc = 0u64;
                let mut bits = 0u32;
                let mut it = packed.iter();
                for _ in 0..count {
                    while bits < u32::from(width) {
                        acc |= u64::from(*it.next().unwrap()) << bits;
                        bits += 8;
                    }
                    out.push((acc & ((1u64 << width) - 1)) as u32);
                    acc >>= width;
                    bits -= u32::from(width);
                }
            }
        }
        assert!(b.is_empty(), "bytes left over");
        out.truncate(n);
        out
    }

    #[test]
    fn the_hybrid_reads_back_as_written() {
        let mut cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![5; 8],
            vec![5; 7],
            (0..100).map(|i| i % 3).collect(),
            (0..1000).map(|i| i / 10).collect(),
            (0..1000).map(|i| i / 9 % 5).collect(),
        ];
        // Runs of every length next to mixed values, at every offset into a group.
        for run in 1..20 {
            for before in 0..10 {
                let mut v: Vec<u32> = (0..before).map(|i| i % 2).collect();
                v.extend(std::iter::repeat_n(7, run));
                v.extend([1, 2, 3]);
                cases.push(v);
            }
        }
        // More than MAX_GROUPS groups of mixed values.
        cases.push((0..2000).map(|i| (i * 7919) % 13).collect());
        for v in cases {
            let max = v.iter().copied().max().unwrap_or(0);
            for width in [bit_width(u64::from(max)), 9, 17] {
                let mut out = Vec::new();
                rle_hybrid(&v, width, &mut out);
                assert_eq!(read_hybrid(&out, width, v.len()), v, "width {width}");
            }
        }
    }

    #[test]
    fn widths_fit_the_largest_key() {
        assert_eq!(bit_width(0), 1);
        assert_eq!(bit_width(1), 1);
        assert_eq!(bit_width(2), 2);
        assert_eq!(bit_width(255), 8);
        assert_eq!(bit_width(256), 9);
    }

    /// A row group's min and max, as bytes.
    type MinMax = Option<(Vec<u8>, Vec<u8>)>;

    /// Writes `col` as the one column of a file, reads it back: the texts, by row, and the
    /// row group's min/max statistics.
    fn round_trip(col: &DictionaryColumn, nullable: bool) -> (Vec<Option<String>>, MinMax) {
        use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let file = one_column_file(nullable, |descr, sink| encode(descr, col, sink));
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let stats = reader
            .metadata()
            .row_group(0)
            .column(0)
            .statistics()
            .map(|s| {
                (
                    s.min_bytes_opt().unwrap().to_vec(),
                    s.max_bytes_opt().unwrap().to_vec(),
                )
            });
        (texts(reader), stats)
    }

    #[test]
    fn a_chunk_reads_back_as_its_keys_say() {
        // 300 texts (9-bit keys), some listed twice; 45,000 rows (three pages) of runs,
        // mixed keys and nulls.
        let owned: Vec<String> = (0..300).map(|i| format!("id-{}", i % 280)).collect();
        let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
        let keys: Vec<Option<u32>> = (0..45_000u32)
            .map(|i| match i % 1000 {
                0..=399 => Some(i / 1000 % 300),
                400..=449 => None,
                _ => Some((i * 7919) % 300),
            })
            .collect();
        let col = DictionaryColumn {
            keys: &keys,
            texts: &texts,
            statistics: true,
        };
        let (back, stats) = round_trip(&col, true);
        let expected: Vec<Option<String>> = keys
            .iter()
            .map(|k| k.map(|k| owned[k as usize].clone()))
            .collect();
        assert_eq!(back, expected);
        let used: Vec<&str> = keys.iter().flatten().map(|&k| texts[k as usize]).collect();
        let (min, max) = (used.iter().min().unwrap(), used.iter().max().unwrap());
        assert_eq!(
            stats,
            Some((min.as_bytes().to_vec(), max.as_bytes().to_vec()))
        );

        // A required column of one text, and of two texts whose keys alternate.
        for keys in [
            vec![Some(0); 25_000],
            (0..25_001).map(|i| Some(i % 2)).collect(),
        ] {
            let col = DictionaryColumn {
                keys: &keys,
                texts: &["a", "b"],
                statistics: false,
            };
            let (back, stats) = round_trip(&col, false);
            let expected: Vec<Option<String>> = keys
                .iter()
                .map(|k| k.map(|k| ["a", "b"][k as usize].to_string()))
                .collect();
            assert_eq!(back, expected);
            assert_eq!(stats, None);
        }
    }

    #[test]
    fn a_null_in_a_required_column_is_an_error() {
        let descr = byte_array_column(datafusion::parquet::basic::Repetition::REQUIRED);
        let col = DictionaryColumn {
            keys: &[Some(0), None],
            texts: &["a"],
            statistics: false,
        };
        assert!(encode(descr, &col, &mut Vec::new()).is_err());
    }
}
