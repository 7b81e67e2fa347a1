//! A collector's routes from its decoded entries: one row per (session, prefix, AS path as
//! decoded, copy) with the bits of the snapshots that saw it (common/routes.py's layout).
//!
//! ingest/routes.py feeds it Arrow batches (decoded dumps, each row with its snapshot's bit,
//! and the current generation's routes with their bits moved to the new numbering) and
//! writes what `take` hands back. A hash table over the route's key in one pass: the SQL
//! aggregate over the same key cost about twice the read of the entries (its list column
//! above all), and this is a hash and a memcmp per entry (a memcmp alone where the entry is
//! the next route, as in a collector's later dumps). Exact: the table compares whole keys,
//! the hash only picks the slot. The table, the routes and their keys outgrow the caches: the
//! merger asks memory for the rows ahead of the one it works on (`prefetch`). On a 9M-entry
//! dump of the generated scale-50 month, best of two: the first `add` 3.7 -> 2.9 s, `finish`
//! 2.1 -> 1.3 s (its sort in two halves on two threads), `take` 2.7 -> 1.5 s (2026-12-02).

/// Bits of a `seen` word (common/routes.py WORD: never the sign bit).
pub(crate) const WORD: usize = 63;

const PATH_VALID: u8 = 1;
const HAS_SET: u8 = 2;
const RAW_VALID: u8 = 4;
const ORIGIN_VALID: u8 = 8;

/// One batch of entries or routes, as raw column pointers (Arrow buffers, offset 0, byte
/// masks for validity and booleans). The caller keeps every buffer alive during `add`.
pub(crate) struct Batch {
    pub n: usize,
    pub peer_asn: *const u32,
    pub ip_off: *const i32,
    pub ip: *const u8,
    pub afi: *const i8,
    pub pfx_off: *const i32,
    pub pfx: *const u8,
    pub path_valid: *const u8,
    pub path_off: *const i32,
    pub path: *const u32,
    pub has_set: *const u8,
    pub raw_valid: *const u8,
    pub raw_off: *const i32,
    pub raw: *const u8,
    pub origin_valid: *const u8,
    pub origin: *const u32,
    /// Entries: each row's snapshot (a bit of the new numbering).
    pub sid: *const i32,
    /// Routes of the current generation: each row's copy and `words_in` words of bits, in the
    /// old numbering (moved by `Merger::map`); null for entries.
    pub copy: *const i16,
    pub words: *const u64,
    pub words_in: usize,
}

#[derive(Clone, Copy)]
struct Route {
    hash: u64,
    key_at: u64,
    lens: [u32; 4],
    peer_asn: u32,
    origin: u32,
    next: u32,
    copy: i16,
    afi: i8,
    flags: u8,
}

pub(crate) struct Merger {
    nw: usize,
    mult: u64,
    shift: u32,
    lo: i8,
    hi: i8,
    /// old bit -> new bit (-1: dropped), for the routes of the current generation
    map: Vec<i32>,
    ident: bool,
    /// one entry per route (copies included), in the order made
    r: Vec<Route>,
    bits: Vec<u64>,
    /// every route's key bytes: peer address, prefix, AS path (4 bytes an ASN), raw path
    arena: Vec<u8>,
    /// open addressing over the routes of copy 0: (hash's top 32 bits << 32) | (route + 1)
    table: Vec<u64>,
    /// the route the last entry found: the next entry is most often the next route (a
    /// collector's dumps list their entries in the same order), found without the table
    last: usize,
    /// whether the last entry's route was not the one after `last` (`add` then prefetches)
    missed: bool,
    /// routes in output order, once `finish` ran; `pos` the next to hand out
    order: Vec<u32>,
    pos: usize,
}

/// A row's fixed fields (its key bytes apart).
#[derive(Clone, Copy)]
struct Row {
    asn: u32,
    afi: i8,
    flags: u8,
    lens: [u32; 4],
}

/// A row's key in its four parts (peer address, prefix, the path's ASNs, raw path).
type Parts<'b> = [&'b [u8]; 4];

/// The hash of a route's key (its slot in the table), from its four parts.
#[inline(always)]
fn key_hash(k: &Row, parts: &Parts) -> u64 {
    let l = k.lens;
    let mut h = fx(fx(fx(0, k.asn as u64), k.afi as u64), ((k.flags & !ORIGIN_VALID) as u64) << 8
                   | (l[0] as u64) << 16 | (l[1] as u64) << 32 | (l[2] as u64) << 48);
    for p in parts {
        h = hash_bytes(h, p);
    }
    h
}

#[inline]
fn fx(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

#[inline(always)]
fn hash_bytes(mut h: u64, b: &[u8]) -> u64 {
    let mut c = b.chunks_exact(8);
    for w in &mut c {
        h = fx(h, u64::from_le_bytes(w.try_into().unwrap()));
    }
    let r = c.remainder();
    if !r.is_empty() {
        let mut t = [0u8; 8];
        t[..r.len()].copy_from_slice(r);
        h = fx(h, u64::from_le_bytes(t) ^ ((r.len() as u64) << 56));
    }
    h
}

impl Merger {
    pub(crate) fn new(nw: usize, mult: u64, bucket_bits: u32, lo: i8, hi: i8) -> Merger {
        Merger {
            nw: nw.max(1),
            mult,
            shift: 32 - bucket_bits,
            lo,
            hi,
            map: vec![],
            ident: true,
            r: vec![],
            bits: vec![],
            arena: vec![],
            table: vec![0; 1 << 16],
            last: usize::MAX,
            missed: true,
            order: vec![],
            pos: 0,
        }
    }

    /// Where the bits of the routes `add` is given next go: old bit -> new bit (-1: dropped).
    pub(crate) fn set_mapping(&mut self, map: Vec<i32>) {
        self.ident = map.iter().enumerate().all(|(o, &n)| n < 0 || n as usize == o);
        self.map = map;
    }

    /// Renumber the bits of every route held (bit o -> map[o], -1 or past the map: dropped)
    /// into `nw` words: the decode pass fed dumps in the order they came, before their
    /// snapshots' places were known.
    pub(crate) fn renumber(&mut self, nw: usize, map: &[i32]) {
        let nw = nw.max(1);
        let mut bits = vec![0u64; self.r.len() * nw];
        for id in 0..self.r.len() {
            for k in 0..self.nw {
                let mut word = self.bits[id * self.nw + k];
                while word != 0 {
                    let o = k * WORD + word.trailing_zeros() as usize;
                    word &= word - 1;
                    if let Some(&n) = map.get(o) {
                        if n >= 0 && (n as usize) < nw * WORD {
                            bits[id * nw + n as usize / WORD] |= 1 << (n as usize % WORD);
                        }
                    }
                }
            }
        }
        self.bits = bits;
        self.nw = nw;
    }

    pub(crate) fn bucket(&self, asn: u32) -> i8 {
        (((asn as u64).wrapping_mul(self.mult) & 0xffff_ffff) >> self.shift) as i8
    }

    pub(crate) fn routes(&self) -> usize {
        self.r.len()
    }

    /// Bytes resident, about (what the caller's memory budget counts): the table, whose every
    /// slot is written, and what the growing vectors use. Their capacity past that is never
    /// touched (a large vector grows by mremap, not by copying), and counting it put rrc01 of the
    /// scale-50 month (9.0M routes: 1.7 GB of capacity, 1.2 GB used) over its feed's 1.5 GB
    /// budget: its merge then read the dumps back, 21 of the 24 s of that month's merges.
    pub(crate) fn bytes(&self) -> usize {
        self.arena.len() + self.table.len() * 8 + self.bits.len() * 8 + self.r.len() * std::mem::size_of::<Route>()
    }

    /// Whether route `r` has the key of row `k` (its parts compared where they lie: equal
    /// lengths, so equal bytes part by part are the equal key).
    fn same(&self, r: &Route, k: &Row, parts: &Parts) -> bool {
        if !(r.peer_asn == k.asn && r.afi == k.afi && (r.flags & !ORIGIN_VALID) == (k.flags & !ORIGIN_VALID) && r.lens == k.lens) {
            return false;
        }
        let mut at = r.key_at as usize;
        parts.iter().all(|p| {
            let same = &self.arena[at..at + p.len()] == *p;
            at += p.len();
            same
        })
    }

    fn slot(&self, h: u64, id: usize) -> u64 {
        (h & 0xffff_ffff_0000_0000) | (id as u64 + 1)
    }

    fn grow(&mut self) {
        let cap = self.table.len() * 2;
        let mut t = vec![0u64; cap];
        let mask = cap - 1;
        for (id, r) in self.r.iter().enumerate() {
            if r.copy != 0 {
                continue;
            }
            let mut i = (r.hash as usize) & mask;
            while t[i] != 0 {
                i = (i + 1) & mask;
            }
            t[i] = self.slot(r.hash, id);
        }
        self.table = t;
    }

    fn push(&mut self, r: Route) -> usize {
        self.r.push(r);
        self.bits.extend(std::iter::repeat_n(0, self.nw));
        self.r.len() - 1
    }

    /// The copy `j` of route `id` (made when missing: same key, no bits).
    fn copy_of(&mut self, mut id: usize, j: i16) -> usize {
        while self.r[id].copy < j {
            if self.r[id].next == 0 {
                let c = self.push(Route { copy: self.r[id].copy + 1, next: 0, ..self.r[id] });
                self.r[id].next = c as u32;
            }
            id = self.r[id].next as usize;
        }
        id
    }

    /// The route of a key, made when new.
    fn find(&mut self, k: &Row, parts: &Parts, origin: u32) -> usize {
        let Row { asn, afi, flags, lens } = *k;
        let pred = self.last.wrapping_add(1);
        if pred < self.r.len() && self.r[pred].copy == 0 && self.same(&self.r[pred], k, parts) {
            self.last = pred;
            self.missed = false;
            return pred;
        }
        self.missed = true;
        let h = key_hash(k, parts);
        let mask = self.table.len() - 1;
        let mut s = (h as usize) & mask;
        loop {
            let t = self.table[s];
            if t == 0 {
                let at = self.arena.len() as u64;
                for p in parts {
                    self.arena.extend_from_slice(p);
                }
                let id = self.push(Route { hash: h, key_at: at, lens, peer_asn: asn, origin, next: 0, copy: 0, afi, flags });
                self.table[s] = self.slot(h, id);
                if self.r.len() * 2 > self.table.len() {
                    self.grow();
                }
                self.last = id;
                return id;
            }
            if (t ^ h) >> 32 == 0 {
                let id = (t & 0xffff_ffff) as usize - 1;
                if self.same(&self.r[id], k, parts) {
                    self.last = id;
                    return id;
                }
            }
            s = (s + 1) & mask;
        }
    }

    /// Row `i` of `b` outside the merger's bucket range: None; else its fixed fields and its
    /// key's four parts (peer address, prefix, the path's ASNs, raw path), in `b`'s buffers.
    ///
    /// # Safety
    /// As `add`'s.
    #[inline(always)]
    unsafe fn row<'b>(&self, b: &'b Batch, i: usize) -> Result<Option<(Row, Parts<'b>)>, String> {
        let asn = *b.peer_asn.add(i);
        let bucket = self.bucket(asn);
        if bucket < self.lo || bucket > self.hi {
            return Ok(None);
        }
        let span = |off: *const i32| (*off.add(i) as usize, *off.add(i + 1) as usize);
        let (i0, i1) = span(b.ip_off);
        let (p0, p1) = span(b.pfx_off);
        let path_valid = *b.path_valid.add(i) != 0;
        let (a0, a1) = if path_valid { span(b.path_off) } else { (0, 0) };
        let raw_valid = *b.raw_valid.add(i) != 0;
        let (r0, r1) = if raw_valid { span(b.raw_off) } else { (0, 0) };
        let lens = [i1 - i0, p1 - p0, a1 - a0, r1 - r0];
        if lens.iter().any(|&l| l > u32::MAX as usize / 4) {
            return Err(format!("a route's key is too long (peer_ip, prefix, as_path, as_path_raw lengths {lens:?})"));
        }
        let parts = [std::slice::from_raw_parts(b.ip.add(i0), i1 - i0), std::slice::from_raw_parts(b.pfx.add(p0), p1 - p0),
                     std::slice::from_raw_parts(b.path.add(a0) as *const u8, 4 * (a1 - a0)),
                     std::slice::from_raw_parts(b.raw.add(r0), r1 - r0)];
        let flags = (if path_valid { PATH_VALID } else { 0 }) | (if *b.has_set.add(i) != 0 { HAS_SET } else { 0 })
            | (if raw_valid { RAW_VALID } else { 0 }) | (if *b.origin_valid.add(i) != 0 { ORIGIN_VALID } else { 0 });
        Ok(Some((Row { asn, afi: *b.afi.add(i), flags, lens: lens.map(|l| l as u32) }, parts)))
    }

    /// Fold a batch in; `cursor` is the route the previous batch of the same input ended on
    /// (returned: usize::MAX for none). Errors name what is wrong (an oversized key, a bit
    /// past the words).
    ///
    /// # Safety
    /// Every pointer of `b` is valid for `b.n` rows (offsets for `b.n + 1`).
    pub(crate) unsafe fn add(&mut self, b: &Batch, cursor: usize) -> Result<usize, String> {
        self.last = cursor;
        let entries = b.copy.is_null();
        for i in 0..b.n {
            // while entries go through the table (a collector's first dump: its routes are new),
            // each one's slot is a cache miss: ask for the slot of the row AHEAD rows on first
            // (its hash twice). Its errors are said when its turn comes.
            if self.missed && i + AHEAD < b.n {
                if let Ok(Some((k, parts))) = self.row(b, i + AHEAD) {
                    prefetch(self.table.as_ptr().wrapping_add((key_hash(&k, &parts) as usize) & (self.table.len() - 1)));
                }
            }
            let Some((k, parts)) = self.row(b, i)? else { continue };
            let origin_valid = k.flags & ORIGIN_VALID != 0;
            let r = self.find(&k, &parts, if origin_valid { *b.origin.add(i) } else { 0 });
            if entries {
                let sid = *b.sid.add(i);
                if sid < 0 || sid as usize >= self.nw * WORD {
                    return Err(format!("snapshot {sid} is outside the {} words of bits", self.nw));
                }
                let (w, bit) = (sid as usize / WORD, 1u64 << (sid as usize % WORD));
                let mut r = r;
                while self.bits[r * self.nw + w] & bit != 0 {  // a copy in this snapshot: the next copy
                    if self.r[r].copy == i16::MAX {
                        return Err(format!("more than {} identical entries of one route in snapshot {sid}", i16::MAX));
                    }
                    let j = self.r[r].copy + 1;
                    r = self.copy_of(r, j);
                }
                self.bits[r * self.nw + w] |= bit;
            } else {
                let r = self.copy_of(r, *b.copy.add(i));
                for k in 0..b.words_in {
                    let mut word = *b.words.add(i * b.words_in + k);
                    if self.ident {
                        while word != 0 {
                            let o = k * WORD + word.trailing_zeros() as usize;
                            word &= word - 1;
                            if self.map.get(o).is_some_and(|&n| n >= 0) && o < self.nw * WORD {
                                self.bits[r * self.nw + o / WORD] |= 1 << (o % WORD);
                            }
                        }
                        continue;
                    }
                    while word != 0 {
                        let o = k * WORD + word.trailing_zeros() as usize;
                        word &= word - 1;
                        if let Some(&n) = self.map.get(o) {
                            if n >= 0 && (n as usize) < self.nw * WORD {
                                self.bits[r * self.nw + n as usize / WORD] |= 1 << (n as usize % WORD);
                            }
                        }
                    }
                }
            }
        }
        Ok(self.last)
    }

    /// Sort the routes with any bit into output order: bucket, session, family, peer address,
    /// prefix (a compare partition reads only its buckets' row groups; a session's prefixes
    /// together), then the path and copy, so the output is the same whatever the input order.
    pub(crate) fn finish(&mut self) {
        let nw = self.nw;
        let field = |r: &Route, k: usize| -> &[u8] {
            let l = r.lens;
            let at = r.key_at as usize;
            let (s, n) = match k {
                0 => (0, l[0] as usize),
                1 => (l[0] as usize, l[1] as usize),
                2 => (l[0] as usize + l[1] as usize, 4 * l[2] as usize),
                _ => (l[0] as usize + l[1] as usize + 4 * l[2] as usize, l[3] as usize),
            };
            &self.arena[at + s..at + s + n]
        };
        // the leading bytes of the address and prefix as big-endian integers (zero-padded:
        // text has no NUL, so they order as the bytes do); ties fall back to the whole key
        let lead = |b: &[u8]| -> u128 {
            let mut t = [0u8; 16];
            let n = b.len().min(16);
            t[..n].copy_from_slice(&b[..n]);
            u128::from_be_bytes(t)
        };
        let mut order: Vec<(u64, u64, u128, u32)> = self.r.iter().enumerate()
            .filter(|&(id, _)| self.bits[id * nw..(id + 1) * nw].iter().any(|&w| w != 0))
            .map(|(id, r)| (((self.bucket(r.peer_asn) as u8 as u64) << 40) | ((r.peer_asn as u64) << 8) | (r.afi as u8 as u64),
                            (lead(field(r, 0)) >> 64) as u64, lead(field(r, 1)), id as u32))
            .collect();
        self.order = sort_in_two(&mut order, |&(ka, ia, pa, a), &(kb, ib, pb, b)| {
            (ka, ia, pa).cmp(&(kb, ib, pb)).then_with(|| {
                let (a, b) = (&self.r[a as usize], &self.r[b as usize]);
                field(a, 0).cmp(field(b, 0))
                    .then_with(|| field(a, 1).cmp(field(b, 1)))
                    .then_with(|| (a.flags & PATH_VALID).cmp(&(b.flags & PATH_VALID)))
                    .then_with(|| asns(field(a, 2)).cmp(asns(field(b, 2))))
                    .then_with(|| field(a, 3).cmp(field(b, 3)))
                    .then_with(|| (a.flags & (HAS_SET | RAW_VALID)).cmp(&(b.flags & (HAS_SET | RAW_VALID))))
                    .then_with(|| a.copy.cmp(&b.copy))
            })
        }, |&(_, _, _, id)| id);
        self.pos = 0;
    }

    /// The next `n` routes of the output order, as column buffers (`Out`); empty at the end.
    pub(crate) fn take(&mut self, n: usize) -> Out {
        let end = (self.pos + n).min(self.order.len());
        let ids = &self.order[self.pos..end];
        self.pos = end;
        let n = ids.len();
        let (mut ip, mut pfx, mut path, mut raw) = (0, 0, 0, 0);
        for &r in ids {
            let l = self.r[r as usize].lens;
            (ip, pfx, path, raw) = (ip + l[0] as usize, pfx + l[1] as usize, path + l[2] as usize, raw + l[3] as usize);
        }
        let mut o = Out {
            n,
            peer_asn: Vec::with_capacity(n),
            ip_off: Vec::with_capacity(n + 1),
            ip: Vec::with_capacity(ip),
            afi: Vec::with_capacity(n),
            pfx_off: Vec::with_capacity(n + 1),
            pfx: Vec::with_capacity(pfx),
            path_off: Vec::with_capacity(n + 1),
            path: Vec::with_capacity(path),
            path_valid: Vec::with_capacity(n),
            repeats: Vec::with_capacity(n),
            has_set: Vec::with_capacity(n),
            raw_off: Vec::with_capacity(n + 1),
            raw: Vec::with_capacity(raw),
            raw_valid: Vec::with_capacity(n),
            origin: Vec::with_capacity(n),
            origin_valid: Vec::with_capacity(n),
            copy: Vec::with_capacity(n),
            words: Vec::with_capacity(n * self.nw),
            bucket: Vec::with_capacity(n),
        };
        o.ip_off.push(0);
        o.pfx_off.push(0);
        o.path_off.push(0);
        o.raw_off.push(0);
        for (j, &r) in ids.iter().enumerate() {
            // the routes come in sorted order, scattered over what add made: ask for the
            // route AHEAD rows on, and for the key and bits of the one AHEAD/2 on (its route
            // asked for earlier), so each row's reads wait on no miss of their own
            if let Some(&a) = ids.get(j + AHEAD) {
                prefetch(self.r.as_ptr().wrapping_add(a as usize));
            }
            if let Some(&a) = ids.get(j + AHEAD / 2) {
                let a = a as usize;
                prefetch(self.arena.as_ptr().wrapping_add(self.r[a].key_at as usize));
                prefetch(self.bits.as_ptr().wrapping_add(a * self.nw));
            }
            let id = r as usize;
            let r = &self.r[id];
            let l = r.lens;
            let k = r.key_at as usize;
            let (a, b, c) = (k + l[0] as usize, k + l[0] as usize + l[1] as usize,
                             k + l[0] as usize + l[1] as usize + 4 * l[2] as usize);
            let f = r.flags;
            o.peer_asn.push(r.peer_asn);
            o.ip.extend_from_slice(&self.arena[k..a]);
            o.ip_off.push(o.ip.len() as i32);
            o.afi.push(r.afi);
            o.pfx.extend_from_slice(&self.arena[a..b]);
            o.pfx_off.push(o.pfx.len() as i32);
            let from = o.path.len();
            o.path.extend(self.arena[b..c].chunks_exact(4).map(|x| u32::from_le_bytes(x.try_into().unwrap())));
            o.path_off.push(o.path.len() as i32);
            o.repeats.push(repeats(&o.path[from..]) as u8);
            o.path_valid.push((f & PATH_VALID != 0) as u8);
            o.has_set.push((f & HAS_SET != 0) as u8);
            o.raw.extend_from_slice(&self.arena[c..c + l[3] as usize]);
            o.raw_off.push(o.raw.len() as i32);
            o.raw_valid.push((f & RAW_VALID != 0) as u8);
            // stored only where the path cannot give it back (a path with a set): a plain
            // path's origin is its last ASN, which readers take (common/routes.origin_sql);
            // 13% of a generation's bytes at scale 50
            let stored = f & ORIGIN_VALID != 0 && f & PATH_VALID == 0;
            o.origin.push(if stored { r.origin } else { 0 });
            o.origin_valid.push(stored as u8);
            o.copy.push(r.copy);
            o.words.extend_from_slice(&self.bits[id * self.nw..(id + 1) * self.nw]);
            o.bucket.push(self.bucket(r.peer_asn));
        }
        o
    }
}

#[derive(Default)]
pub(crate) struct Out {
    pub n: usize,
    pub peer_asn: Vec<u32>,
    pub ip_off: Vec<i32>,
    pub ip: Vec<u8>,
    pub afi: Vec<i8>,
    pub pfx_off: Vec<i32>,
    pub pfx: Vec<u8>,
    pub path_off: Vec<i32>,
    pub path: Vec<u32>,
    pub path_valid: Vec<u8>,
    /// 1 where the path holds an ASN twice (prepending or a loop): the compare cleans only
    /// those paths (common/tables.ROUTES `as_path_repeats`).
    pub repeats: Vec<u8>,
    pub has_set: Vec<u8>,
    pub raw_off: Vec<i32>,
    pub raw: Vec<u8>,
    pub raw_valid: Vec<u8>,
    pub origin: Vec<u32>,
    pub origin_valid: Vec<u8>,
    pub copy: Vec<i16>,
    pub words: Vec<u64>,
    pub bucket: Vec<i8>,
}

/// `v` sorted by `cmp` (a total order), as `out` of each element: its halves sorted on two
/// threads, then merged straight into the output (no second copy of `v`: the merge's memory
/// budget counts the sort's elements once, ingest/routes.py SORT_BYTES). The sort is most of
/// a merge's `finish`, and a run merging one collector leaves the second core idle.
fn sort_in_two<T: Send, U, F: Fn(&T, &T) -> std::cmp::Ordering + Sync>(v: &mut [T], cmp: F, out: impl Fn(&T) -> U)
                                                                        -> Vec<U> {
    if v.len() < 1 << 16 {
        v.sort_unstable_by(&cmp);
        return v.iter().map(out).collect();
    }
    let half = v.len() / 2;
    let (a, b) = v.split_at_mut(half);
    std::thread::scope(|s| {
        s.spawn(|| a.sort_unstable_by(&cmp));
        b.sort_unstable_by(&cmp);
    });
    let (a, b) = (&v[..half], &v[half..]);
    let mut got = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if cmp(&b[j], &a[i]) == std::cmp::Ordering::Less {
            got.push(out(&b[j]));
            j += 1;
        } else {
            got.push(out(&a[i]));
            i += 1;
        }
    }
    got.extend(a[i..].iter().map(&out));
    got.extend(b[j..].iter().map(&out));
    got
}

/// Rows ahead that the merger asks memory for: `add` a table slot, `take` a route (and its
/// key and bits half as far ahead, the route's own line having come by then).
const AHEAD: usize = 16;

/// Ask for the cache line at `x` (a hint: it reads nothing, cannot fault, and changes no
/// result; an address past a buffer's end, as an empty key's, is harmless).
#[inline(always)]
fn prefetch<T>(x: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache, at any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(x as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Whether an ASN occurs twice on the path: pairwise for a path of up to 32 ASes (nearly
/// all), else on a sorted copy.
pub(crate) fn repeats(p: &[u32]) -> bool {
    if p.len() <= 32 {
        return (1..p.len()).any(|i| p[..i].contains(&p[i]));
    }
    let mut s = p.to_vec();
    s.sort_unstable();
    s.windows(2).any(|w| w[0] == w[1])
}

/// The ASNs of a path's key bytes.
fn asns(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_finds_any_asn_twice() {
        assert!(!repeats(&[]) && !repeats(&[7]) && !repeats(&[1, 2, 3]));
        assert!(repeats(&[1, 2, 2, 3]) && repeats(&[1, 2, 3, 1]) && repeats(&[5, 5]));
        let long: Vec<u32> = (1..=40).collect();
        assert!(!repeats(&long));
        let mut looped = long.clone();
        looped.push(3);
        assert!(repeats(&looped));
    }

    struct Rows {
        asn: Vec<u32>,
        ip: Vec<&'static str>,
        pfx: Vec<&'static str>,
        path: Vec<Option<Vec<u32>>>,
        raw: Vec<Option<&'static str>>,
        sid: Vec<i32>,
    }

    fn add(m: &mut Merger, r: &Rows) {
        try_add(m, r).unwrap();
    }

    fn try_add(m: &mut Merger, r: &Rows) -> Result<usize, String> {
        let n = r.asn.len();
        let strs = |v: &[&str]| {
            let mut off = vec![0i32];
            let mut d = vec![];
            for s in v {
                d.extend_from_slice(s.as_bytes());
                off.push(d.len() as i32);
            }
            (off, d)
        };
        let (ioff, ip) = strs(&r.ip);
        let (poff, pfx) = strs(&r.pfx);
        let raws: Vec<&str> = r.raw.iter().map(|x| x.unwrap_or("")).collect();
        let (roff, raw) = strs(&raws);
        let mut aoff = vec![0i32];
        let mut path = vec![];
        for p in &r.path {
            path.extend(p.clone().unwrap_or_default());
            aoff.push(path.len() as i32);
        }
        let pv: Vec<u8> = r.path.iter().map(|p| p.is_some() as u8).collect();
        let rv: Vec<u8> = r.raw.iter().map(|p| p.is_some() as u8).collect();
        let afi = vec![4i8; n];
        // every row's origin given: a plain path's last ASN, 42 for a path with a set
        let origin: Vec<u32> = r.path.iter().map(|p| p.as_ref().map_or(42, |p| *p.last().unwrap_or(&0))).collect();
        let ov = vec![1u8; n];
        let b = Batch {
            n, peer_asn: r.asn.as_ptr(), ip_off: ioff.as_ptr(), ip: ip.as_ptr(), afi: afi.as_ptr(),
            pfx_off: poff.as_ptr(), pfx: pfx.as_ptr(), path_valid: pv.as_ptr(), path_off: aoff.as_ptr(),
            path: path.as_ptr(), has_set: rv.as_ptr(), raw_valid: rv.as_ptr(), raw_off: roff.as_ptr(),
            raw: raw.as_ptr(), origin_valid: ov.as_ptr(), origin: origin.as_ptr(), sid: r.sid.as_ptr(),
            copy: std::ptr::null(), words: std::ptr::null(), words_in: 0,
        };
        unsafe { m.add(&b, usize::MAX) }
    }

    #[test]
    fn one_route_per_key_with_its_snapshots_and_copies() {
        let mut m = Merger::new(2, 2654435761, 5, 0, 31);
        add(&mut m, &Rows {
            asn: vec![1, 1, 1, 1, 1, 2, 1],
            ip: vec!["a", "a", "a", "a", "a", "a", "a"],
            pfx: vec!["p", "p", "p", "q", "p", "p", "p"],
            path: vec![Some(vec![1, 2]), Some(vec![1, 2]), Some(vec![1, 2]), Some(vec![1, 2]), Some(vec![1, 3]), Some(vec![1, 2]), None],
            raw: vec![None, None, None, None, None, None, Some("1 {2,3}")],
            sid: vec![0, 70, 0, 0, 0, 0, 0],
        });
        m.finish();
        let o = m.take(100);
        // (1, a, p, [1 2]) in snapshots 0 (twice) and 70; copy 1 holds the second of snapshot 0
        let rows: Vec<(u32, i16, Vec<u64>, usize)> = (0..o.n).map(|i| (o.peer_asn[i], o.copy[i], o.words[2 * i..2 * i + 2].to_vec(),
                                                                        (o.path_off[i + 1] - o.path_off[i]) as usize)).collect();
        assert_eq!(o.n, 6);
        assert!(rows.contains(&(1, 0, vec![1, 1 << 7], 2)));
        assert!(rows.contains(&(1, 1, vec![1, 0], 2)));
        assert_eq!(rows.iter().filter(|r| r.0 == 1).count(), 5);
        assert!(rows.contains(&(2, 0, vec![1, 0], 2)));
        assert!(m.take(100).n == 0);
    }

    #[test]
    fn only_a_set_paths_origin_is_stored() {
        let mut m = Merger::new(1, 2654435761, 5, 0, 31);
        add(&mut m, &Rows { asn: vec![1, 1], ip: vec!["a"; 2], pfx: vec!["p", "q"], path: vec![Some(vec![1, 9]), None],
                            raw: vec![None, Some("1 {2,3}")], sid: vec![0, 0] });
        m.finish();
        let o = m.take(10);
        assert_eq!(o.n, 2);
        // p's origin is its path's last ASN, which readers take; q's path has a set
        assert_eq!((o.origin_valid.clone(), o.origin.clone()), (vec![0, 1], vec![0, 42]));
    }

    #[test]
    fn the_table_grows_and_keeps_every_route() {
        let mut m = Merger::new(1, 2654435761, 5, 0, 31);
        let names: Vec<&'static str> = (0..100_000).map(|i| &*Box::leak(format!("10.{}.{}.0/24", i / 256, i % 256).into_boxed_str())).collect();
        let n = names.len();
        add(&mut m, &Rows { asn: vec![7; n], ip: vec!["x"; n], pfx: names.clone(), path: vec![Some(vec![7]); n], raw: vec![None; n], sid: vec![0; n] });
        add(&mut m, &Rows { asn: vec![7; n], ip: vec!["x"; n], pfx: names, path: vec![Some(vec![7]); n], raw: vec![None; n], sid: vec![1; n] });
        assert_eq!(m.routes(), n);
        m.finish();
        let o = m.take(usize::MAX);
        assert_eq!(o.n, n);
        assert!(o.words.iter().all(|&w| w == 3));
    }

    #[test]
    fn too_many_copies_of_one_entry_are_an_error_not_a_wrapped_count() {
        let mut m = Merger::new(1, 2654435761, 5, 0, 31);
        let n = i16::MAX as usize + 2;
        let e = try_add(&mut m, &Rows { asn: vec![1; n], ip: vec!["a"; n], pfx: vec!["p"; n], path: vec![Some(vec![1]); n],
                                        raw: vec![None; n], sid: vec![0; n] }).unwrap_err();
        assert!(e.contains("identical entries"), "{e}");
    }

    #[test]
    fn sorting_in_two_halves_equals_one_sort() {
        // past the size sorted on one thread, with many ties on the leading field
        let mut x: u64 = 1;
        let v: Vec<(u32, u32)> = (0..200_001).map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 60) as u32, i)
        }).collect();
        let (mut a, mut b) = (v.clone(), v);
        a.sort_unstable();
        let b = sort_in_two(&mut b, |p, q| p.cmp(q), |&x| x);
        assert_eq!(a, b);
    }

    #[test]
    fn many_routes_come_out_in_order_each_whole() {
        // enough routes that `take` prefetches; one with an empty key (its key at the arena's end)
        let mut m = Merger::new(1, 2654435761, 5, 0, 31);
        let n = 5_000;
        let names: Vec<&'static str> = (0..n).map(|i| &*Box::leak(format!("10.{}.{}.0/24", i % 256, i / 256).into_boxed_str())).collect();
        let asn: Vec<u32> = (0..n as u32).map(|i| i % 7).collect();
        add(&mut m, &Rows { asn: asn.clone(), ip: vec!["x"; n], pfx: names.clone(), path: (0..n as u32).map(|i| Some(vec![i % 7, i])).collect(),
                            raw: vec![None; n], sid: vec![0; n] });
        add(&mut m, &Rows { asn: vec![3], ip: vec![""], pfx: vec![""], path: vec![None], raw: vec![None], sid: vec![0] });
        m.finish();
        let o = m.take(usize::MAX);
        assert_eq!(o.n, n + 1);
        let mut got: Vec<(u32, String, u32)> = vec![];
        for i in 0..o.n {
            let p = String::from_utf8(o.pfx[o.pfx_off[i] as usize..o.pfx_off[i + 1] as usize].to_vec()).unwrap();
            let path = &o.path[o.path_off[i] as usize..o.path_off[i + 1] as usize];
            got.push((o.peer_asn[i], p, path.last().copied().unwrap_or(u32::MAX)));
        }
        let mut want: Vec<(u32, String, u32)> = (0..n).map(|i| (asn[i], names[i].to_string(), i as u32)).collect();
        want.push((3, String::new(), u32::MAX));
        // output order: bucket, then session, then prefix
        want.sort_by_key(|(a, p, _)| (m.bucket(*a), *a, p.clone()));
        assert_eq!(got, want);
    }

    #[test]
    fn renumbering_moves_and_drops_bits() {
        let mut m = Merger::new(1, 2654435761, 5, 0, 31);
        add(&mut m, &Rows { asn: vec![1, 1, 1], ip: vec!["a"; 3], pfx: vec!["p", "q", "r"], path: vec![Some(vec![1]); 3],
                            raw: vec![None; 3], sid: vec![0, 1, 2] });
        m.renumber(2, &[64, -1, 3]);  // 0 -> word 1, 1 dropped, 2 -> 3
        m.finish();
        let o = m.take(10);
        assert_eq!(o.n, 2);  // the route only dump 1 saw is gone
        assert_eq!(o.words, vec![0, 2, 1 << 3, 0]);
    }
}
