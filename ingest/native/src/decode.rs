//! Framing and decoding: every record checked as ingest/framing.py checks it, RIB entries
//! decoded into the columns.

use crate::*;
use std::collections::BTreeMap;


#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) records: u64,
    pub(crate) entries4: u64,
    pub(crate) entries6: u64,
    pub(crate) skipped: BTreeMap<String, u64>,
    pub(crate) first_timestamp: Option<u32>,
    pub(crate) uncompressed_bytes: u64,
}

pub(crate) struct Peer {
    pub(crate) asn: u32,
    pub(crate) ip: Vec<u8>, // text
}

#[derive(Clone, Copy)]
pub(crate) struct Seg {
    pub(crate) typ: u8,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

pub(crate) struct Decoder {
    pub(crate) peers: Option<Vec<Peer>>,
    pub(crate) cols: Cols,
    pub(crate) stats: Stats,
    pub(crate) batch_rows: usize,
    pub(crate) segs: Vec<Seg>,
    pub(crate) asns: Vec<u32>,
    pub(crate) segs4: Vec<Seg>,
    pub(crate) text: Vec<u8>,
}

pub(crate) fn be16(b: &[u8], i: usize) -> Option<u16> {
    b.get(i..i + 2).map(|s| u16::from_be_bytes([s[0], s[1]]))
}
pub(crate) fn be32(b: &[u8], i: usize) -> Option<u32> {
    b.get(i..i + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

pub(crate) fn v2_rib(sub: u16) -> Option<(i8, bool)> {
    match sub {
        2 => Some((4, false)),
        4 => Some((6, false)),
        8 => Some((4, true)),
        10 => Some((6, true)),
        _ => None,
    }
}

pub(crate) fn v2_skipped(sub: u16) -> String {
    match sub {
        3 => "rib_ipv4_multicast".into(),
        5 => "rib_ipv6_multicast".into(),
        6 => "rib_generic".into(),
        9 => "rib_ipv4_multicast_addpath".into(),
        11 => "rib_ipv6_multicast_addpath".into(),
        12 => "rib_generic_addpath".into(),
        s => format!("table_dump_v2_subtype_{s}"),
    }
}

/// Parse AS path segments of `data` (ASNs of `w` bytes) onto `segs`/`asns`.
pub(crate) fn parse_segments(data: &[u8], w: usize, segs: &mut Vec<Seg>, asns: &mut Vec<u32>) -> Option<()> {
    let mut r = 0;
    while r < data.len() {
        let typ = *data.get(r)?;
        let cnt = *data.get(r + 1)? as usize;
        r += 2;
        if !(1..=4).contains(&typ) {
            return None;
        }
        let body = data.get(r..r + cnt * w)?;
        let start = asns.len();
        if w == 4 {
            asns.extend(body.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])));
        } else {
            asns.extend(body.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32));
        }
        segs.push(Seg { typ, start, len: cnt });
        r += cnt * w;
    }
    Some(())
}

/// bgpdump's hop count: sequences count their ASNs, sets count one.
pub(crate) fn hop_count(segs: &[Seg]) -> usize {
    segs.iter().map(|s| if s.typ == 1 || s.typ == 4 { 1 } else { s.len }).sum()
}

pub(crate) fn delim(typ: u8, start: bool) -> u8 {
    match (typ, start) {
        (1, true) => b'{',
        (1, false) => b'}',
        (4, true) => b'[',
        (4, false) => b']',
        (3, true) => b'(',
        (3, false) => b')',
        _ => b' ',
    }
}

/// The AS path text exactly as `bgpdump -m` prints it (its quirks included).
pub(crate) fn bgpdump_text(segs: &[Seg], asns: &[u32], out: &mut Vec<u8>) {
    out.clear();
    let mut space = false;
    let mut prev = 2u8;
    for s in segs {
        if prev != 2 {
            out.push(delim(prev, false));
        }
        if space {
            out.push(b' ');
        }
        if s.typ != 2 {
            out.push(delim(s.typ, true));
        }
        space = false;
        for a in &asns[s.start..s.start + s.len] {
            if space {
                out.push(if s.typ == 1 || s.typ == 4 { b',' } else { b' ' });
            } else {
                space = true;
            }
            push_u32(out, *a);
        }
        prev = s.typ;
    }
    if let Some(s) = segs.last() {
        if s.typ != 2 {
            out.push(delim(s.typ, false));
        }
    }
}

impl Decoder {
    pub(crate) fn new(batch_rows: usize) -> Decoder {
        Decoder {
            peers: None,
            cols: Cols::new(batch_rows),
            stats: Stats::default(),
            batch_rows,
            segs: Vec::new(),
            asns: Vec::new(),
            segs4: Vec::new(),
            text: Vec::new(),
        }
    }

    pub(crate) fn take_batch(&mut self) -> Cols {
        std::mem::replace(&mut self.cols, Cols::new(self.batch_rows))
    }

    pub(crate) fn record(&mut self, rtype: u16, sub: u16, body: &[u8]) -> R<()> {
        let recno = self.stats.records + 1;
        if rtype == TABLE_DUMP_V2 {
            if sub == 1 {
                self.peer_index(body).ok_or_else(|| Error::Mrt(format!("malformed PEER_INDEX_TABLE (record #{recno})")))?;
            } else if let Some((afi, addpath)) = v2_rib(sub) {
                if self.peers.is_none() {
                    return Err(Error::Mrt(format!("RIB record #{recno} comes before any PEER_INDEX_TABLE")));
                }
                self.rib_v2(body, afi, addpath).map_err(|why| Error::Mrt(format!("malformed RIB record #{recno} ({why})")))?;
            } else {
                *self.stats.skipped.entry(v2_skipped(sub)).or_default() += 1;
            }
        } else if rtype == TABLE_DUMP {
            if sub == 1 || sub == 2 {
                self.rib_v1(body, if sub == 1 { 4 } else { 6 })
                    .map_err(|why| Error::Mrt(format!("malformed RIB record #{recno} ({why})")))?;
            } else {
                *self.stats.skipped.entry(format!("table_dump_subtype_{sub}")).or_default() += 1;
            }
        } else {
            *self.stats.skipped.entry(format!("mrt_type_{rtype}")).or_default() += 1;
        }
        Ok(())
    }

    pub(crate) fn peer_index(&mut self, b: &[u8]) -> Option<()> {
        let name_len = be16(b, 4)? as usize;
        let mut p = 6 + name_len;
        let count = be16(b, p)? as usize;
        p += 2;
        let mut peers = Vec::with_capacity(count.min(b.len() / 9 + 1));
        for _ in 0..count {
            let typ = *b.get(p)?;
            p += 5; // type + BGP ID
            let v6 = typ & 1 != 0;
            let alen = if v6 { 16 } else { 4 };
            let addr = b.get(p..p + alen)?;
            p += alen;
            let asn = if typ & 2 != 0 {
                let a = be32(b, p)?;
                p += 4;
                a
            } else {
                let a = be16(b, p)? as u32;
                p += 2;
                a
            };
            let mut ip = Vec::with_capacity(40);
            push_ip(&mut ip, addr, v6);
            peers.push(Peer { asn, ip });
        }
        self.peers = Some(peers);
        Some(())
    }

    pub(crate) fn rib_v2(&mut self, b: &[u8], afi: i8, addpath: bool) -> Why<()> {
        let plen = *b.get(4).ok_or("too short")? as usize;
        let max = if afi == 4 { 32 } else { 128 };
        let nbytes = plen.div_ceil(8);
        let off = 5 + nbytes;
        if plen > max {
            return Err(format!("prefix length {plen}"));
        }
        let count = be16(b, off).ok_or("too short")? as u64;
        if afi == 4 {
            self.stats.entries4 += count;
        } else {
            self.stats.entries6 += count;
        }
        let mut addr = [0u8; 16];
        addr[..nbytes].copy_from_slice(&b[5..5 + nbytes]);
        let mut prefix = Vec::with_capacity(48);
        push_ip(&mut prefix, &addr, afi == 6);
        prefix.push(b'/');
        push_u32(&mut prefix, plen as u32);
        let peers = self.peers.take().unwrap_or_default();
        let r = self.entries_v2(b, afi, addpath, count, off + 2, &prefix, &peers);
        self.peers = Some(peers);
        r
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn entries_v2(&mut self, b: &[u8], afi: i8, addpath: bool, count: u64, mut p: usize, prefix: &[u8], peers: &[Peer]) -> Why<()> {
        for i in 0..count {
            let idx = be16(b, p).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))? as usize;
            p += 6 + if addpath { 4 } else { 0 };
            let alen = be16(b, p).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))? as usize;
            p += 2;
            let attrs = b.get(p..p + alen).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))?;
            p += alen;
            let peer = peers.get(idx).ok_or_else(|| format!("peer index {idx} not in the PEER_INDEX_TABLE"))?;
            self.push_entry(peer.asn, &peer.ip, afi, prefix, attrs, 4)?;
        }
        if p != b.len() {
            return Err(format!("{} bytes after its {count} entries", b.len() - p));
        }
        Ok(())
    }

    pub(crate) fn rib_v1(&mut self, b: &[u8], afi: i8) -> Why<()> {
        let alen = if afi == 4 { 4 } else { 16 };
        if afi == 4 {
            self.stats.entries4 += 1;
        } else {
            self.stats.entries6 += 1;
        }
        let short = || "too short".to_string();
        let addr = b.get(4..4 + alen).ok_or_else(short)?;
        let plen = *b.get(4 + alen).ok_or_else(short)? as usize;
        if plen > alen * 8 {
            return Err(format!("prefix length {plen}"));
        }
        let p = 4 + alen + 6;
        let peer_addr = b.get(p..p + alen).ok_or_else(short)?;
        let peer_asn = be16(b, p + alen).ok_or_else(short)? as u32;
        let attr_len = be16(b, p + alen + 2).ok_or_else(short)? as usize;
        let a0 = p + alen + 4;
        let attrs = b.get(a0..a0 + attr_len).ok_or_else(short)?;
        if a0 + attr_len != b.len() {
            return Err(format!("{} bytes after its entry", b.len() - a0 - attr_len));
        }
        let mut prefix = Vec::with_capacity(48);
        push_ip(&mut prefix, addr, afi == 6);
        prefix.push(b'/');
        push_u32(&mut prefix, plen as u32);
        let mut ip = Vec::with_capacity(40);
        push_ip(&mut ip, peer_addr, afi == 6);
        self.push_entry(peer_asn, &ip, afi, &prefix, attrs, 2)
    }

    /// One RIB entry: find AS_PATH (and AS4_PATH on 2-byte sessions) and append a row.
    pub(crate) fn push_entry(&mut self, peer_asn: u32, ip: &[u8], afi: i8, prefix: &[u8], attrs: &[u8], w: usize) -> Why<()> {
        let (mut aspath, mut as4): (Option<&[u8]>, Option<&[u8]>) = (None, None);
        let mut q = 0;
        while q < attrs.len() {
            let flags = attrs[q];
            let typ = *attrs.get(q + 1).ok_or("attribute header cut off")?;
            let (len, hl) = if flags & 0x10 != 0 {
                (be16(attrs, q + 2).ok_or("attribute header cut off")? as usize, 4)
            } else {
                (*attrs.get(q + 2).ok_or("attribute header cut off")? as usize, 3)
            };
            let data = attrs.get(q + hl..q + hl + len).ok_or("attribute runs past its entry")?;
            let slot = match typ {
                2 => &mut aspath,
                17 => &mut as4,
                _ => {
                    q += hl + len;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(format!("attribute {typ} twice"));
            }
            *slot = Some(data);
            q += hl + len;
        }
        self.segs.clear();
        self.asns.clear();
        if let Some(d) = aspath {
            parse_segments(d, w, &mut self.segs, &mut self.asns).ok_or("bad AS_PATH")?;
        }
        if let (Some(d), true, true) = (as4, w == 2, aspath.is_some()) {
            self.merge_as4(d)?;
        }
        let c = &mut self.cols;
        c.n += 1;
        c.peer_asn.push(peer_asn);
        c.peer_ip.extend_from_slice(ip);
        c.peer_ip_off.push(c.peer_ip.len() as i32);
        c.afi.push(afi);
        c.prefix.extend_from_slice(prefix);
        c.prefix_off.push(c.prefix.len() as i32);
        let plain = self.segs.iter().all(|s| s.typ == 2 && s.len > 0);
        if plain {
            // segment by segment: after an AS4_PATH merge, `asns` also holds the AS_TRANS
            // hops the merge replaced, which no segment refers to any more
            for sg in &self.segs {
                c.path_vals.extend_from_slice(&self.asns[sg.start..sg.start + sg.len]);
            }
            self.emit_plain();
            return Ok(());
        }
        bgpdump_text(&self.segs, &self.asns, &mut self.text);
        if self.text.iter().any(|b| matches!(b, b'{' | b'(' | b'[')) {
            let c = &mut self.cols;
            c.path_off.push(c.path_vals.len() as i32);
            c.path_valid.push(0);
            c.has_set.push(1);
            c.raw.extend_from_slice(&self.text);
            c.raw_off.push(c.raw.len() as i32);
            let last = self.text.split(|b| b.is_ascii_whitespace()).rfind(|t| !t.is_empty());
            match last.filter(|t| t.iter().all(u8::is_ascii_digit)).and_then(|t| std::str::from_utf8(t).ok()?.parse::<u32>().ok()) {
                Some(o) => {
                    c.origin.push(o);
                    c.origin_valid.push(1);
                }
                None => {
                    c.origin.push(0);
                    c.origin_valid.push(0);
                }
            }
            return Ok(());
        }
        // Only empty sequences make this text differ from the ASN list: read it as bgpdump's
        // text is read (tokens split on spaces).
        let text = std::mem::take(&mut self.text);
        for t in text.split(|b| *b == b' ').filter(|t| !t.is_empty()) {
            let v = std::str::from_utf8(t).ok().and_then(|s| s.parse::<u32>().ok()).ok_or("AS path text overflows")?;
            self.cols.path_vals.push(v);
        }
        self.text = text;
        self.emit_plain();
        Ok(())
    }

    /// Close a row whose path is the plain ASN list just appended (origin = last ASN).
    pub(crate) fn emit_plain(&mut self) {
        let c = &mut self.cols;
        let start = *c.path_off.last().unwrap() as usize;
        let end = c.path_vals.len();
        c.path_off.push(end as i32);
        c.path_valid.push(1);
        c.has_set.push(0);
        c.raw_off.push(c.raw.len() as i32);
        if end > start {
            c.origin.push(c.path_vals[end - 1]);
            c.origin_valid.push(1);
        } else {
            c.origin.push(0);
            c.origin_valid.push(0);
        }
    }

    /// RFC 6793 merge as bgpdump does it: keep AS_PATH's leading hops beyond AS4_PATH's count.
    pub(crate) fn merge_as4(&mut self, d: &[u8]) -> Why<()> {
        self.segs4.clear();
        let base = self.asns.len();
        let mut segs4 = std::mem::take(&mut self.segs4);
        parse_segments(d, 4, &mut segs4, &mut self.asns).ok_or("bad AS4_PATH")?;
        let (n_old, n_new) = (hop_count(&self.segs), hop_count(&segs4));
        if n_old < n_new {
            self.asns.truncate(base);
            self.segs4 = segs4;
            return Ok(());
        }
        let want = n_old - n_new;
        let mut merged = Vec::with_capacity(self.segs.len() + segs4.len());
        let mut have = 0;
        for s in &self.segs {
            if have >= want {
                break;
            }
            let mut s = *s;
            if s.typ == 1 || s.typ == 4 {
                have += 1;
            } else {
                have += s.len;
                if have > want {
                    s.len -= have - want;
                }
            }
            merged.push(s);
        }
        merged.extend_from_slice(&segs4);
        self.segs = merged;
        self.segs4 = segs4;
        Ok(())
    }
}
