//! The `events` table's batches: built in parallel, a batch of [`EVENTS_BATCH_ROWS`] rows
//! at a time, with its id columns (root, session, turn, type, voice, file, source) also
//! given as dictionary keys for the hand-written dictionary chunks of
//! [`super::write::write_events_parts`].

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, TimestampMicrosecondArray};
use rayon::prelude::*;

use super::batch::{batch, i, so, t};
use super::EVENTS_BATCH_ROWS;
use crate::error::Result;
use runlog_core::event::Voice;
use runlog_core::ingest::Ingested;
use runlog_core::table::{Table, EVENTS_COLUMNS};

/// The `events` table of an ingest, in (root, seq) order, in batches.
pub fn events_batches(ing: &Ingested) -> Result<Vec<RecordBatch>> {
    events_batches_sized(ing, EVENTS_BATCH_ROWS)
}

/// The `events` table in batches of at most `rows` rows.
pub fn events_batches_sized(ing: &Ingested, rows: usize) -> Result<Vec<RecordBatch>> {
    let cols = EventColumns::of(ing);
    let all = cols.all_events(ing);
    // Batches are independent: build them in parallel.
    all.par_chunks(rows.max(1))
        .map(|chunk| cols.batch(chunk))
        .collect()
}

/// What the `events` table's columns are made of besides the events themselves.
pub(super) struct EventColumns<'a> {
    names: Vec<&'a str>,
    formats: Vec<&'a str>,
}

/// The `events` columns written as dictionary chunks from their keys ([`EventColumns::keys`]).
pub(super) const EVENTS_KEYED_COLUMNS: &[&str] =
    &["root", "session", "turn", "type", "voice", "file", "source"];

impl<'a> EventColumns<'a> {
    pub(super) fn of(ing: &'a Ingested) -> Self {
        EventColumns {
            names: ing.file_names(),
            formats: ing.files.iter().map(|f| f.format.as_str()).collect(),
        }
    }

    /// Every event, in table order (root, then seq).
    pub(super) fn all_events(&self, ing: &'a Ingested) -> Vec<&'a runlog_core::event::Event> {
        ing.agents.iter().flat_map(|a| &a.events).collect()
    }

    fn batch(&self, chunk: &[&runlog_core::event::Event]) -> Result<RecordBatch> {
        let (names, formats) = (&self.names, &self.formats);
        batch(
            Table::Events,
            vec![
                exact(chunk, |e| Some(e.root.as_str())),
                exact(chunk, |e| Some(e.session.as_str())),
                exact(chunk, |e| e.turn.as_deref()),
                i(chunk.iter().map(|e| e.seq as i64)),
                t(chunk.iter().map(|e| e.ts)),
                exact(chunk, |e| Some(e.kind.as_str())),
                exact(chunk, |e| Some(Voice::of(&e.kind).as_str())),
                exact(chunk, |e| Some(names[e.file as usize])),
                i(chunk.iter().map(|e| e.line as i64)),
                exact(chunk, |e| Some(e.data.as_str())),
                exact(chunk, |e| Some(formats[e.file as usize])),
            ],
        )
    }

    /// The columns of `chunk` written through the Arrow column writers, by name: `seq`, `ts`,
    /// `line` (the id columns and `data` are written as chunks of their own).
    pub(super) fn unkeyed(
        &self,
        chunk: &[&runlog_core::event::Event],
    ) -> [(&'static str, ArrayRef); 3] {
        let n = chunk.len();
        let (mut seq, mut ts, mut line) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for e in chunk {
            seq.push(e.seq as i64);
            ts.push(e.ts);
            line.push(e.line as i64);
        }
        [
            ("seq", Arc::new(Int64Array::from(seq)) as ArrayRef),
            (
                "ts",
                Arc::new(TimestampMicrosecondArray::from(ts).with_timezone("UTC")),
            ),
            ("line", Arc::new(Int64Array::from(line))),
        ]
    }

    /// Every row's key of every id column of `chunk` (`EVENTS_KEYED_COLUMNS`), with the
    /// texts the keys point at, in one pass over the events.
    pub(super) fn keys(&self, chunk: &[&'a runlog_core::event::Event]) -> EventKeys<'a> {
        use runlog_core::event::Kind;
        let n = chunk.len();
        let [mut roots, mut sessions, mut turns, mut kinds] = [(); 4].map(|_| IdKeys::default());
        let mut keys: [Vec<Option<u32>>; 6] = Default::default();
        for column in &mut keys[..4] {
            column.reserve_exact(n);
        }
        keys[5].reserve_exact(n);
        for e in chunk {
            keys[0].push(Some(roots.key(&e.root)));
            keys[1].push(Some(sessions.key(&e.session)));
            keys[2].push(e.turn.as_ref().map(|t| turns.key(t)));
            keys[3].push(Some(kinds.key(&e.kind)));
            keys[5].push(Some(e.file));
        }
        // A voice per type: each type's voice looked up once.
        let voice_of_kind: Vec<u32> = kinds
            .texts
            .iter()
            .map(|&t| {
                let v = Voice::of_kind(Kind::of(t), t);
                ALL_VOICES
                    .iter()
                    .position(|&x| x == v)
                    .expect("every voice") as u32
            })
            .collect();
        keys[4] = keys[3]
            .iter()
            .map(|k| k.map(|k| voice_of_kind[k as usize]))
            .collect();
        EventKeys {
            keys,
            texts: [
                roots.texts,
                sessions.texts,
                turns.texts,
                kinds.texts,
                ALL_VOICES.iter().map(|v| v.as_str()).collect(),
                self.names.clone(),
                self.formats.clone(),
            ],
        }
    }
}

/// The keys of the id columns of some events, in the order of `EVENTS_KEYED_COLUMNS`, and
/// the texts they point at (see [`EventColumns::keys`]). `file` and `source` share their
/// keys (the file's index): the last column's keys are the sixth's.
pub(super) struct EventKeys<'a> {
    keys: [Vec<Option<u32>>; 6],
    texts: [Vec<&'a str>; 7],
}

impl EventKeys<'_> {
    /// The dictionary column `name` (one of `EVENTS_KEYED_COLUMNS`).
    pub(super) fn column(&self, name: &str) -> super::dictionary_chunk::DictionaryColumn<'_> {
        let i = EVENTS_KEYED_COLUMNS
            .iter()
            .position(|&c| c == name)
            .expect("an id column");
        super::dictionary_chunk::DictionaryColumn {
            keys: &self.keys[i.min(5)],
            texts: &self.texts[i],
            statistics: EVENTS_COLUMNS.iter().any(|c| c.name == name && !c.unpruned),
        }
    }
}

/// Every voice: the texts of the `voice` dictionary.
const ALL_VOICES: [Voice; 10] = [
    Voice::Lifecycle,
    Voice::Assistant,
    Voice::Reasoning,
    Voice::Progress,
    Voice::Log,
    Voice::Tool,
    Voice::Model,
    Voice::Interaction,
    Voice::Terminal,
    Voice::Unknown,
];

/// The keys of an id column written as a dictionary. Ids are shared pointers (see
/// [`runlog_core::event::Id`]), and consecutive events mostly name the same one, so a row costs a
/// pointer comparison; equal texts behind different pointers (ids of different files) are
/// listed twice, which the dictionary chunk merges.
struct IdKeys<'a> {
    index: ahash::AHashMap<*const u8, u32>,
    texts: Vec<&'a str>,
    last: (*const u8, u32),
}

impl Default for IdKeys<'_> {
    fn default() -> Self {
        IdKeys {
            index: ahash::AHashMap::new(),
            texts: Vec::new(),
            last: (std::ptr::null(), 0),
        }
    }
}

impl<'a> IdKeys<'a> {
    #[inline]
    fn key(&mut self, id: &'a runlog_core::event::Id) -> u32 {
        let p = id.as_ptr();
        if p != self.last.0 {
            let next = self.texts.len() as u32;
            let texts = &mut self.texts;
            let k = *self.index.entry(p).or_insert_with(|| {
                texts.push(id.as_str());
                next
            });
            self.last = (p, k);
        }
        self.last.1
    }
}

/// A string column of events, its buffers allocated once at their exact size (growing
/// them by doubling copied and touched up to twice the memory), as `so` does.
fn exact<'e>(
    chunk: &[&'e runlog_core::event::Event],
    get: impl Fn(&'e runlog_core::event::Event) -> Option<&'e str>,
) -> ArrayRef {
    so(chunk.iter().map(|&e| get(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{schema, write_events_parts};
    use datafusion::arrow::compute::concat_batches;
    use std::fs;

    #[test]
    fn events_table_is_the_same_whatever_the_batch_size() {
        let mut log = String::new();
        for root in ["b", "a", "c"] {
            for seq in 1..=40 {
                log.push_str(&format!(
                    "{{\"seq\":{seq},\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"{root}\",\"session\":\"{root}\",\"type\":\"log\",\"data\":{{\"n\":{seq}}}}}\n"
                ));
            }
        }
        let fr =
            runlog_core::ingest::read_stream(0, "x", log.as_bytes(), &Default::default()).unwrap();
        let ing = runlog_core::ingest::assemble(vec![fr]);
        let whole = |rows| {
            let b = events_batches_sized(&ing, rows).unwrap();
            if rows < 120 {
                assert_eq!(b.len(), 120usize.div_ceil(rows));
            }
            concat_batches(&schema(Table::Events), &b).unwrap()
        };
        let reference = whole(EVENTS_BATCH_ROWS);
        assert_eq!(reference.num_rows(), 120);
        for rows in [1, 3, 100] {
            assert_eq!(whole(rows), reference, "batch size {rows}");
        }
    }

    #[test]
    fn written_events_read_back_as_the_plain_table() {
        use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        // Two files naming the same roots (equal ids behind different pointers), turns and
        // none, listed and unlisted types: every id column's dictionary case.
        let mut reads = Vec::new();
        for (f, name) in ["one.jsonl", "two.jsonl"].iter().enumerate() {
            let mut log = String::new();
            for (r, root) in ["b", "a", "c"].iter().enumerate() {
                for k in 1..=30u64 {
                    let seq = k * 2 + f as u64;
                    let kind = ["text/delta", "log", "tool/call", "x/new", "agent/idle"]
                        [(k as usize + r) % 5];
                    let turn = if k % 3 == 0 {
                        String::new()
                    } else {
                        format!(",\"turn\":\"t{}\"", k / 4)
                    };
                    let session = if k % 7 == 0 {
                        format!("{root}/sub")
                    } else {
                        root.to_string()
                    };
                    log.push_str(&format!(
                        "{{\"seq\":{seq},\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"{root}\",\"session\":\"{session}\"{turn},\"type\":\"{kind}\",\"data\":{{\"n\":{seq}}}}}\n"
                    ));
                }
            }
            let fr = runlog_core::ingest::read_stream(
                f as u32,
                name,
                log.as_bytes(),
                &Default::default(),
            )
            .unwrap();
            reads.push(fr);
        }
        let ing = runlog_core::ingest::assemble(reads);
        let plain = concat_batches(&schema(Table::Events), &events_batches(&ing).unwrap()).unwrap();
        assert_eq!(plain.num_rows(), 180);
        let dir = std::env::temp_dir().join(format!("runlog-keyed-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let files = write_events_parts(&dir, "t", &ing, Some(4)).unwrap();
        let mut back = Vec::new();
        for f in &files {
            let file = fs::File::open(dir.join(f)).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap();
            for b in reader {
                let b = b.unwrap();
                assert_eq!(b.schema(), schema(Table::Events), "stored schema");
                back.push(b);
            }
        }
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            concat_batches(&schema(Table::Events), &back).unwrap(),
            plain
        );
    }
}
