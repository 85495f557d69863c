//! [`Data`], the type of `Event::data`: an event's payload text, kept in blocks that many
//! events share, written by a [`DataArena`].
//!
//! As a `String` per event, every payload was one allocation and one free: on a persisted
//! log about 900K small allocations per 192 MB, rounded up to the allocator's size classes,
//! and 24 bytes of `Event`. The reader ([`crate::ingest::Ids`]) now copies each payload into
//! the current block of its arena; the event holds the block (one counted reference, as an
//! `Arc` does) and where its text is in it: 16 bytes, one copy, no allocation per event. A
//! block is freed when the last event holding it is dropped.
//!
//! `Data` derefs to `&str`, compares, hashes, prints and formats as its text, so callers read
//! it as they read the `String` before. Text from elsewhere (importers, the general decoder,
//! tests) becomes a block of its own with `Data::from`, or is written straight into one
//! with a [`DataBuf`] (an importer's payload written member by member: no copy after).

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// The start of a block; its `cap` bytes of text follow.
#[repr(C)]
struct Header {
    /// [`Data`] values (and the writing [`DataArena`]) holding the block.
    refs: AtomicUsize,
    /// Bytes of text the block has room for (set once, when it is made).
    cap: usize,
}

const HEADER: usize = std::mem::size_of::<Header>();

/// [`Data::len`] of a payload longer than `u32::MAX - 1` bytes, which has a block of its
/// own: the whole block (`cap` bytes) is its text.
const WHOLE_BLOCK: u32 = u32::MAX;

/// Blocks of an arena start at this size and double up to [`MAX_BLOCK`], so that a small
/// file (or piece) holds little spare room and a large one few blocks.
const FIRST_BLOCK: usize = 4 << 10;
const MAX_BLOCK: usize = 256 << 10;

/// The layout of a block of `cap` bytes of text, or `None` when it cannot be allocated.
fn layout(cap: usize) -> Option<Layout> {
    Layout::from_size_align(HEADER.checked_add(cap)?, std::mem::align_of::<Header>()).ok()
}

/// A new block of `cap` bytes of text, held once (by the caller).
fn new_block(cap: usize) -> NonNull<Header> {
    let Some(layout) = layout(cap) else {
        // As `Vec` does when a size overflows: no input can ask for it (a payload is part
        // of a line held in memory already).
        panic!("a payload of {cap} bytes does not fit in memory")
    };
    // SAFETY: the layout is not zero-sized (it holds the header).
    let p = unsafe { alloc::alloc(layout) }.cast::<Header>();
    let Some(p) = NonNull::new(p) else {
        alloc::handle_alloc_error(layout)
    };
    // SAFETY: `p` is a fresh allocation, aligned for and large enough for a header.
    unsafe {
        p.as_ptr().write(Header {
            refs: AtomicUsize::new(1),
            cap,
        })
    };
    p
}

/// Where the text of a block starts.
fn text_of(block: NonNull<Header>) -> *mut u8 {
    // SAFETY: the text follows the header within the block's allocation.
    unsafe { block.as_ptr().cast::<u8>().add(HEADER) }
}

/// Adds a holder of `block`, which the caller holds (so it is alive).
fn hold(block: NonNull<Header>) {
    // SAFETY: the block is alive while the caller holds it; the header is only read.
    let old = unsafe { block.as_ref() }
        .refs
        .fetch_add(1, Ordering::Relaxed);
    // As `Arc`: a count this high means clones leaked without end; stop before it wraps.
    if old > isize::MAX as usize {
        std::process::abort();
    }
}

/// Drops one holder of `block` (the caller's), freeing it with the last.
fn release(block: NonNull<Header>) {
    // SAFETY: the caller holds the block, so it is alive until this decrement.
    let header = unsafe { block.as_ref() };
    if header.refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    // Every other holder's use of the block happened before its decrement (as `Arc`).
    fence(Ordering::Acquire);
    let cap = header.cap;
    let layout = layout(cap).expect("the layout the block was made with");
    // SAFETY: the last holder is gone; the block was allocated with this layout.
    unsafe { alloc::dealloc(block.as_ptr().cast(), layout) };
}

/// An event's payload text (JSON), shared with other events' in one block.
pub struct Data {
    block: NonNull<Header>,
    start: u32,
    /// Bytes of text, or [`WHOLE_BLOCK`].
    len: u32,
}

// SAFETY: the text a `Data` points at is written once, before the `Data` exists, and never
// again (an arena writes only past every text it handed out); the count is atomic. So a
// `Data` is as shareable and sendable as an `Arc<str>`.
unsafe impl Send for Data {}
// SAFETY: as for `Send` above: the text is never written again once shared.
unsafe impl Sync for Data {}

impl Data {
    /// A block of its own holding `text`.
    fn own(text: &str) -> Data {
        let n = text.len();
        let block = new_block(n);
        // SAFETY: the block has room for `n` bytes of text, and no one else holds it.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), text_of(block), n) };
        let len = u32::try_from(n).ok().filter(|&l| l != WHOLE_BLOCK);
        Data {
            block,
            start: 0,
            len: len.unwrap_or(WHOLE_BLOCK),
        }
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        let len = if self.len == WHOLE_BLOCK {
            // SAFETY: held, so alive; `cap` is never written after the block is made.
            unsafe { self.block.as_ref() }.cap
        } else {
            self.len as usize
        };
        // SAFETY: `start..start + len` of the block's text was written (from a `&str`, so
        // valid UTF-8) before this `Data` was made and is never written again; the block
        // lives while this `Data` holds it.
        unsafe {
            let bytes =
                std::slice::from_raw_parts(text_of(self.block).add(self.start as usize), len);
            std::str::from_utf8_unchecked(bytes)
        }
    }

    /// Asks the CPU to start loading the text's first bytes into its cache, without waiting
    /// for them (a hint: nothing is read, nothing faults). Payloads lie in their blocks in
    /// the order the files were read, while the stages after assembly go through events in
    /// agent order: each payload they read was a cache miss, a wait of ~100 ns. A loop over
    /// events calls this for the event a few places ahead ([`prefetched`]).
    #[inline]
    pub fn prefetch(&self) {
        prefetch_read(text_of(self.block).wrapping_add(self.start as usize));
    }

    /// `part` (a slice of this text, such as a member's value) as a `Data` of its own that
    /// shares this block: one more count on the block instead of an allocation and a copy.
    /// Text that is not part of this one (an unescaped copy) gets a block of its own.
    #[inline]
    pub fn slice(&self, part: &str) -> Data {
        let text = self.as_str();
        let off = (part.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        let within = off <= text.len() && part.len() <= text.len() - off;
        let start = u32::try_from(self.start as usize + off).ok();
        let len = u32::try_from(part.len()).ok().filter(|&l| l != WHOLE_BLOCK);
        match (within, start, len) {
            (true, Some(start), Some(len)) => {
                hold(self.block);
                Data {
                    block: self.block,
                    start,
                    len,
                }
            }
            _ => Data::own(part),
        }
    }
}

/// How many items ahead [`prefetched`] asks for a payload: enough to cover a cache miss
/// behind the work of a few items, few enough that the lines are still cached when used.
const PREFETCH_AHEAD: usize = 8;

/// The items of `items` in order, each yielded after the payload (`data` of it) of the item
/// [`PREFETCH_AHEAD`] places on was asked for ([`Data::prefetch`]).
#[inline]
pub fn prefetched<'a, T>(
    items: &'a [T],
    data: impl Fn(&T) -> &Data + 'a,
) -> impl Iterator<Item = &'a T> + 'a {
    for item in items.iter().take(PREFETCH_AHEAD) {
        data(item).prefetch();
    }
    items.iter().enumerate().map(move |(i, item)| {
        if let Some(ahead) = items.get(i + PREFETCH_AHEAD) {
            data(ahead).prefetch();
        }
        item
    })
}

/// A prefetch of the cache line at `p` into every cache level (`prefetcht0`), where the CPU
/// has one; elsewhere nothing. A hint: `p` need not be valid.
#[inline(always)]
fn prefetch_read(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and cannot fault, whatever the address; SSE (which
    // has the instruction) is part of every x86_64 CPU. (The intrinsic is `unsafe` in older
    // Rust.)
    #[allow(unused_unsafe)]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Drop for Data {
    fn drop(&mut self) {
        release(self.block);
    }
}

impl Clone for Data {
    #[inline]
    fn clone(&self) -> Data {
        hold(self.block);
        Data {
            block: self.block,
            start: self.start,
            len: self.len,
        }
    }
}

impl Deref for Data {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Data {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Data {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Data {
    fn from(text: &str) -> Data {
        Data::own(text)
    }
}

impl From<String> for Data {
    fn from(text: String) -> Data {
        Data::own(&text)
    }
}

impl From<&String> for Data {
    fn from(text: &String) -> Data {
        Data::own(text)
    }
}

impl Default for Data {
    /// `{}`, the payload of an event without one.
    fn default() -> Data {
        Data::own("{}")
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Data {}

impl PartialEq<str> for Data {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Data {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Data {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl std::hash::Hash for Data {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl PartialOrd for Data {
    fn partial_cmp(&self, other: &Data) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Data {
    fn cmp(&self, other: &Data) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// As its text (a JSON string), as a `String` serializes.
impl serde::Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl fmt::Display for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

/// A payload's text written in place: a block of its own, grown as it is written, that
/// becomes a [`Data`] without a copy ([`DataBuf::finish`]).
pub struct DataBuf {
    /// Held once, by this writer only.
    block: NonNull<Header>,
    /// Bytes of text written.
    len: usize,
}

impl DataBuf {
    /// An empty text with room for `cap` bytes.
    pub fn with_capacity(cap: usize) -> DataBuf {
        DataBuf {
            block: new_block(cap),
            len: 0,
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `text`.
    #[inline]
    pub fn push_str(&mut self, text: &str) {
        let n = text.len();
        // SAFETY: the writer holds its block.
        let cap = unsafe { self.block.as_ref() }.cap;
        if cap - self.len < n {
            let want = self
                .len
                .checked_add(n)
                .expect("a payload that fits in memory");
            self.resize(want.max(cap.saturating_mul(2)));
        }
        // SAFETY: `len..len + n` is within the block, which no `Data` holds yet.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), text_of(self.block).add(self.len), n);
        }
        self.len += n;
    }

    /// Gives the block room for exactly `cap` bytes of text (at least those written).
    fn resize(&mut self, cap: usize) {
        debug_assert!(cap >= self.len);
        // SAFETY: the writer holds its block.
        let old_cap = unsafe { self.block.as_ref() }.cap;
        let old = layout(old_cap).expect("the layout the block was made with");
        let Some(new) = layout(cap) else {
            panic!("a payload of {cap} bytes does not fit in memory")
        };
        // SAFETY: the block was allocated with `old`; the new size is not zero (the header)
        // and was checked by `layout`. No one else holds the block: moving it is safe.
        let p = unsafe { alloc::realloc(self.block.as_ptr().cast(), old, new.size()) };
        let Some(p) = NonNull::new(p.cast::<Header>()) else {
            alloc::handle_alloc_error(new)
        };
        // SAFETY: `p` is the block, moved; its header was copied with it.
        unsafe { (*p.as_ptr()).cap = cap };
        self.block = p;
    }

    /// The text written.
    fn as_str(&self) -> &str {
        // SAFETY: `..len` of the block's text was written from `&str`s (valid UTF-8).
        unsafe {
            let bytes = std::slice::from_raw_parts(text_of(self.block), self.len);
            std::str::from_utf8_unchecked(bytes)
        }
    }

    /// The text as a [`Data`], its block trimmed to it; or, when more than an eighth of the
    /// block is left over, copied into a block of its own size (the allocator keeps a block
    /// trimmed by less than half in place, with the room left in it).
    pub fn finish(mut self) -> Data {
        // SAFETY: the writer holds its block.
        let cap = unsafe { self.block.as_ref() }.cap;
        if cap - self.len > self.len / 8 {
            return Data::own(self.as_str());
        }
        if cap != self.len {
            self.resize(self.len);
        }
        let len = u32::try_from(self.len).ok().filter(|&l| l != WHOLE_BLOCK);
        let data = Data {
            block: self.block,
            start: 0,
            len: len.unwrap_or(WHOLE_BLOCK),
        };
        // The writer's hold passes to the `Data`.
        std::mem::forget(self);
        data
    }
}

impl Drop for DataBuf {
    fn drop(&mut self) {
        release(self.block);
    }
}

/// Writes payloads into shared blocks: one arena per stream read (on one thread), each
/// payload copied once into the current block, which the arena holds until it is full.
pub struct DataArena {
    /// The block being written, and the bytes of it written so far.
    block: Option<NonNull<Header>>,
    used: usize,
    /// The size of the next block.
    next: usize,
}

// SAFETY: the arena is the only writer of its block, and writes only past every text it
// handed out; moving it to another thread moves that role with it.
unsafe impl Send for DataArena {}

impl Default for DataArena {
    fn default() -> DataArena {
        DataArena {
            block: None,
            used: 0,
            next: FIRST_BLOCK,
        }
    }
}

impl DataArena {
    /// `text` as a [`Data`] in the arena's current block (a new one when it is full; a
    /// payload larger than a quarter of a block gets a block of its own).
    #[inline]
    pub fn push(&mut self, text: &str) -> Data {
        let n = text.len();
        let block = match self.block {
            // SAFETY: the arena holds its block.
            Some(b) if self.used + n <= unsafe { b.as_ref() }.cap => b,
            _ => {
                if n > MAX_BLOCK / 4 {
                    return Data::own(text);
                }
                self.renew(n)
            }
        };
        // SAFETY: `used..used + n` is within the block and was never handed out: no `Data`
        // reads it, so this is the only access to those bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), text_of(block).add(self.used), n);
        }
        hold(block);
        let data = Data {
            block,
            start: self.used as u32,
            len: n as u32,
        };
        self.used += n;
        data
    }

    /// Leaves the current block to the events holding it and starts one with room for at
    /// least `n` bytes (at most `MAX_BLOCK / 4`).
    #[cold]
    fn renew(&mut self, n: usize) -> NonNull<Header> {
        if let Some(old) = self.block.take() {
            release(old);
        }
        let cap = self.next.max(n);
        self.next = (self.next * 2).min(MAX_BLOCK);
        let b = new_block(cap);
        self.block = Some(b);
        self.used = 0;
        b
    }
}

impl Drop for DataArena {
    fn drop(&mut self) {
        if let Some(b) = self.block.take() {
            release(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetched_yields_every_item_once_in_order() {
        // Shorter than, as long as, and longer than the distance ahead, and empty.
        for n in [
            0,
            1,
            PREFETCH_AHEAD - 1,
            PREFETCH_AHEAD,
            PREFETCH_AHEAD + 1,
            100,
        ] {
            let items: Vec<(usize, Data)> =
                (0..n).map(|i| (i, Data::from(format!("{i}")))).collect();
            let seen: Vec<usize> = prefetched(&items, |x| &x.1).map(|x| x.0).collect();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{n} items");
        }
    }

    #[test]
    fn pushed_texts_read_back_across_blocks_and_outlive_the_arena() {
        let mut arena = DataArena::default();
        let texts: Vec<String> = (0..5000)
            .map(|i| format!("{{\"text\":\"{}ü\"}}", "x".repeat(i % 97)))
            .chain(["".to_string(), "y".repeat(MAX_BLOCK), "{}".to_string()])
            .collect();
        let data: Vec<Data> = texts.iter().map(|t| arena.push(t)).collect();
        drop(arena);
        for (d, t) in data.iter().zip(&texts) {
            assert_eq!(d.as_str(), t);
            assert_eq!(d, t);
        }
        // Clones outlive the originals, on other threads too.
        let clones: Vec<Data> = data.iter().map(Clone::clone).collect();
        drop(data);
        let joined = std::thread::spawn(move || clones.iter().map(|d| d.len()).sum::<usize>())
            .join()
            .unwrap();
        assert_eq!(joined, texts.iter().map(String::len).sum::<usize>());
    }

    #[test]
    fn slices_share_the_block_and_outlive_their_whole() {
        let mut arena = DataArena::default();
        let _before = arena.push("{\"pad\":1}");
        let whole = arena.push("{\"call_id\":\"c-1\",\"name\":\"fs.read\"}");
        let id = &whole.as_str()[12..15];
        let name = &whole.as_str()[25..32];
        let (a, b, empty) = (
            whole.slice(id),
            whole.slice(name),
            whole.slice(&whole[3..3]),
        );
        drop(arena);
        drop(whole);
        assert_eq!(
            (a.as_str(), b.as_str(), empty.as_str()),
            ("c-1", "fs.read", "")
        );
        // Text from elsewhere is copied into a block of its own.
        let other = String::from("unescaped \u{e9}");
        let owned = b.slice(&other);
        drop(other);
        assert_eq!(owned, "unescaped \u{e9}");
        // A slice of a slice is a slice of the block.
        let c = owned.slice(&owned[10..]);
        assert_eq!(c, "\u{e9}");
    }

    #[test]
    fn written_text_reads_back_as_pushed() {
        let mut b = DataBuf::with_capacity(4);
        assert!(b.is_empty());
        let mut want = String::new();
        for i in 0..300 {
            let part = format!("{{\"n\":{i},\"é\":\"{}\"}}", "x".repeat(i % 7));
            b.push_str(&part);
            want.push_str(&part);
        }
        assert_eq!(b.len(), want.len());
        let data = b.finish();
        assert_eq!(data, want);
        let part = data.slice(&data[1..6]);
        drop(data);
        assert_eq!(part, want[1..6]);
        // Kept in its block (exactly full, or trimmed), or copied out of a roomy one.
        for cap in [want.len(), want.len() + 1, want.len() * 2] {
            let mut b = DataBuf::with_capacity(cap);
            b.push_str(&want);
            assert_eq!(b.finish(), want);
        }
        assert_eq!(DataBuf::with_capacity(0).finish(), "");
        drop(DataBuf::with_capacity(64));
    }

    #[test]
    fn owned_data_compares_formats_and_orders_as_its_text() {
        let a = Data::from("{\"a\":1}".to_string());
        let b = DataArena::default().push("{\"a\":1}");
        assert_eq!(a, b);
        assert_eq!(format!("{a}"), "{\"a\":1}");
        assert_eq!(format!("{a:?}"), format!("{:?}", "{\"a\":1}"));
        let smaller = Data::from("{\"a\":0}");
        assert!(smaller < a);
        assert_eq!(a.cmp(&smaller), std::cmp::Ordering::Greater);
        assert_eq!(Data::default(), "{}");
        assert_eq!(Data::from(""), "");
        assert_eq!(std::mem::size_of::<Data>(), 16);
    }
}
