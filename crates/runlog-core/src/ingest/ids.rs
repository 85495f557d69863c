//! Shared ids: one [`Id`] per distinct root, session, turn and type of a file (or of a
//! spill partition read back), and the payload arena events' data is copied into.

use crate::decode::Envelope;
use crate::event::{Data, DataArena, Event, Id, Kind, PayloadIndex};

/// The ids of one file's events, shared: every event naming the same root, session, turn or
/// type gets the same [`Id`] (a pointer), made once. Events of an agent mostly name the
/// root, session and turn of the event before, so each is compared with the last one
/// handed out before it is looked up. Their payloads are copied into shared blocks
/// ([`DataArena`]), not one allocation each.
#[derive(Default)]
pub struct Ids {
    /// The last root, session and turn handed out ([`Ids::ROOT`], [`Ids::SESSION`],
    /// [`Ids::TURN`]).
    last: [Option<Id>; 3],
    /// The listed event types, by [`Kind`], made on first use.
    kinds: Vec<Option<Id>>,
    known: std::collections::HashSet<Id, foldhash::fast::RandomState>,
    /// The blocks the events' payloads are copied into.
    data: DataArena,
}

impl Ids {
    const ROOT: usize = 0;
    const SESSION: usize = 1;
    const TURN: usize = 2;

    /// The event of an envelope, with shared ids.
    pub fn event(&mut self, env: &Envelope, file: u32, line: u64) -> Event {
        let k = Kind::of(env.kind);
        let root = self.id(Self::ROOT, env.root);
        // An agent's own session is named like its root: the same shared id, without a
        // look-up (on logs whose agents interleave, the last session is mostly another's).
        let session = if env.session == env.root {
            root.clone()
        } else {
            self.id(Self::SESSION, env.session)
        };
        Event {
            seq: env.seq,
            ts: env.ts,
            root,
            session,
            turn: env.turn.map(|t| self.id(Self::TURN, t)),
            kind: self.kind(k, env.kind),
            data: self.data.push(env.data),
            file,
            line,
            index: PayloadIndex::of_members(k, env.data, &env.members),
        }
    }

    /// The shared session id of an event read back from a spill partition (see
    /// [`crate::ingest::spill`]; its root's id is the partition's own).
    pub(crate) fn spilled_session(&mut self, text: &str) -> Id {
        self.id(Self::SESSION, text)
    }

    /// The shared turn id of an event read back from a spill partition.
    pub(crate) fn spilled_turn(&mut self, text: &str) -> Id {
        self.id(Self::TURN, text)
    }

    /// The shared type id of an event read back from a spill partition: of kind `k`, named
    /// `text` (for [`Kind::Other`]) or by the kind.
    pub(crate) fn spilled_kind(&mut self, k: Kind, text: Option<&str>) -> Id {
        self.kind(k, text.or(k.name()).unwrap_or_default())
    }

    /// The payload of an event read back from a spill partition, in the shared blocks.
    pub(crate) fn data(&mut self, text: &str) -> Data {
        self.data.push(text)
    }

    fn id(&mut self, slot: usize, text: &str) -> Id {
        if let Some(last) = &self.last[slot] {
            if crate::event::same_bytes(last.as_bytes(), text.as_bytes()) {
                return last.clone();
            }
        }
        let id = self.shared(text);
        self.last[slot] = Some(id.clone());
        id
    }

    fn shared(&mut self, text: &str) -> Id {
        if let Some(id) = self.known.get(text) {
            return id.clone();
        }
        let id = Id::from(text);
        self.known.insert(id.clone());
        id
    }

    /// The shared id of type `text`, whose kind is `k`.
    fn kind(&mut self, k: Kind, text: &str) -> Id {
        if k == Kind::Other {
            return self.shared(text);
        }
        let i = k as usize;
        if self.kinds.len() <= i {
            self.kinds.resize(i + 1, None);
        }
        self.kinds[i].get_or_insert_with(|| Id::from(text)).clone()
    }
}
